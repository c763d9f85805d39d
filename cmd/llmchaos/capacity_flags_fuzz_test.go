package main

import (
	"context"
	"io"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// FuzzCapacityFlags feeds the capacity flags that bound and size the
// search (the loads, the growth, the steps, the precision, the mode)
// arbitrary values. A set of flags must be refused (exit 2) or, when
// valid, stop at the pre-flight check, which a context already cancelled
// aborts (exit 98), without panicking or allocating beyond
// loadFlagsAllocLimit: a bound is checked before a value is used. Its seeds, the values that once were clamped or unbounded among
// them, run in every go test.
func FuzzCapacityFlags(f *testing.F) {
	f.Add("rate", "1", "0.1", "10000", "2", "20", "200", "5%")
	f.Add("rate", "0", "", "", "", "", "", "")
	f.Add("rate", "10", "", "1", "", "", "", "")
	f.Add("rate", "1e300", "1e-300", "1e308", "1.0000001", "2147483647", "2147483647", "0.1%")
	f.Add("concurrency", "1e9", "1", "1e12", "1e9", "9223372036854775807", "-1", "100%")
	f.Add("users", "nan", "inf", "-inf", "1", "1", "0", "1e-9%")
	f.Fuzz(func(t *testing.T, mode, start, lo, hi, growth, maxSteps, stepRequests, precision string) {
		args := []string{"capacity", "--target", "http://127.0.0.1:1/v1", "--model", "m", "--workload", "chat", "--slo", "ttft: p(99)<1s",
			"--quiet"}
		for _, kv := range [][2]string{
			{"--mode", mode}, {"--start", start}, {"--min", lo}, {"--max", hi}, {"--growth", growth},
			{"--max-steps", maxSteps}, {"--step-requests", stepRequests}, {"--precision", precision},
		} {
			if kv[1] != "" {
				args = append(args, kv[0], kv[1])
			}
		}
		debug.SetMemoryLimit(1 << 30)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a valid search stops before its first request
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code := execute(ctx, args, io.Discard, io.Discard)
		runtime.ReadMemStats(&after)
		if code != exitcode.Usage && code != exitcode.Aborted {
			t.Errorf("capacity %q: exit %d, want %d (refused) or %d (valid, stopped before the search)", args, code, exitcode.Usage, exitcode.Aborted)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > loadFlagsAllocLimit {
			t.Fatalf("capacity flags %q allocated %d MiB, more than the %d MiB bound", args, got>>20, loadFlagsAllocLimit>>20)
		}
	})
}
