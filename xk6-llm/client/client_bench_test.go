package client

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/benchserver"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// clientBenchTokensEnv overrides the tokens streamed per benchmark case.
const clientBenchTokensEnv = "LLMCHAOS_BENCH_TOKENS"

// TestClientBenchServer is not a test of its own: it is the SSE server
// that BenchmarkClientCPUPerMillionTokens runs in a separate process (see
// benchserver).
func TestClientBenchServer(t *testing.T) { benchserver.Serve(t) }

// clientBenchStreamer runs one streamed request and returns its token chunks.
type clientBenchStreamer func(ctx context.Context, url string, req *workload.Request) (chunks int, err error)

// BenchmarkClientCPUPerMillionTokens measures the load process's CPU per
// streamed token: a server in another process streams each token as its
// own flushed chunk to many concurrent streams, and the client process's
// getrusage (user + system) is read before and after. Cases: "paced" gives
// each stream a 2 ms ITL so that every token arrives as its own read, as
// from a real model server; "burst" streams back to back (zero ITL), where
// the kernel may coalesce chunks. "baseline" is a plain net/http +
// bufio.Scanner + encoding/json client on the same streams, for scale.
// Target: <= 3 CPU-seconds per million tokens.
func BenchmarkClientCPUPerMillionTokens(b *testing.B) {
	url := benchserver.Start(b)
	total := 400_000
	if v, err := strconv.Atoi(os.Getenv(clientBenchTokensEnv)); err == nil && v > 0 {
		total = v
	}
	const perReq = 1000
	cases := []struct {
		name    string
		itl     time.Duration
		streams int
	}{
		{"paced/itl=2ms/streams=200", 2 * time.Millisecond, 200},
		{"burst/itl=0/streams=64", 0, 64},
	}
	for _, cc := range cases {
		for _, impl := range []string{"llm", "baseline"} {
			b.Run(cc.name+"/"+impl, func(b *testing.B) {
				var stream clientBenchStreamer
				var reads func() int64
				header := http.Header{"X-Bench-ITL": {cc.itl.String()}}
				if impl == "llm" {
					c, err := New(Options{Concurrency: cc.streams, Headers: header, Getenv: func(string) string { return "" }})
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					stream = func(ctx context.Context, url string, req *workload.Request) (int, error) {
						var res recording.Result
						c.Do(ctx, url, req, &res)
						if res.Outcome != recording.OutcomeOK {
							return res.ContentChunks, fmt.Errorf("%v %s: %s", res.Outcome, res.Class, res.Err)
						}
						return res.ContentChunks, nil
					}
					reads = c.statReads.Load
				} else {
					stream = baselineStreamer(cc.streams, header)
				}
				runClientBench(b, url, stream, reads, cc.streams, perReq, total)
			})
		}
	}
}

func runClientBench(b *testing.B, url string, stream clientBenchStreamer, reads func() int64, streams, perReq, total int) {
	req := &workload.Request{Chat: true, Model: "bench-model", Messages: []workload.Message{{Role: "user", Content: "go"}}, MaxTokens: perReq, Stream: true}
	// Warm up connections and pools.
	if _, err := stream(context.Background(), url, req); err != nil {
		b.Fatal(err)
	}
	requests := max(total/perReq, streams)
	var tokens, readsTotal int64
	var cpuUser, cpuSys, wall time.Duration
	var mallocs uint64
	var ms runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		var r0 int64
		if reads != nil {
			r0 = reads()
		}
		u0, s0 := benchserver.CPUTime()
		t0 := time.Now()

		var next, got atomic.Int64
		var wg sync.WaitGroup
		var errOnce sync.Once
		var firstErr error
		for range streams {
			wg.Go(func() {
				for next.Add(1) <= int64(requests) {
					n, err := stream(context.Background(), url, req)
					got.Add(int64(n))
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
				}
			})
		}
		wg.Wait()

		wall += time.Since(t0)
		u1, s1 := benchserver.CPUTime()
		cpuUser += u1 - u0
		cpuSys += s1 - s0
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - m0
		if reads != nil {
			readsTotal += reads() - r0
		}
		tokens += got.Load()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
	}
	mtok := float64(tokens) / 1e6
	b.ReportMetric((cpuUser+cpuSys).Seconds()/mtok, "cpu-s/Mtok")
	b.ReportMetric(cpuUser.Seconds()/mtok, "user-s/Mtok")
	b.ReportMetric(cpuSys.Seconds()/mtok, "sys-s/Mtok")
	b.ReportMetric(float64(tokens)/wall.Seconds(), "tok/s")
	b.ReportMetric(float64(mallocs)/float64(tokens), "allocs/tok")
	if reads != nil {
		b.ReportMetric(float64(tokens)/float64(readsTotal), "tok/read")
	}
	b.Logf("%d tokens in %v over %d streams: CPU user %v + sys %v = %.2f CPU-s per million tokens",
		tokens, wall.Round(time.Millisecond), streams, cpuUser.Round(time.Millisecond), cpuSys.Round(time.Millisecond), (cpuUser+cpuSys).Seconds()/mtok)
}

// baselineStreamer is the plain client the target is measured against
// (benchserver.PlainStream: net/http, bufio.Scanner, encoding/json).
func baselineStreamer(streams int, header http.Header) clientBenchStreamer {
	plain := benchserver.PlainStream(streams, header)
	return func(ctx context.Context, url string, req *workload.Request) (int, error) {
		body, err := encodeRequest(req)
		if err != nil {
			return 0, err
		}
		return plain(ctx, url, body, nil)
	}
}
