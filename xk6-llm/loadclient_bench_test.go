package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/llmchaos/llmchaos/internal/benchserver"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Environment knobs of BenchmarkLoadClientTable.
const (
	// tableTokensEnv sets the tokens streamed per CPU case (default 300,000).
	tableTokensEnv = "LLMCHAOS_BENCH_TOKENS"
	// tableStreamsEnv sets the streams held open for the memory case
	// (default 15,000: this machine's open-file limit is 20,000 per
	// process, and each end of a stream takes one).
	tableStreamsEnv = "LLMCHAOS_BENCH_STREAMS"
	// tableIOThreadsEnv sets the event loop's threads (default: the
	// client's, one per core).
	tableIOThreadsEnv = "LLMCHAOS_BENCH_IO_THREADS"
	// tableOnlyEnv runs only the named parts (a list): cpu, step, 1000,
	// mem, mem50k, lag, sim.
	tableOnlyEnv = "LLMCHAOS_BENCH_ONLY"
	// tableSyscallsEnv set to 0 turns off the perf system call count of
	// the CPU cases (its tracepoint adds a little to every call).
	tableSyscallsEnv = "LLMCHAOS_BENCH_SYSCALLS"
)

// tableClient is one client of the table, behind one function: send a
// streamed chat request and return its content chunks; first, when set,
// is called at its first one.
type tableClient struct {
	name   string
	stream func(ctx context.Context, url string, req *workload.Request, first func()) (int, error)
	io     func() client.IOStats // the event loop's own count; nil: none
	close  func()
}

// firstTokens is a LiveSink that forwards to a Recorder and calls a
// request's first callback at its first token (the memory case waits for
// every stream to be open).
type firstTokens struct {
	rec   *recording.Recorder
	first func()
}

func (f firstTokens) StreamEvents(ev *recording.StreamEvents) {
	f.rec.StreamEvents(ev)
	if ev.FirstToken && f.first != nil {
		f.first()
	}
}

// newTableClient builds the named client: "eventloop" and "goroutine" are
// llmchaos's client with that transport, recording every Result (live
// events included) as a run does; "net/http" is the plain client.
func newTableClient(b testing.TB, name string, streams int, header http.Header, src []netip.Addr) *tableClient {
	b.Helper()
	if name == "net/http" {
		plain := benchserver.PlainStream(streams, header)
		return &tableClient{name: name, close: func() {}, stream: func(ctx context.Context, url string, req *workload.Request, first func()) (int, error) {
			body, err := json.Marshal(map[string]any{"model": req.Model, "messages": req.Messages, "max_tokens": req.MaxTokens, "stream": true,
				"stream_options": map[string]bool{"include_usage": true}, "ignore_eos": req.IgnoreEOS})
			if err != nil {
				return 0, err
			}
			return plain(ctx, url, body, first)
		}}
	}
	tr := client.TransportEventLoop
	if name == "goroutine" {
		tr = client.TransportNetHTTP
		src = nil
	}
	c, err := client.New(client.Options{Transport: tr, Concurrency: streams, Headers: header, SourceAddrs: src, IOThreads: envInt(tableIOThreadsEnv, 0),
		Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	rec := recording.NewRecorder(recording.Options{})
	return &tableClient{name: name, io: c.IOStats, close: c.Close,
		stream: func(ctx context.Context, url string, req *workload.Request, first func()) (int, error) {
			var res recording.Result
			res.Scheduled = c.Clock().Now()
			c.DoCall(ctx, url, req, &res, client.Call{Live: firstTokens{rec: rec, first: first}})
			rec.Record(&res)
			if res.Outcome != recording.OutcomeOK {
				return res.ContentChunks, fmt.Errorf("%v %s: %s", res.Outcome, res.Class, res.Err)
			}
			return res.ContentChunks, nil
		}}
}

// cpuFigures is one client's CPU case.
type cpuFigures struct {
	tokens            int64
	wall              time.Duration
	ru                benchserver.Rusage // deltas
	ioReads, ioWrites int64              // /proc/self/io deltas
	loop              client.IOStats     // deltas
	serverCPU         time.Duration
	cpuPerMtok        float64
	syscalls          int64 // every call of the process (perf), −1: not counted
	syscallsWhy       string
}

func (f cpuFigures) perTok(n int64) float64 { return float64(n) / float64(f.tokens) }

// runCPU streams total tokens over streams concurrent requests of perReq
// tokens each at the server's ITL, and measures the process's CPU, its
// system calls, context switches and the loop's own count.
func runCPU(b *testing.B, tc *tableClient, url, model string, serverPID, streams, perReq, total int) cpuFigures {
	b.Helper()
	req := &workload.Request{Chat: true, Model: model, Stream: true, MaxTokens: perReq, IgnoreEOS: true,
		Messages: []workload.Message{{Role: "user", Content: "go"}}}
	warm := *req
	warm.MaxTokens = 2
	if _, err := tc.stream(context.Background(), url, &warm, nil); err != nil {
		b.Fatalf("%s: warm-up: %v", tc.name, err)
	}
	requests := max(total/perReq, streams)
	return measureCPU(b, tc.name, tc.io, serverPID, func() (int64, error) {
		var next, got atomic.Int64
		var errOnce sync.Once
		var firstErr error
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				for next.Add(1) <= int64(requests) {
					n, err := tc.stream(context.Background(), url, req, nil)
					got.Add(int64(n))
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
				}
			})
		}
		wg.Wait()
		return got.Load(), firstErr
	})
}

