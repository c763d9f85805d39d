package main

import (
	"io"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/spf13/pflag"
)

// loadFlagsAllocLimit bounds what parsing and checking one set of load
// flags may allocate: the values are small strings, so anything near this
// is a value used as a size before it was checked.
const loadFlagsAllocLimit = 256 << 20

// FuzzLoadFlags feeds the load flags that size things (rates, counts,
// token distributions, stages) arbitrary values. Parsing and checking them
// must neither panic nor allocate beyond loadFlagsAllocLimit, whatever the
// values: a bound is checked before a value is used. Its seeds, the
// values that once were unbounded among them, run in every go test.
func FuzzLoadFlags(f *testing.F) {
	f.Add("10", "", "", "fixed:128", "fixed:64", "10s", "", "")
	f.Add("1e12", "1e9", "1e9", "fixed:1e12", "uniform:1:1e15", "100000h", "1e18", "1s:1e12")
	f.Add("inf", "", "", "normal:1e300:1e300", "lognormal:1e9:1e9", "", "9223372036854775807", "")
	f.Add("", "2147483647", "-1", "zipf:1e9", "fixed:-1", "1ns", "", "1ns:1,1ns:2,1ns:3")
	f.Fuzz(func(t *testing.T, rate, concurrency, maxInFlight, input, output, duration, requests, stages string) {
		args := []string{"--target", "http://127.0.0.1:1/v1", "--model", "m"}
		for _, kv := range [][2]string{
			{"--rate", rate}, {"--concurrency", concurrency}, {"--max-in-flight", maxInFlight},
			{"--input-tokens", input}, {"--output-tokens", output}, {"--duration", duration},
			{"--requests", requests}, {"--stages", stages},
		} {
			if kv[1] != "" {
				args = append(args, kv[0], kv[1])
			}
		}
		debug.SetMemoryLimit(1 << 30)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var lf loadFlags
		fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		addLoadFlags(fs, &lf)
		if err := fs.Parse(args); err == nil {
			_, _ = lf.config(fs)
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > loadFlagsAllocLimit {
			t.Fatalf("load flags %q allocated %d MiB, more than the %d MiB bound", args, got>>20, loadFlagsAllocLimit>>20)
		}
	})
}
