package llm_test

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/benchserver"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// benchEngine builds an engine as `llmchaos load` does, against targets,
// with a client pool sized to pool.
func benchEngine(b *testing.B, targets []string, model string, arrival workload.ArrivalConfig, w workload.Config, pool int, header http.Header) (*engine.Engine, *recording.Recorder, *client.Client) {
	b.Helper()
	return benchEngineWith(b, targets, model, arrival, w, client.Options{Concurrency: pool, Headers: header})
}

// benchEngineWith is benchEngine with the client's options given (its
// clock and seed are set here).
func benchEngineWith(b *testing.B, targets []string, model string, arrival workload.ArrivalConfig, w workload.Config, copts client.Options) (*engine.Engine, *recording.Recorder, *client.Client) {
	b.Helper()
	workload, err := workload.New(w.WithDefaults(), rand.New(rand.NewPCG(1, engine.SeedStreamWorkloadSetup)))
	if err != nil {
		b.Fatal(err)
	}
	copts.Clock, copts.Seed = recording.NewRunClock(), 1
	client, err := client.New(copts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	rec := recording.NewRecorder(recording.Options{})
	eng, err := engine.New(engine.Config{Targets: targets, Model: model, Arrival: arrival.WithDefaults(), Workload: workload,
		Client: client, Recorder: rec, Seed: 1, Grace: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return eng, rec, client
}

// BenchmarkEngineSendLag drives 5,000 req/s of short requests (constant
// arrivals, 2 output tokens) for 5 s through the whole engine (pacer,
// generator, workers, client, recorder) and reports the send lag (actual
// send − scheduled send, as the client stamps it) the recorder saw: p50,
// p99, max, and the load process's CPU per request. The target is
// p99 < 200 µs. Servers, each in a process of its own:
//
//   - simulator: the simulator (`llmchaos sim` code, constant latency
//     TTFT 1 ms, ITL 1 ms): the setting;
//   - bench-server: the client benchmark's minimal SSE server, whose CPU
//     per request is a small fraction of the simulator's, so that the
//     figure shows the engine's own lag rather than CPU taken by the server.
//
// On a shared 2-core machine both processes compete for the same cores
// with whatever else runs; the figures say more about the machine then.
func BenchmarkEngineSendLag(b *testing.B) {
	b.Run("simulator", func(b *testing.B) {
		p := startSimProcess(b, simOpts{TTFT: time.Millisecond, ITL: time.Millisecond, MaxNumSeqs: 1024, MaxWaiting: 8192})
		runSendLag(b, p.url, "llmchaos-sim")
	})
	b.Run("bench-server", func(b *testing.B) {
		runSendLag(b, benchserver.Start(b), "bench-model")
	})
}

func runSendLag(b *testing.B, url, model string) {
	const rate, span = 5000, 5 * time.Second
	eng, rec, _ := benchEngine(b, []string{url}, model, workload.ArrivalConfig{Rate: rate, Arrival: workload.ArrivalConstant, Duration: span},
		shortChat(2), 1024, nil)
	u0, s0 := benchserver.CPUTime()
	b.ResetTimer()
	stats, err := eng.Run(context.Background())
	b.StopTimer()
	u1, s1 := benchserver.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	sum := rec.Finish(stats.End)
	req := sum.Requests()
	lag := sum.Distribution(recording.MetricSendLag, recording.TagFilter{})
	cpuPerReq := float64((u1-u0)+(s1-s0)) / float64(time.Microsecond) / float64(req.Scheduled)
	b.ReportMetric(float64(lag.P50), "p50-µs")
	b.ReportMetric(float64(lag.P99), "p99-µs")
	b.ReportMetric(float64(lag.Max), "max-µs")
	b.ReportMetric(float64(req.OK)/stats.End.Seconds(), "ok-req/s")
	b.ReportMetric(cpuPerReq, "cpu-µs/req")
	b.ReportMetric(0, "ns/op")
	e2e := sum.Distribution(recording.MetricE2E, recording.TagFilter{})
	b.Logf("send lag at %d req/s over %v (%d scheduled, %d ok, errors %v): p50 %d µs, p90 %d µs, p99 %d µs, max %d µs; load process CPU %.0f µs per request (%.2f cores); e2e p50 %d µs, p99 %d µs; in flight max %d",
		rate, span, req.Scheduled, req.OK, req.ErrorsByClass, lag.P50, lag.P90, lag.P99, lag.Max, cpuPerReq, cpuPerReq*rate/1e6,
		e2e.P50, e2e.P99, sum.Concurrency.Max)
}

// raiseFileLimit lifts RLIMIT_NOFILE to at least n (the hard limit too,
// which needs privilege), so that n connections can be open at once.
func raiseFileLimit(b testing.TB, n uint64) {
	b.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = n
	lim.Max = max(lim.Max, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Skipf("cannot raise the open-file limit to %d: %v", n, err)
	}
}

// procStatus returns a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(b testing.TB, field string) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status: ", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkEngineOpenStreams holds 10,000 concurrent streams open (ITL 1 s,
// 120 output tokens each, so none ends during the hold) and reports the
// load process's resident memory (target < 1 GiB), its peak, the Go heap
// and the goroutines. The streams are opened at 2,500/s; the simulator
// runs in a separate process (`llmchaos sim --latency constant --itl 1s
// --max-num-seqs 20000 --max-waiting 20000`, the same server code); the
// run is then stopped (every stream ends cancelled, none lost).
func BenchmarkEngineOpenStreams(b *testing.B) {
	const streams = 10_000
	raiseFileLimit(b, streams+1024) // each process holds one end of every stream; the child inherits the limit
	p := startSimProcess(b, simOpts{TTFT: 50 * time.Millisecond, ITL: time.Second, MaxNumSeqs: 20_000, MaxWaiting: 20_000})
	eng, rec, client := benchEngine(b, []string{p.url}, "llmchaos-sim",
		workload.ArrivalConfig{Rate: 2500, Arrival: workload.ArrivalConstant, Requests: streams},
		workload.Config{InputTokens: workload.FixedDist(64), OutputTokens: workload.FixedDist(120), IgnoreEOS: true}, streams, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan engine.RunStats, 1)
	runtime.GC()
	rss0 := procStatus(b, "VmRSS")
	b.ResetTimer()
	go func() {
		stats, err := eng.Run(ctx)
		if err != nil {
			b.Error(err)
		}
		done <- stats
	}()

	// Wait (on the recorder's own gauge) until every stream is open and
	// has had time to receive tokens, then hold 3 s more.
	clock := client.Clock()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	var open time.Duration
wait:
	for {
		select {
		case <-tick.C:
			if l := rec.Snapshot(clock.Now()); l.InFlight >= streams {
				open = l.Elapsed
				break wait
			}
		case <-deadline:
			b.Fatalf("only %d of %d streams open after 60 s", rec.Snapshot(clock.Now()).InFlight, streams)
		}
	}
	hold := time.NewTimer(3 * time.Second)
	<-hold.C
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := rec.Snapshot(clock.Now())
	rss, hwm := procStatus(b, "VmRSS"), procStatus(b, "VmHWM")
	goroutines := runtime.NumGoroutine()
	b.StopTimer()
	cancel()
	stats := <-done
	req := rec.Finish(stats.End).Requests()

	const mib = 1 << 20
	b.ReportMetric(rss/mib, "rss-MiB")
	b.ReportMetric(hwm/mib, "peak-rss-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/mib, "heap-MiB")
	b.ReportMetric((rss-rss0)/streams/1024, "KiB/stream")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d streams open after %v, held 3 s: RSS %.0f MiB (peak %.0f MiB, %.0f MiB before), Go heap %.0f MiB, %.1f KiB RSS per stream, %d goroutines; ended: %d scheduled, %d cancelled, %d ok, %d failed (%v), %d lost",
		live.InFlight, open.Round(time.Millisecond), rss/mib, hwm/mib, rss0/mib, float64(ms.HeapInuse)/mib,
		(rss-rss0)/streams/1024, goroutines, req.Scheduled, req.Cancelled, req.OK, req.Failed, req.ErrorsByClass, req.Lost)
	if req.Lost != 0 || req.Scheduled != streams {
		b.Errorf("accounting: %+v, want %d scheduled and none lost", req, streams)
	}
}

// BenchmarkEngineCPUPerMillionTokens streams tokens through the whole
// engine from the client benchmark's SSE server (in a separate process,
// one write per token) and reports the load process's CPU seconds per
// million tokens (issue target ≤ 3), user and system apart. The cases are
// BenchmarkClientCPUPerMillionTokens's, so that the difference is the
// engine's and the recorder's share:
//
//   - burst: 64 closed-loop users, 1,000 tokens per request as fast as the
//     server sends them (many tokens arrive per read), 2 million tokens;
//   - paced: 200 users, a token every 2 ms per stream (each token its own
//     read, as with a real server), 400,000 tokens.
func BenchmarkEngineCPUPerMillionTokens(b *testing.B) {
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
			header := http.Header{"X-Bench-ITL": []string{c.itl.String()}}
			eng, rec, _ := benchEngine(b, []string{url}, "bench-model", workload.ArrivalConfig{Concurrency: c.users, Requests: c.toks / c.perReq},
				workload.Config{InputTokens: workload.FixedDist(8), OutputTokens: workload.FixedDist(c.perReq)}, c.users, header)
			runtime.GC()
			u0, s0 := benchserver.CPUTime()
			t0 := time.Now()
			b.ResetTimer()
			stats, err := eng.Run(context.Background())
			b.StopTimer()
			wall := time.Since(t0)
			u1, s1 := benchserver.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			cnt := rec.Finish(stats.End).Counts(recording.TagFilter{})
			if cnt.OK != int64(c.toks/c.perReq) {
				b.Fatalf("ok %d of %d (errors %v)", cnt.OK, c.toks/c.perReq, cnt.ErrorsByClass())
			}
			mtok := float64(cnt.OutputTokens) / 1e6
			user, sys := (u1 - u0).Seconds(), (s1 - s0).Seconds()
			b.ReportMetric((user+sys)/mtok, "cpu-s/Mtok")
			b.ReportMetric(user/mtok, "user-s/Mtok")
			b.ReportMetric(sys/mtok, "sys-s/Mtok")
			b.ReportMetric(float64(cnt.OutputTokens)/wall.Seconds(), "tok/s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d tokens in %v through the engine (%d users): CPU user %.2f s + sys %.2f s = %.2f CPU-s per million tokens",
				cnt.OutputTokens, wall.Round(time.Millisecond), c.users, user, sys, (user+sys)/mtok)
		})
	}
}

