// Package remotewrite pushes the series of a promexpo.Gatherer to a remote
// write receiver (--out prometheus-rw=URL): every Options.Interval (5 s by
// default) while the run lasts, and once more when it ends, so the last
// values always arrive.
//
// It speaks Prometheus remote write 1.0, the protocol Prometheus 2.x
// receivers (--web.enable-remote-write-receiver), Mimir, Thanos and
// VictoriaMetrics accept: a prometheus.WriteRequest protobuf message,
// snappy-compressed (block format), POSTed with
//
//	Content-Encoding: snappy
//	Content-Type: application/x-protobuf
//	X-Prometheus-Remote-Write-Version: 0.1.0
//
// The v1 message is small enough to encode by hand (Marshal), which spares
// the project the Prometheus server module:
//
//	message WriteRequest { repeated TimeSeries timeseries = 1; }
//	message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	message Label        { string name = 1; string value = 2; }
//	message Sample       { double value = 1; int64 timestamp = 2; }  // ms since the epoch
//
// Series are built from the gathered families as a scrape would see them
// (FromFamilies): counters and gauges as one series, histograms as
// _bucket{le}, _sum and _count (the classic buckets; native histograms need
// remote write 2.0), summaries as {quantile}, _sum and _count. Labels are
// sorted by name, empty-valued labels are left out (Prometheus treats them
// as absent), and Options.ExternalLabels are added where a series does not
// already carry the label.
//
// A push that fails with a network error, HTTP 5xx or 429 is retried up to
// Options.Retries times with doubling waits; any other 4xx is final (the
// receiver rejected the data and would again). Run keeps pushing after a
// failed push, since a receiver that is down must not stop the load, and
// reports every failure: to Options.OnError as it happens, and as a
// *RunError when it returns.
package remotewrite