// runFloor is runCPU for benchserver.Floor, the kernel's floor: the same
// requests over the same number of connections, read by the cheapest
// possible event loop. Its tokens are its data events less the four per
// request that carry no content (role, finish, usage, [DONE]).
func runFloor(b *testing.B, url string, header http.Header, serverPID, streams, perReq, total int) cpuFigures {
	b.Helper()
	if _, err := benchserver.Floor(url, header, 1, 2, 1); err != nil {
		b.Fatalf("floor: warm-up: %v", err)
	}
	requests := max(total/perReq, streams)
	return measureCPU(b, "floor", nil, serverPID, func() (int64, error) {
		events, err := benchserver.Floor(url, header, streams, perReq, requests)
		return events - 4*int64(requests), err
	})
}

// measureCPU runs run (which returns the content tokens it read) and
// measures this process's CPU, system calls and context switches over it,
// and the server's CPU.
func measureCPU(b *testing.B, name string, loopStats func() client.IOStats, serverPID int, run func() (int64, error)) cpuFigures {
	b.Helper()
	runtime.GC()
	var f cpuFigures
	var l0 client.IOStats
	if loopStats != nil {
		l0 = loopStats()
	}
	var counter *benchserver.SyscallCounter
	if os.Getenv(tableSyscallsEnv) != "0" {
		counter = benchserver.CountSyscalls(0)
	}
	ru0 := benchserver.ReadRusage()
	r0, w0 := benchserver.IOSyscalls()
	s0 := benchserver.ProcessCPU(serverPID)
	t0 := time.Now()
	tokens, err := run()
	f.wall = time.Since(t0)
	ru1 := benchserver.ReadRusage()
	r1, w1 := benchserver.IOSyscalls()
	f.serverCPU = benchserver.ProcessCPU(serverPID) - s0
	f.syscalls, f.syscallsWhy = -1, "not counted ("+tableSyscallsEnv+"=0)"
	if counter != nil {
		n, err := counter.Stop()
		f.syscalls = n
		if err != nil {
			f.syscalls, f.syscallsWhy = -1, err.Error()
		}
	}
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	f.tokens = tokens
	f.ru = benchserver.Rusage{User: ru1.User - ru0.User, Sys: ru1.Sys - ru0.Sys,
		Voluntary: ru1.Voluntary - ru0.Voluntary, Involuntary: ru1.Involuntary - ru0.Involuntary}
	f.ioReads, f.ioWrites = r1-r0, w1-w0
	if loopStats != nil {
		l1 := loopStats()
		f.loop = client.IOStats{Reads: l1.Reads - l0.Reads, Writes: l1.Writes - l0.Writes, EpollWaits: l1.EpollWaits - l0.EpollWaits,
			EpollCtls: l1.EpollCtls - l0.EpollCtls, Wakes: l1.Wakes - l0.Wakes, Dials: l1.Dials - l0.Dials, Closes: l1.Closes - l0.Closes,
			Syscalls: l1.Syscalls - l0.Syscalls}
	}
	f.cpuPerMtok = (f.ru.User + f.ru.Sys).Seconds() / (float64(f.tokens) / 1e6)
	return f
}