// BenchmarkEnginePoissonRate runs the rate check in full: Poisson
// at 50 req/s for 30 s against the simulator in a separate process. It
// reports the realised rate (requests sent / run duration) and its
// deviation from 50 req/s, which is the schedule's own Poisson spread
// (sd 2.6% for 1500 expected arrivals), and from the schedule the seed
// gave, which must be 0.
func BenchmarkEnginePoissonRate(b *testing.B) {
	p := startSimProcess(b, simOpts{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	cfg := workload.ArrivalConfig{Rate: 50, Duration: 30 * time.Second}
	arr, err := workload.NewArrivals(cfg.WithDefaults(), rand.New(rand.NewPCG(1, engine.SeedStreamArrivals)))
	if err != nil {
		b.Fatal(err)
	}
	planned := 0
	for _, ok := arr.Next(); ok; _, ok = arr.Next() {
		planned++
	}
	eng, rec, _ := benchEngine(b, []string{p.url}, "llmchaos-sim", cfg, shortChat(4), 256, nil)
	b.ResetTimer()
	stats, err := eng.Run(context.Background())
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	sum := rec.Finish(stats.End)
	req := sum.Requests()
	realised := float64(req.Sent) / stats.End.Seconds()
	lag := sum.Distribution(recording.MetricSendLag, recording.TagFilter{})
	b.ReportMetric(realised, "req/s")
	b.ReportMetric(100*(realised/50-1), "dev-%")
	b.ReportMetric(0, "ns/op")
	b.Logf("Poisson 50 req/s for 30 s: %d sent of %d planned over %.3f s = %.2f req/s (%+.2f%% from 50, %+.2f%% from the schedule), %d ok, lost %d, send lag p99 %d µs",
		req.Sent, planned, stats.End.Seconds(), realised, 100*(realised/50-1), 100*(realised/(float64(planned)/30)-1), req.OK, req.Lost, lag.P99)
	if int(req.Sent) != planned || req.Lost != 0 {
		b.Errorf("%d sent of %d planned, %d lost: want exactly the schedule", req.Sent, planned, req.Lost)
	}
}

// TestClientBenchServer is not a test of its own: it is the SSE server
// that the engine benchmarks run in a separate process (see benchserver).
func TestClientBenchServer(t *testing.T) { benchserver.Serve(t) }
