package gameday

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// skipShort skips the tests that run a game day for seconds.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a game day with real load for seconds; skipped under -short")
	}
}

// startSim serves the real simulator in this process with constant
// latency and returns its root URL.
func startSim(t *testing.T) string {
	t.Helper()
	c := sim.DefaultConfig()
	c.Latency, c.TTFT, c.ITL, c.MeanOutputTokens = sim.LatencyConstant, 20*time.Millisecond, 2*time.Millisecond, 8
	return servertest.Start(t, server.Options{Config: c})
}

// testExperiment is a game day against the simulators at roots (through
// the in-process proxies a game day puts in front of each), with a
// timeline of one fault and the blast radius given.
func testExperiment(roots []string, br *spec.BlastRadius) *spec.Spec {
	urls := make([]string, len(roots))
	for i, r := range roots {
		urls[i] = r + "/v1"
	}
	return &spec.Spec{
		APIVersion: spec.APIVersion, Kind: spec.KindExperiment,
		Metadata: spec.Metadata{Name: "console-test"},
		Target:   spec.Target{LLM: &spec.LLMTarget{URLs: urls, Model: sim.DefaultConfig().Model}},
		Workload: spec.Workload{Rate: spec.PerSecondRate(20), Arrival: "constant", Duration: spec.Duration(time.Minute), InputTokens: mustDist("16"), OutputTokens: mustDist("4")},
		Faults: []spec.Fault{{Name: "planned-errors", Type: "http.error", At: spec.Duration(10 * time.Second), Duration: spec.Duration(2 * time.Second),
			Params: map[string]any{"status": 503, "probability": 0.5}}},
		Thresholds:  spec.Thresholds{"requests_lost": {{Threshold: "count==0"}}},
		Recovery:    spec.Recovery{Window: spec.Duration(time.Second), Hold: spec.Duration(time.Second), LatencyBand: 20},
		BlastRadius: br,
	}
}

func mustDist(s string) spec.Dist {
	var d spec.Dist
	if err := d.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return d
}

// game is a game day running in the test's process.
type game struct {
	t      *testing.T
	url    string
	tokens []Token
	dir    string
	out    *testutil.SyncBuffer
	done   chan struct{}
	res    *Result
	err    error
}

// startGame runs a game day of exp with tokens for holders, and waits
// until its load runs.
func startGame(t *testing.T, exp *spec.Spec, holders ...string) *game {
	t.Helper()
	g := &game{t: t, dir: t.TempDir(), out: &testutil.SyncBuffer{}, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(g.done)
		g.res, g.err = Run(context.Background(), Config{
			Spec: exp, RunDir: g.dir, Holders: holders, NoGuard: true, Out: g.out,
			Observe: experiments.ObserveOptions{Scrape: true, ScrapeInterval: 500 * time.Millisecond, Warn: func(error) {}},
			Ready: func(url string, tokens []Token) {
				g.url, g.tokens = url, tokens
				close(ready)
			},
		})
	}()
	select {
	case <-ready:
	case <-g.done:
		t.Fatalf("game day ended before serving: %v\n%s", g.err, g.out)
	case <-time.After(30 * time.Second):
		t.Fatalf("console not serving within 30s\n%s", g.out)
	}
	t.Cleanup(func() {
		select {
		case <-g.done:
			return
		default:
		}
		g.call("POST", "/api/end", nil, nil)
		select {
		case <-g.done:
		case <-time.After(60 * time.Second):
			t.Errorf("game day did not end within 60s\n%s", g.out)
		}
	})
	g.waitFor(30*time.Second, "the load running", func() bool {
		var st statusBody
		return g.call("GET", "/api/status", nil, &st) == http.StatusOK && st.Status.NowS > 0 && st.Status.GateOpen
	})
	return g
}

// token is holder's secret (the first token's without a holder).
func (g *game) token(holder string) string {
	for _, t := range g.tokens {
		if holder == "" || t.Holder == holder {
			return t.Secret
		}
	}
	g.t.Fatalf("no token for %q", holder)
	return ""
}

// call sends a JSON request with the first token and decodes the answer
// into out (when not nil); it returns the status.
func (g *game) call(method, path string, body, out any) int {
	return g.callAs("", method, path, body, out)
}

// callAs is call with holder's token.
func (g *game) callAs(holder, method, path string, body, out any) int {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			g.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.url+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+g.token(holder))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			g.t.Errorf("%s %s: answer %q: %v", method, path, b, err)
		}
	}
	return res.StatusCode
}

// waitFor polls cond every 50 ms until it holds, failing after limit.
func (g *game) waitFor(limit time.Duration, what string, cond func() bool) {
	g.t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			g.t.Fatalf("not %s within %v\n%s", what, limit, g.out)
		case <-g.done:
			g.t.Fatalf("game day ended before %s: %v\n%s", what, g.err, g.out)
		case <-tick.C:
		}
	}
}

// end ends the game day through the API and waits for Run to return.
func (g *game) end(holder string) {
	g.t.Helper()
	if code := g.callAs(holder, "POST", "/api/end", nil, nil); code != http.StatusAccepted {
		g.t.Fatalf("POST /api/end: %d", code)
	}
	select {
	case <-g.done:
	case <-time.After(60 * time.Second):
		g.t.Fatalf("game day did not end within 60s\n%s", g.out)
	}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string
	data []byte
}

// readSSE reads events from r onto the returned channel until r ends.
func readSSE(r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = append(ev.data, strings.TrimPrefix(line, "data: ")...)
			}
		}
	}()
	return ch
}
