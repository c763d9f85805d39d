// Package promexpo is the small Prometheus client the binary carries
// instead of client_golang and the protobuf runtime: a registry of
// counters, gauges and histograms (classic buckets, and native ones),
// with labels; the exposition formats a scraper asks for, text 0.0.4 and
// protobuf delimited (io.prometheus.client.MetricFamily, written with
// protowire); an http.Handler that negotiates them and gzips as promhttp
// does; and a parser of the text format for scrapes of other servers.
//
// Output is what client_golang writes for the same metrics: families
// sorted by name, label pairs by name, series by their label values, and
// floats as Go's shortest 'g' form (1, 0.25, 1e-05, +Inf, NaN). Tests
// hold the text form against client_golang's and read the protobuf form
// back with prometheus/common/expfmt. Native histograms place values in
// the buckets client_golang does, save a value exactly on one of the few
// bounds its table has one ulp below the correctly rounded 2^(j/2^schema).
//
// No Go runtime or process collector is registered anywhere in llmchaos,
// so this package has none.
//
// A nil *Registry is valid: metrics made from it work and are exported
// nowhere (the simulator's engine without a metrics endpoint).
package promexpo
