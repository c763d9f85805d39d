// Package promtest starts a real Prometheus server (Debian's prometheus
// package, 2.42) for tests: on 127.0.0.1 with a port the kernel picks, with
// the remote write receiver on and a fresh TSDB, and stops it when the test
// ends. Tests that need it skip, saying why, when the binary is absent.
package promtest
