// Package load is the load pipeline shared by `llmchaos load` and the
// experiment runner (`llmchaos run`): from a checked configuration it
// builds the workload, sizes the client's connection pool for the load
// shape, builds the client, the recorder, the live observers (Prometheus
// endpoint, remote write, tracing, server monitor) and the engine, runs
// the load with the caller's companions alongside (live checks, progress,
// a fault timeline), and hands back what a report is built from.
//
// It holds no flags and no experiment: `cmd/llmchaos` turns flags into a
// Config, the runner turns a spec into one. It imports the engine, the
// observers and the report; nothing it imports imports it.
//
//	l, err := load.Run(ctx, cfg)
//	doc, err := l.Document(meta) // report.Build plus the server series
package load
