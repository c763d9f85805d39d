package capacity

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// onFirstLine calls fn once, when the first line is written to it.
type onFirstLine struct {
	once sync.Once
	fn   func()
	buf  bytes.Buffer
}

func (w *onFirstLine) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if bytes.IndexByte(p, '\n') >= 0 {
		w.once.Do(w.fn)
	}
	return len(p), nil
}

// TestSearchEndsWhenTheServerGoesAway: the server stops (its port closed)
// after the search's first step. The next step gets no answer at all, the
// pre-flight check made again fails, and the search ends there with an
// error, status server_lost and no knee, instead of bisecting down to a
// "knee" measured on steps nobody answered.
func TestSearchEndsWhenTheServerGoesAway(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search against a simulator for seconds; skipped under -short")
	}
	cfg := simconfig.Default()
	cfg.Latency, cfg.TTFT, cfg.ITL = simconfig.LatencyConstant, 20*time.Millisecond, 5*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(simCtx, ln, server.Options{Config: cfg}) }()
	stop := func() {
		stopSim()
		if err := <-served; err != nil {
			t.Errorf("simulator: %v", err)
		}
	}
	progress := &onFirstLine{fn: stop}
	defer progress.once.Do(stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Targets: []string{"http://" + ln.Addr().String() + "/v1"}, Model: cfg.Model, Mode: ModeRate,
		Arrival: workload.ArrivalConfig{Arrival: workload.ArrivalConstant},
		Workload: workload.Config{
			Name: "gone", API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(4), IgnoreEOS: true,
		}.WithDefaults(),
		SLOs: mustParse(t, "e2e: p(99)<2s"), Seed: 5,
		Search: SearchConfig{Start: 4, Growth: 2, Min: 1, Max: 64, Precision: 0.1, MaxSteps: 12},
		Length: StepLength{Requests: 20, Min: time.Second, Max: 2 * time.Second, Short: time.Second},
		Warmup: 500 * time.Millisecond, Settle: 100 * time.Millisecond, Grace: time.Second,
		Limits:   ClientLimits{MaxSendLag: time.Second},
		Progress: progress,
	})
	t.Logf("steps:\n%s", progress.buf.String())
	var lost *ServerLostError
	if !errors.As(err, &lost) {
		t.Fatalf("error %v, want a *ServerLostError", err)
	}
	if res == nil {
		t.Fatal("no result")
	}
	if res.Status != StatusServerLost || res.Knee.Load != 0 || res.Knee.Step != -1 {
		t.Errorf("status %s knee %+v, want server_lost and no knee", res.Status, res.Knee)
	}
	if len(res.Steps) != 2 || res.Steps[1].OK != 0 {
		t.Errorf("%d steps, want the one answered and the one that was not", len(res.Steps))
	}
	var text strings.Builder
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "knee: none (the server stopped answering)") {
		t.Errorf("text:\n%s", text.String())
	}
}

// TestSearchKneeIsWhatTheServerCompletes runs a search against a simulator
// that completes at most 4 requests per second (4 sequences of 1 s each)
// with an SLO so loose that only the queue can fail a step. Above 4 req/s
// the queue grows through every step while the percentiles still hold:
// such a step is saturated, so the knee is not above what the server
// completes, and its summary shows offered and completed side by side.
func TestSearchKneeIsWhatTheServerCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search against a simulator for a minute; skipped under -short")
	}
	sim := knownSim{seqs: 4, ttft: 50 * time.Millisecond, itl: 50 * time.Millisecond, tokens: 20} // 4 / 1 s
	target, model := sim.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Config{
		Targets: []string{target}, Model: model, Mode: ModeRate,
		Arrival: workload.ArrivalConfig{Arrival: workload.ArrivalConstant},
		Workload: workload.Config{
			Name: "capped", API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(sim.tokens), IgnoreEOS: true,
		}.WithDefaults(),
		SLOs: mustParse(t, "e2e: p(99)<60s", "error_rate: rate<0.05"), Seed: 9,
		Search: SearchConfig{Start: 2.5, Growth: 2, Min: 1, Max: 64, Precision: 0.25, MaxSteps: 12},
		Length: StepLength{Requests: 30, Min: 6 * time.Second, Max: 6 * time.Second, Short: 6 * time.Second},
		Warmup: time.Second, Settle: 2 * time.Second, Grace: 30 * time.Second,
		Limits:   ClientLimits{MaxSendLag: time.Second},
		Progress: io.MultiWriter(&progress),
	})
	t.Logf("steps:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	k := res.Knee
	if k.Load == 0 || k.Load > sim.knee()*1.1 {
		t.Errorf("knee %v req/s, want one not above the %v req/s the server completes", k.Load, sim.knee())
	}
	if k.CompletedRPS < 0.8*k.Load || k.OfferedRPS < 0.8*k.Load {
		t.Errorf("at the knee: offered %.2f, completed %.2f req/s for a knee of %v", k.OfferedRPS, k.CompletedRPS, k.Load)
	}
	for _, st := range res.Steps {
		if st.Load >= 1.25*sim.knee() && st.MeasureS >= 4 && st.Saturated == "" {
			t.Errorf("step %d at %v req/s completed %.2f req/s and is not saturated", st.Index, st.Load, st.CompletedRPS)
		}
	}
	if !strings.Contains(text.String(), "offered ") || !strings.Contains(text.String(), "completed ") {
		t.Errorf("the knee line lacks offered and completed:\n%s", text.String())
	}
}
