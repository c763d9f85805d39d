package script

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/benchserver"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

const mib = 1 << 20

// errHeld ends the open-streams benchmark's run once it measured.
var errHeld = errors.New("benchmark: streams held and measured")

// BenchmarkScriptStreams1000VUs runs 1,000 VUs (per-vu-iterations, one
// iteration each) that each hold one long stream through k6/x/llm (120
// tokens at one a second, from the simulator in a process of its own),
// waits until every stream is open and has had tokens, holds 3 s, and
// reports the process's resident memory: total, peak, per VU, and the part
// the VUs' JavaScript runtimes took before any request. The target
// is < 1.5 GiB. The run is then stopped (every stream ends cancelled).
func BenchmarkScriptStreams1000VUs(b *testing.B) {
	const vus = 1000
	raiseFileLimit(b, 2*vus+1024)
	url, model := startBenchSim(b, benchSim{TTFT: 50 * time.Millisecond, ITL: time.Second, MaxNumSeqs: 4 * vus, MaxWaiting: 4 * vus})
	src := fmt.Sprintf(`
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL, model: __ENV.MODEL });
export const options = { scenarios: { hold: { executor: 'per-vu-iterations', vus: %d, iterations: 1, maxDuration: '10m' } } };
export default function () {
  client.chat({ messages: [{ role: 'user', content: 'Tell me a long story about a lighthouse keeper.' }], max_tokens: 120, ignore_eos: true });
}
`, vus)
	runtime.GC()
	rss0 := procStatus(b, "VmRSS")
	var (
		rssInit, rss, hwm float64
		heap              uint64
		goroutines        int
		open              time.Duration
		waitErr           error
	)
	b.ResetTimer()
	doc := runBenchScript(b, context.Background(), src, map[string]string{"URL": url, "MODEL": model}, func(a *pipeline.Run) func(engine.RunStats, error) {
		rssInit = procStatus(b, "VmRSS") // every VU initialized, no request yet
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			deadline := time.NewTimer(2 * time.Minute)
			defer deadline.Stop()
			for {
				select {
				case <-tick.C:
				case <-stop:
					return
				case <-deadline.C:
					waitErr = fmt.Errorf("only %d of %d streams open after 2 min", a.Recorder.Snapshot(a.Clock.Now()).InFlight, vus)
					a.Stop(waitErr)
					return
				}
				if l := a.Recorder.Snapshot(a.Clock.Now()); l.InFlight >= vus {
					open = l.Elapsed
					break
				}
			}
			hold := time.NewTimer(3 * time.Second) // every stream has had tokens
			defer hold.Stop()
			select {
			case <-hold.C:
			case <-stop:
				return
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap, goroutines = ms.HeapInuse, runtime.NumGoroutine()
			var e1, e2 error
			rss, e1 = readProcStatus("VmRSS")
			hwm, e2 = readProcStatus("VmHWM")
			if waitErr = errors.Join(e1, e2); waitErr != nil {
				a.Stop(waitErr)
				return
			}
			a.Stop(errHeld)
		})
		return func(engine.RunStats, error) { close(stop); wg.Wait() }
	})
	b.StopTimer()
	if waitErr != nil {
		b.Fatal(waitErr)
	}
	req := doc.Summary().Requests()
	b.ReportMetric(rss/mib, "rss-MiB")
	b.ReportMetric(hwm/mib, "peak-rss-MiB")
	b.ReportMetric(rss/vus/mib, "MiB/VU")
	b.ReportMetric((rss-rss0)/vus/1024, "KiB/VU-added")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d VUs each holding a k6/x/llm stream (all open after %v, held 3 s): RSS %.0f MiB (peak %.0f MiB; %.0f MiB before the run, %.0f MiB with the VUs initialized), %.2f MiB per VU in all, %.0f KiB per VU added (%.0f KiB of it the JavaScript runtime), Go heap %.0f MiB, %d goroutines; target < 1536 MiB; ended: %d scheduled, %d cancelled, %d ok, %d failed %v, %d lost",
		vus, open.Round(time.Millisecond), rss/mib, hwm/mib, rss0/mib, rssInit/mib, rss/vus/mib, (rss-rss0)/vus/1024, (rssInit-rss0)/vus/1024,
		float64(heap)/mib, goroutines, req.Scheduled, req.Cancelled, req.OK, req.Failed, req.ErrorsByClass, req.Lost)
	if req.Lost != 0 {
		b.Errorf("%d requests lost", req.Lost)
	}
}

