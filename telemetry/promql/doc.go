// Package promql is the promql steady-state probe and stop condition of
// experiment files:
//
//	promql:
//	  url: http://127.0.0.1:9090        # a Prometheus (or compatible) server
//	  query: sum(rate(llmchaos_requests_total{outcome="failed"}[1m]))
//	  expect: "< 0.5"
//
// Check runs the query once through the server's instant query API
// (POST /api/v1/query) and compares its result with expect.
//
// # Expect
//
//	expect = op number
//	op     = "<" | "<=" | ">" | ">=" | "==" | "!="
//	number = a decimal or exponent float (Go's strconv.ParseFloat: "0.5", "1e3", "-2")
//
// Spaces around and between are allowed. A scalar result holds when its
// value satisfies expect; a vector holds when every element does (so
// "per replica, KV usage < 0.9" reads as one probe), and Result.Failing
// names the elements that did not. NaN satisfies only "!=".
//
// # Outcomes
//
// Check returns a *Result when the server answered with data, whatever the
// comparison gave (Result.OK), and an error when the probe could not decide:
// the server unreachable or answering an error (*APIError, with Prometheus'
// errorType and message), a result type other than scalar or vector, or an
// empty vector (ErrNoData: the query matched nothing, which usually means a
// wrong metric name or a target not scraped yet). A steady-state probe
// passes when OK is true; a stop condition fires when OK is false, so expect
// always describes the safe state.
package promql
