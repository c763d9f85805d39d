// Package report turns a recorded run (llm.Summary) into its documents and
// reads them back. It owns the JSON run report (schema in SCHEMA.md:
// versioned, fields only ever added), its reader, which restores the HDR
// histograms and the time series so that saved runs can be merged, queried
// and compared, and the redaction of secrets from the configuration that a
// report records. It imports the load engine (package llm); the engine never
// imports it.
package report