// BenchmarkScriptVsLoadTiming sends the same traffic (constant arrivals at
// 40 req/s for 30 s, 64 output tokens each, a 16-word prompt) to the same
// constant-latency simulator (TTFT 20 ms, ITL 5 ms, in a process of its
// own) through a script with k6/x/llm (constant-arrival-rate) and through
// the load engine, both at once, and reports TTFT and ITL p50 and
// p99 of both and their relative difference (the target: within
// 1 %). Both time requests with the same Go client; what differs is what
// surrounds it (a JavaScript VU per request vs the engine's workers).
func BenchmarkScriptVsLoadTiming(b *testing.B) {
	const (
		rate   = 40
		span   = 30 * time.Second
		tokens = 64
	)
	url, model := startBenchSim(b, benchSim{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, MaxNumSeqs: 256, MaxWaiting: 1024})
	prompt := strings.TrimSpace(strings.Repeat("word ", 16))
	src := fmt.Sprintf(`
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL, model: __ENV.MODEL });
export const options = { scenarios: { rate: { executor: 'constant-arrival-rate', rate: %d, timeUnit: '1s', duration: '%s', preAllocatedVUs: 64 } } };
export default function () {
  client.chat({ messages: [{ role: 'user', content: '%s' }], max_tokens: %d, ignore_eos: true });
}
`, rate, span, prompt, tokens)

	eng, rec := benchEngine(b, url, model, workload.ArrivalConfig{Rate: rate, Arrival: workload.ArrivalConstant, Duration: span},
		workload.Config{InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(tokens), IgnoreEOS: true}, 256, nil)
	b.ResetTimer()
	// Both run at once, so that both see the same machine and the same
	// server: on a shared machine, runs one after the other differ in
	// their tails by what else ran meanwhile.
	var (
		stats  engine.RunStats
		engErr error
		wg     sync.WaitGroup
	)
	doc := runBenchScript(b, context.Background(), src, map[string]string{"URL": url, "MODEL": model}, func(*pipeline.Run) func(engine.RunStats, error) {
		wg.Go(func() { stats, engErr = eng.Run(context.Background()) })
		return nil
	})
	wg.Wait()
	b.StopTimer()
	if engErr != nil {
		b.Fatal(engErr)
	}
	script, load := doc.Summary(), rec.Finish(stats.End)

	sc, lc := script.Counts(recording.TagFilter{}), load.Counts(recording.TagFilter{})
	if sc.OK != rate*int64(span/time.Second) || lc.OK != sc.OK {
		b.Fatalf("ok requests: script %d (errors %v), load %d (errors %v), want %d each", sc.OK, sc.ErrorsByClass(), lc.OK, lc.ErrorsByClass(), rate*int64(span/time.Second))
	}
	var lines []string
	for _, m := range []struct {
		name string
		m    recording.Metric
	}{{"ttft", recording.MetricTTFT}, {"itl", recording.MetricITL}} {
		s, l := script.Distribution(m.m, recording.TagFilter{}), load.Distribution(m.m, recording.TagFilter{})
		b.ReportMetric(float64(s.P50), m.name+"-p50-script-µs")
		b.ReportMetric(float64(l.P50), m.name+"-p50-load-µs")
		b.ReportMetric(relDiff(s.P50, l.P50), m.name+"-p50-diff-%")
		b.ReportMetric(relDiff(s.P99, l.P99), m.name+"-p99-diff-%")
		lines = append(lines, fmt.Sprintf("%s p50 script %d µs / load %d µs (%+.2f%%), p99 script %d µs / load %d µs (%+.2f%%), samples %d / %d",
			m.name, s.P50, l.P50, relDiff(s.P50, l.P50), s.P99, l.P99, relDiff(s.P99, l.P99), s.Count, l.Count))
	}
	b.ReportMetric(0, "ns/op")
	b.Logf("%d req/s each for %v, %d tokens each, simulator TTFT 20 ms ITL 5 ms, both at once; target: within 1 %%:\n  %s", rate, span, tokens, strings.Join(lines, "\n  "))
}