// memFigures is one client's memory case.
type memFigures struct {
	streams       int
	rss0, rss     float64 // bytes
	perStream     float64 // bytes
	open          time.Duration
	heap, gorouts int
}

// runMem holds streams concurrent streams (ITL 1 s, long answers), waits
// until every one has its first token, calls hold (nil: wait 2 s), and
// reads the RSS. It opens perMs streams per millisecond.
func runMem(b testing.TB, tc *tableClient, url string, streams, perMs int, hold func()) memFigures {
	b.Helper()
	req := &workload.Request{Chat: true, Model: "bench-model", Stream: true, MaxTokens: 1000, IgnoreEOS: true,
		Messages: []workload.Message{{Role: "user", Content: "hold"}}}
	runtime.GC()
	debug.FreeOSMemory()
	f := memFigures{streams: streams, rss0: procStatus(b, "VmRSS")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var opened, failed atomic.Int64
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	// Open the streams at perMs per millisecond: the server's accept queue
	// holds 4,096.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 0; i < streams; {
		<-tick.C
		for range min(perMs, streams-i) {
			i++
			wg.Go(func() {
				if _, err := tc.stream(ctx, url, req, func() { opened.Add(1) }); err != nil && ctx.Err() == nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
			})
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	for opened.Load() < int64(streams) {
		if n := failed.Load(); n > 0 || time.Now().After(deadline) {
			cancel()
			wg.Wait()
			b.Fatalf("%s: %d of %d streams open after %v, %d failed (first: %v)", tc.name, opened.Load(), streams, time.Since(t0).Round(time.Millisecond), n, firstErr)
		}
		<-tick.C
	}
	f.open = time.Since(t0)
	if hold == nil {
		hold = func() { time.Sleep(2 * time.Second) }
	}
	hold()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.rss = procStatus(b, "VmRSS")
	f.heap, f.gorouts = int(ms.HeapInuse), runtime.NumGoroutine()
	f.perStream = (f.rss - f.rss0) / float64(streams)
	cancel()
	wg.Wait()
	return f
}

// lagFigures is one transport's send-lag case.
type lagFigures struct {
	p50, p99, max int64 // µs
	rate          float64
	ok, scheduled int64
}

// tableSendLag drives 5,000 req/s of 4-token requests for 5 s through the
// engine against the simulator (in a process of its own) and reads the
// send lag the recorder saw.
func tableSendLag(b *testing.B, url string, tr client.Transport) lagFigures {
	b.Helper()
	const rate, span = 5000, 5 * time.Second
	eng, rec, _ := benchEngineWith(b, []string{url}, "llmchaos-sim", workload.ArrivalConfig{Rate: rate, Arrival: workload.ArrivalConstant, Duration: span},
		shortChat(4), client.Options{Concurrency: 1024, Transport: tr})
	stats, err := eng.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	sum := rec.Finish(stats.End)
	req := sum.Requests()
	lag := sum.Distribution(recording.MetricSendLag, recording.TagFilter{})
	return lagFigures{p50: lag.P50, p99: lag.P99, max: lag.Max, rate: float64(req.Sent) / stats.End.Seconds(), ok: req.OK, scheduled: req.Scheduled}
}

// envInt reads a positive integer knob, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkLoadClientTable prints the load client's figures side by side
// for the event-loop client, the goroutine client (llmchaos's client over
// net/http, one goroutine per stream) and a plain net/http client
// (bufio.Scanner + encoding/json), on the same traffic in one run, and the
// simulator's own CPU per token:
//
//   - CPU-s per million tokens (user + system, getrusage of this
//     process) at 100 streams × 10 ms ITL and at 1,000 streams × 100 ms
//     ITL, from the client benchmark's SSE server in a process of its own
//     (each token its own write, streams unsynchronised: the worst case
//     for batching reads); the llmchaos clients record every Result and
//     its live events in a Recorder, as a run does;
//   - system calls per token at 100 streams: the event loop's own count
//     of every call it makes (reads, writes, epoll_wait, epoll_ctl,
//     eventfd wake-ups, the calls of a dial), and for every client the
//     process's read(2)/write(2) calls from /proc/self/io (syscr, syscw:
//     EAGAIN reads included; epoll, futex, nanosleep and the Go runtime's
//     other calls are not counted there) and its context switches
//     (getrusage voluntary + involuntary);
//   - RSS per stream: LLMCHAOS_BENCH_STREAMS (default 15,000) streams held
//     open at once, the event loop's spread over four loopback source
//     addresses, RSS growth per stream and the RSS 50,000 would take;
//   - send lag at 5,000 req/s of 4-token requests for 5 s through the
//     engine against the simulator in a process of its own: p50, p99 and
//     the achieved rate (the plain client has no engine);
//   - the simulator's CPU-s per million tokens serving 100 streams ×
//     10 ms ITL to the event-loop client.
//
// The targets: ≤ 3 CPU-s per million tokens, ≤ 1 system call per
// token, 50,000 streams in < 1.5 GiB, send lag p99 < 5 ms. On a shared
// 2-core machine the figures move with its load; CPU seconds and call
// counts move least.
func BenchmarkLoadClientTable(b *testing.B) {
	total := envInt(tableTokensEnv, 300_000)
	memStreams := envInt(tableStreamsEnv, 15_000)
	raiseFileLimit(b, uint64(memStreams)+1024)
	names := []string{"eventloop", "goroutine", "net/http", "floor"}
	src := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4"), netip.MustParseAddr("127.0.0.5")}
	only := os.Getenv(tableOnlyEnv)
	part := func(p string) bool { return only == "" || slices.Contains(strings.Split(only, ","), p) }
	for b.Loop() {
		url, pid := benchserver.StartProcess(b)
		var cpu100, cpuStep, cpu1000 [4]cpuFigures
		var mem [3]memFigures
		h100 := http.Header{"X-Bench-ITL": {"10ms"}}
		hStep := http.Header{"X-Bench-ITL": {"10ms"}, benchserver.StepHeader: {"1"}}
		h1000 := http.Header{"X-Bench-ITL": {"100ms"}}
		for i, name := range names {
			if c := os.Getenv("LLMCHAOS_BENCH_CLIENTS"); c != "" && !strings.Contains(c, name) {
				continue
			}
			if name == "floor" {
				if part("cpu") {
					cpu100[i] = runFloor(b, url, h100, pid, 100, 200, total)
				}
				if part("step") {
					cpuStep[i] = runFloor(b, url, hStep, pid, 100, 200, total)
				}
				if part("1000") {
					cpu1000[i] = runFloor(b, url, h1000, pid, 1000, 50, total)
				}
				continue
			}
			if part("cpu") {
				tc := newTableClient(b, name, 100, h100, nil)
				cpu100[i] = runCPU(b, tc, url, "bench-model", pid, 100, 200, total)
				tc.close()
			}
			if part("step") {
				tc := newTableClient(b, name, 100, hStep, nil)
				cpuStep[i] = runCPU(b, tc, url, "bench-model", pid, 100, 200, total)
				tc.close()
			}
			if part("1000") {
				tc := newTableClient(b, name, 1000, h1000, nil)
				cpu1000[i] = runCPU(b, tc, url, "bench-model", pid, 1000, 50, total)
				tc.close()
			}
			if part("mem") {
				tc := newTableClient(b, name, memStreams, http.Header{"X-Bench-ITL": {"1s"}}, src)
				mem[i] = runMem(b, tc, url, memStreams, 3, nil)
				tc.close()
			}
		}
		var lag [2]lagFigures
		if part("lag") {
			sim := startSimProcess(b, simOpts{TTFT: time.Millisecond, ITL: time.Millisecond, MaxNumSeqs: 1024, MaxWaiting: 8192})
			for i, tr := range []client.Transport{client.TransportEventLoop, client.TransportNetHTTP} {
				lag[i] = tableSendLag(b, sim.url, tr)
			}
		}
		var simCPU [2]cpuFigures
		if part("sim") {
			simITL := startSimProcess(b, simOpts{TTFT: 10 * time.Millisecond, ITL: 10 * time.Millisecond, MaxNumSeqs: 1024, MaxWaiting: 8192})
			for i, name := range names[:2] {
				tc := newTableClient(b, name, 100, nil, nil)
				simCPU[i] = runCPU(b, tc, simITL.url, "llmchaos-sim", simITL.cmd.Process.Pid, 100, 200, min(total, 200_000))
				tc.close()
			}
			benchSimProfile(b, total)
		}

		// Last: its 50,000 connections take a while to close, which
		// would weigh on the send lag measured after it.
		var m50k mem50kFigures
		if part("mem50k") {
			m50k = runMem50k(b, envInt(mem50kEnv, 50_000), envInt(mem50kProcEnv, 4))
		}

		perTok := func(f cpuFigures) string {
			if f.syscalls < 0 || f.tokens == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", f.perTok(f.syscalls))
		}
		num := func(v float64) string {
			if v == 0 || v != v {
				return "-"
			}
			return fmt.Sprintf("%.2f", v)
		}
		var out strings.Builder
		tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "client\tCPU-s/Mtok 100×10ms\tstepped\t1000×100ms\tsyscalls/tok 100×10ms\tstepped\tread+write/tok\tctx-sw/tok\tRSS/stream KiB\tsend lag p50/p99 ms\treq/s\t")
		for i, name := range names {
			c := cpu100[i]
			lagCol, rateCol := "-", "-"
			if i < len(lag) && lag[i].rate > 0 {
				lagCol = fmt.Sprintf("%.2f / %.2f", float64(lag[i].p50)/1e3, float64(lag[i].p99)/1e3)
				rateCol = fmt.Sprintf("%.0f", lag[i].rate)
			}
			memCol := "-"
			if i < len(mem) && mem[i].streams > 0 {
				memCol = fmt.Sprintf("%.1f", mem[i].perStream/1024)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, num(c.cpuPerMtok), num(cpuStep[i].cpuPerMtok), num(cpu1000[i].cpuPerMtok),
				perTok(c), perTok(cpuStep[i]), num(c.perTok(c.ioReads+c.ioWrites)), num(c.perTok(c.ru.Voluntary+c.ru.Involuntary)), memCol, lagCol, rateCol)
		}
		fmt.Fprintf(tw, "simulator (100×10ms, constant)\t%s\t\t\t\t\t\t\t\t\t\t\n", num(simCPU[0].serverCPU.Seconds()/(float64(simCPU[0].tokens)/1e6)))
		tw.Flush()
		b.Logf("load client table (%d tokens per CPU case, %d streams held, GOMAXPROCS %d, load average %s):\n%s", total, memStreams, runtime.GOMAXPROCS(0), loadAvg(), out.String())
		for i, name := range names {
			c, st, c2 := cpu100[i], cpuStep[i], cpu1000[i]
			b.Logf("%s: 100×10ms: %d tokens in %v (%.0f tok/s), user %.2f s sys %.2f s, %.3f read + %.3f write calls/tok, %.3f+%.3f ctx-sw/tok, server CPU %.2f s; stepped: user %.2f s sys %.2f s for %d tokens, server CPU %.2f s; 1000×100ms: %d tokens in %v, user %.2f s sys %.2f s, server CPU %.2f s, %s syscalls/tok",
				name, c.tokens, c.wall.Round(time.Millisecond), float64(c.tokens)/c.wall.Seconds(), c.ru.User.Seconds(), c.ru.Sys.Seconds(), c.perTok(c.ioReads), c.perTok(c.ioWrites),
				c.perTok(c.ru.Voluntary), c.perTok(c.ru.Involuntary), c.serverCPU.Seconds(),
				st.ru.User.Seconds(), st.ru.Sys.Seconds(), st.tokens, st.serverCPU.Seconds(),
				c2.tokens, c2.wall.Round(time.Millisecond), c2.ru.User.Seconds(), c2.ru.Sys.Seconds(), c2.serverCPU.Seconds(), perTok(c2))
			if c.syscalls < 0 && c.syscallsWhy != "" {
				b.Logf("%s: system calls not counted: %s", name, c.syscallsWhy)
			}
			if i < len(mem) && mem[i].streams > 0 {
				m := mem[i]
				b.Logf("%s memory: %d streams open in %v, RSS %.0f MiB (%.0f before), heap %.0f MiB, %d goroutines", name,
					m.streams, m.open.Round(time.Millisecond), m.rss/(1<<20), m.rss0/(1<<20), float64(m.heap)/(1<<20), m.gorouts)
			}
			if name == "eventloop" {
				for _, x := range []struct {
					shape string
					f     cpuFigures
				}{{"100×10ms", c}, {"stepped", st}} {
					l := x.f.loop
					b.Logf("eventloop's own count per token at %s: reads %.3f, writes %.3f, epoll_wait %.3f, epoll_ctl %.3f, eventfd %.3f, dials %d (all calls of the process, perf: %s)",
						x.shape, x.f.perTok(l.Reads), x.f.perTok(l.Writes), x.f.perTok(l.EpollWaits), x.f.perTok(l.EpollCtls), x.f.perTok(l.Wakes), l.Dials, perTok(x.f))
				}
			}
		}
		if m50k.streams > 0 {
			b.Logf("streams held: %d event-loop streams held at once by %d client processes (opened in %v): RSS %.0f MiB in all (%.0f MiB of it the processes' baselines before opening), %.1f KiB per stream above the baselines",
				m50k.streams, m50k.procs, m50k.open.Round(time.Millisecond), m50k.rss/(1<<20), m50k.rss0/(1<<20), (m50k.rss-m50k.rss0)/float64(m50k.streams)/1024)
			for i, r := range m50k.children {
				b.Logf("  client process %d: %d streams, RSS %.0f MiB (%.0f before), heap %.0f MiB, %d goroutines", i+1, r.Streams, r.RSS/(1<<20), r.RSS0/(1<<20), float64(r.Heap)/(1<<20), r.Gorouts)
			}
		}
		for i, tr := range []string{"eventloop", "goroutine"} {
			if lag[i].rate > 0 {
				b.Logf("send lag %s: p50 %d µs, p99 %d µs, max %d µs; %.0f req/s sent, %d ok of %d", tr, lag[i].p50, lag[i].p99, lag[i].max, lag[i].rate, lag[i].ok, lag[i].scheduled)
			}
		}
		for i, name := range names[:2] {
			c := simCPU[i]
			if c.tokens > 0 {
				b.Logf("simulator serving the %s client at 100×10ms: %d tokens, simulator CPU %.2f s (%.2f CPU-s/Mtok); the client: %.2f CPU-s/Mtok, %.2f ctx-sw/tok, loop %.2f calls/tok (%.3f epoll_wait/tok), %s syscalls/tok (perf)",
					name, c.tokens, c.serverCPU.Seconds(), c.serverCPU.Seconds()/(float64(c.tokens)/1e6), c.cpuPerMtok, c.perTok(c.ru.Voluntary+c.ru.Involuntary), c.perTok(c.loop.Syscalls), c.perTok(c.loop.EpollWaits), perTok(c))
			}
		}
		b.ReportMetric(cpu100[0].cpuPerMtok, "eventloop-cpu-s/Mtok")
		if cpu100[0].syscalls >= 0 && cpu100[0].tokens > 0 {
			b.ReportMetric(cpu100[0].perTok(cpu100[0].syscalls), "eventloop-syscalls/tok")
		}
		b.ReportMetric(mem[0].perStream/1024, "eventloop-KiB/stream")
		b.ReportMetric(float64(lag[0].p99)/1e3, "eventloop-lag-p99-ms")
		b.ReportMetric(0, "ns/op")
	}
}

// benchSimProfile logs the simulator's CPU per token with its default
// latency model (the roofline: about 5 ms decode steps at 100 streams, each
// step's tokens written together by the engine's goroutine) serving 100
// streams of 200 tokens to the event-loop client.
func benchSimProfile(b *testing.B, total int) {
	sim := startSimProcess(b, simOpts{Profile: true, MaxNumSeqs: 1024, MaxWaiting: 8192})
	tc := newTableClient(b, "eventloop", 100, nil, nil)
	defer tc.close()
	c := runCPU(b, tc, sim.url, "llmchaos-sim", sim.cmd.Process.Pid, 100, 200, min(total, 200_000))
	b.Logf("simulator (profile latency model) serving the eventloop client at 100 streams: %d tokens in %v (%.0f tok/s), simulator CPU %.2f s (%.2f CPU-s/Mtok); the client: %.2f CPU-s/Mtok",
		c.tokens, c.wall.Round(time.Millisecond), float64(c.tokens)/c.wall.Seconds(), c.serverCPU.Seconds(), c.serverCPU.Seconds()/(float64(c.tokens)/1e6), c.cpuPerMtok)
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
