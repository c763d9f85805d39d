package llm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// simOpts is the part of the simulator's configuration the end-to-end tests
// and benchmarks vary. The simulator runs with constant latency, so that
// what the load engine reports can be checked against what it was served.
type simOpts struct {
	TTFT       time.Duration
	ITL        time.Duration
	MaxNumSeqs int    // 0: the simulator's default
	MaxWaiting int    // 0: the simulator's default
	AdminToken string // "": admin API off
	// Profile serves the default latency model (sim.LatencyProfile, the
	// roofline whose streams' tokens come out together at each decode
	// step) instead of the constant TTFT and ITL.
	Profile bool
	// StreamTiming receives the simulator's own record of each stream
	// (in-process simulators only: a child process cannot call back).
	StreamTiming func(*server.StreamTiming) `json:"-"`
}

func (o simOpts) config() sim.Config {
	c := sim.DefaultConfig()
	c.Latency = sim.LatencyConstant
	if o.Profile {
		c.Latency = sim.LatencyProfile
	}
	c.TTFT, c.ITL = o.TTFT, o.ITL
	if o.MaxNumSeqs > 0 {
		c.MaxNumSeqs = o.MaxNumSeqs
	}
	if o.MaxWaiting > 0 {
		c.MaxWaiting = o.MaxWaiting
	}
	return c
}

// startSim serves the real simulator (sim/server, as `llmchaos sim` does)
// in this process on 127.0.0.1:0 and returns its base URL (…/v1). It stops
// when the test ends; the returned channel is closed when Serve returns
// (when the test ends, or when the replica dies).
func startSim(tb testing.TB, o simOpts) (string, <-chan struct{}) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.Serve(ctx, ln, server.Options{Config: o.config(), AdminToken: o.AdminToken, StreamTiming: o.StreamTiming})
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("simulator did not stop within 10s of its context")
		}
	})
	return "http://" + ln.Addr().String() + "/v1", done
}

// adminCall calls the simulator's admin API: POST path with a JSON body.
func adminCall(baseURL, token, path, body string) error {
	root := strings.TrimSuffix(baseURL, "/v1")
	req, err := http.NewRequest(http.MethodPost, root+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("admin %s: %d %s", path, resp.StatusCode, b)
	}
	return nil
}

// admin is adminCall from the test's goroutine.
func admin(tb testing.TB, baseURL, token, path, body string) {
	tb.Helper()
	if err := adminCall(baseURL, token, path, body); err != nil {
		tb.Fatal(err)
	}
}

// simProcessEnv makes the test binary run TestE2ESimProcess: the simulator
// in a process of its own (so that it can be killed, and so that its CPU is
// not the load's), configured by the JSON simOpts in the variable.
const simProcessEnv = "LLMCHAOS_E2E_SIM"

// TestE2ESimProcess is not a test of its own: it is the simulator child
// process of the end-to-end tests and benchmarks. It serves sim/server (the
// code `llmchaos sim` runs) on 127.0.0.1:0, prints its address, and serves
// until its standard input closes or it is killed.
func TestE2ESimProcess(t *testing.T) {
	spec := os.Getenv(simProcessEnv)
	if spec == "" {
		t.Skip("helper process for the end-to-end tests")
	}
	var o simOpts
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, server.Options{Config: o.config(), AdminToken: o.AdminToken}) }()
	fmt.Printf("LISTEN %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// simProcess is a simulator child process.
type simProcess struct {
	cmd   *exec.Cmd
	url   string
	stdin io.Closer
}

// startSimProcess starts the simulator in a child process and waits for the
// line that says it listens. It is stopped (stdin closed, then waited for)
// when the test ends, unless it was killed before.
func startSimProcess(tb testing.TB, o simOpts, extraEnv ...string) *simProcess {
	tb.Helper()
	spec, err := json.Marshal(o)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestE2ESimProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), simProcessEnv+"="+string(spec)), extraEnv...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &simProcess{cmd: cmd, stdin: stdin}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "LISTEN "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }() // ends when the child does
			p.url = "http://" + addr + "/v1"
			return p
		}
	}
	tb.Fatalf("simulator process exited before listening: %v", sc.Err())
	return nil
}