// BenchmarkScriptCPUPerMillionTokens streams the same tokens from the
// client benchmark's SSE server (a process of its own, so its CPU is not
// counted) through a script with k6/x/llm (shared-iterations, one chat()
// per iteration) and through the load engine (closed loop with as many
// users), and reports each one's process CPU seconds per million tokens
// and their ratio (the target: the script within 1.5× of load).
// The cases are BenchmarkEngineCPUPerMillionTokens's:
//
//   - burst: 64 users, 1,000 tokens per request as fast as the server
//     sends them, 2 million tokens;
//   - paced: 200 users, a token every 2 ms per stream (each its own
//     read), 400,000 tokens. The script asks for the pace in the body
//     (extra_body), the engine in a header.
//
// The script's CPU is counted from the end of the VUs' initialization to
// the end of the last iteration; the engine's over its Run.
func BenchmarkScriptCPUPerMillionTokens(b *testing.B) {
	url := benchserver.Start(b)
	for _, c := range []struct {
		name                string
		users, perReq, toks int
		itl                 time.Duration
	}{
		{"burst/itl=0/users=64", 64, 1000, 2_000_000, 0},
		{"paced/itl=2ms/users=200", 200, 1000, 400_000, 2 * time.Millisecond},
	} {
		b.Run(c.name, func(b *testing.B) {
			requests := c.toks / c.perReq
			extra := ""
			if c.itl > 0 {
				extra = fmt.Sprintf(", extra_body: { bench_itl: '%s' }", c.itl)
			}
			src := fmt.Sprintf(`
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL, model: 'bench-model' });
export const options = { scenarios: { cpu: { executor: 'shared-iterations', vus: %d, iterations: %d, maxDuration: '30m' } } };
const messages = [{ role: 'user', content: 'a b c d e f g h' }];
export default function () {
  client.chat({ messages, max_tokens: %d%s });
}
`, c.users, requests, c.perReq, extra)

			runtime.GC()
			var scriptCPU, scriptWall time.Duration
			b.ResetTimer()
			doc := runBenchScript(b, context.Background(), src, map[string]string{"URL": url}, func(*pipeline.Run) func(engine.RunStats, error) {
				u0, s0 := benchserver.CPUTime()
				t0 := time.Now()
				return func(engine.RunStats, error) {
					u1, s1 := benchserver.CPUTime()
					scriptCPU, scriptWall = (u1-u0)+(s1-s0), time.Since(t0)
				}
			})
			sc := doc.Summary().Counts(recording.TagFilter{})

			header := http.Header{"X-Bench-ITL": []string{c.itl.String()}}
			eng, rec := benchEngine(b, url, "bench-model", workload.ArrivalConfig{Concurrency: c.users, Requests: requests},
				workload.Config{InputTokens: workload.FixedDist(8), OutputTokens: workload.FixedDist(c.perReq)}, c.users, header)
			runtime.GC()
			u0, s0 := benchserver.CPUTime()
			t0 := time.Now()
			stats, err := eng.Run(context.Background())
			loadWall := time.Since(t0)
			u1, s1 := benchserver.CPUTime()
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			lc := rec.Finish(stats.End).Counts(recording.TagFilter{})
			if sc.OK != int64(requests) || lc.OK != int64(requests) {
				b.Fatalf("ok: script %d (errors %v), load %d (errors %v), want %d each", sc.OK, sc.ErrorsByClass(), lc.OK, lc.ErrorsByClass(), requests)
			}
			loadCPU := (u1 - u0) + (s1 - s0)
			sPer := scriptCPU.Seconds() / (float64(sc.OutputTokens) / 1e6)
			lPer := loadCPU.Seconds() / (float64(lc.OutputTokens) / 1e6)
			b.ReportMetric(sPer, "script-cpu-s/Mtok")
			b.ReportMetric(lPer, "load-cpu-s/Mtok")
			b.ReportMetric(sPer/lPer, "ratio")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d tokens each (%d users, %d requests): script %.2f CPU-s/Mtok (%.2f CPU-s in %v), load %.2f CPU-s/Mtok (%.2f CPU-s in %v): ratio %.2f× (target ≤ 1.5×)",
				sc.OutputTokens, c.users, requests, sPer, scriptCPU.Seconds(), scriptWall.Round(time.Millisecond), lPer, loadCPU.Seconds(), loadWall.Round(time.Millisecond), sPer/lPer)
		})
	}
}