// savedResult is one line of --save-requests output (RequestWriter).
type savedResult struct {
	Seq          uint64 `json:"seq"`
	RequestID    string `json:"request_id"`
	Session      uint64 `json:"session"`
	Turn         int    `json:"turn"`
	Class        string `json:"class"`
	Endpoint     string `json:"endpoint"`
	Outcome      string `json:"outcome"`
	ErrorClass   string `json:"error_class"`
	HTTPStatus   int    `json:"http_status"`
	ScheduledUs  int64  `json:"scheduled_us"`
	DequeuedUs   int64  `json:"dequeued_us"`
	SentUs       int64  `json:"sent_us"`
	FirstTokenUs int64  `json:"first_token_us"`
	EndUs        int64  `json:"end_us"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	PromptSent   int    `json:"prompt_tokens_sent"`
}

// e2e is one engine run against real servers, with the parts the tests
// vary; run builds everything as `llmchaos load` does.
type e2e struct {
	targets  []string
	arrival  workload.ArrivalConfig
	workload workload.Config
	seed     uint64
	grace    time.Duration
	rampUp   time.Duration
	shard    workload.Shard
	client   client.Options
	model    string
	// during, when set, runs while the engine runs (it may cancel ctx,
	// kill a server, call the admin API); it gets the run's clock.
	during func(ctx context.Context, cancel context.CancelFunc, clock *recording.RunClock)
	// tagger and observe are passed to engine.Config as they are.
	tagger  func(at time.Duration, tags *recording.Tags)
	observe func(res *recording.Result)
	// route is passed to engine.Config as it is.
	route func(endpoint int) (string, string, error)
	// live is passed to engine.Config as it is.
	live *engine.LiveLoad
	// observeEvents is passed to engine.Config.ObserveEvents.
	observeEvents func(ev *recording.StreamEvents)
}

// engineRun is what an e2e run produced.
type engineRun struct {
	stats   engine.RunStats
	sum     *recording.Summary
	results []savedResult       // in the order they were recorded
	wall    time.Duration       // Run's wall time
	clock   *recording.RunClock // the run's clock: every Result time is an offset on it
}

func (c e2e) run(tb testing.TB) *engineRun {
	tb.Helper()
	arrival := c.arrival.WithDefaults()
	w, err := workload.New(c.workload.WithDefaults(), rand.New(rand.NewPCG(c.seed, engine.SeedStreamWorkloadSetup)))
	if err != nil {
		tb.Fatal(err)
	}
	copts := c.client
	copts.Clock = recording.NewRunClock()
	copts.Seed = c.seed
	if copts.Concurrency == 0 {
		copts.Concurrency = max(arrival.MaxInFlight, arrival.Concurrency, 256)
	}
	client, err := client.New(copts)
	if err != nil {
		tb.Fatal(err)
	}
	defer client.Close()
	var saved bytes.Buffer
	reqs := recording.NewRequestWriter(&saved)
	rec := recording.NewRecorder(recording.Options{SaveRequests: reqs})
	model := c.model
	if model == "" {
		model = sim.DefaultConfig().Model
	}
	eng, err := engine.New(engine.Config{
		Targets: c.targets, Model: model, Arrival: arrival, Workload: w,
		Client: client, Recorder: rec, Seed: c.seed, Grace: c.grace, RampUp: c.rampUp, Shard: c.shard,
		Tagger: c.tagger, Observe: c.observe, Route: c.route, Live: c.live, ObserveEvents: c.observeEvents,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	if c.during != nil {
		wg.Go(func() { c.during(ctx, cancel, copts.Clock) })
	}
	start := time.Now()
	stats, err := eng.Run(ctx)
	wall := time.Since(start)
	cancel()
	wg.Wait()
	if err != nil {
		tb.Fatal(err)
	}
	if err := reqs.Flush(); err != nil {
		tb.Fatal(err)
	}
	out := &engineRun{stats: stats, sum: rec.Finish(stats.End), wall: wall, clock: copts.Clock}
	dec := json.NewDecoder(&saved)
	for dec.More() {
		var r savedResult
		if err := dec.Decode(&r); err != nil {
			tb.Fatal(err)
		}
		out.results = append(out.results, r)
	}
	return out
}

// checkAccounting checks that every scheduled request ended as exactly one
// Result: the engine's own count equals the Results recorded (and the
// lines saved), sequence numbers are 0…n−1 without gap or repeat, the
// outcomes add up, and nothing sent was lost.
func checkAccounting(tb testing.TB, r *engineRun) recording.Requests {
	tb.Helper()
	req := r.sum.Requests()
	if got, want := uint64(req.Scheduled), r.stats.Scheduled; got != want {
		tb.Errorf("recorded %d Results, engine scheduled %d", got, want)
	}
	if got, want := req.OK+req.Failed+req.Cancelled+req.Dropped, req.Scheduled; got != want {
		tb.Errorf("ok+failed+cancelled+dropped = %d, scheduled %d", got, want)
	}
	if req.Lost != 0 {
		tb.Errorf("lost = %d, want 0 (sent %d, finished %d)", req.Lost, req.Sent, req.OK+req.Failed+req.Cancelled)
	}
	if got, want := req.Sent, req.OK+req.Failed+req.Cancelled; got != want {
		tb.Errorf("sent = %d, want ok+failed+cancelled = %d", got, want)
	}
	if got, want := uint64(len(r.results)), r.stats.Scheduled; got != want {
		tb.Errorf("saved %d request lines, engine scheduled %d", got, want)
	}
	seqs := make([]uint64, len(r.results))
	for i, s := range r.results {
		seqs[i] = s.Seq
		if s.Outcome == "dropped" && s.SentUs != 0 {
			tb.Errorf("seq %d dropped but sent at %dµs", s.Seq, s.SentUs)
		}
		if s.Outcome != "dropped" && (s.SentUs < s.ScheduledUs || s.DequeuedUs < s.ScheduledUs || s.SentUs < s.DequeuedUs) {
			tb.Errorf("seq %d: scheduled %dµs, dequeued %dµs, sent %dµs: want scheduled ≤ dequeued ≤ sent", s.Seq, s.ScheduledUs, s.DequeuedUs, s.SentUs)
		}
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i) {
			tb.Errorf("sequence numbers have a gap or repeat at position %d: %d", i, s)
			break
		}
	}
	return req
}

// distMs returns metric m's distribution over the whole run in ms.
func distMs(sum *recording.Summary, m recording.Metric) (count int64, p50, p99, max float64) {
	d := sum.Distribution(m, recording.TagFilter{})
	return d.Count, float64(d.P50) / 1e3, float64(d.P99) / 1e3, float64(d.Max) / 1e3
}
