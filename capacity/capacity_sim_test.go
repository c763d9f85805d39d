package capacity

import (
	"bytes"
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// knownSim is a simulator whose capacity follows from its configuration
// alone. In constant latency mode every admitted sequence takes exactly
// TTFT to its first token and ITL to each next one, and at most
// MaxNumSeqs run at once: a request that asks for N tokens with
// ignore_eos holds a slot for S = TTFT + (N − 1) × ITL, so the replica
// serves at most MaxNumSeqs / S requests per second. Below that rate, with
// evenly spaced arrivals, no request waits for a slot (a D/D/c queue);
// above it, the waiting queue grows by the excess every second and TTFT
// grows with it, without bound: the knee is sharp and sits exactly at
// MaxNumSeqs / S.
type knownSim struct {
	seqs      int
	ttft, itl time.Duration
	tokens    int
}

// service is the time a request holds a slot.
func (k knownSim) service() time.Duration { return k.ttft + time.Duration(k.tokens-1)*k.itl }

// knee is the replica's capacity in requests per second.
func (k knownSim) knee() float64 { return float64(k.seqs) / k.service().Seconds() }

func (k knownSim) start(t *testing.T) (target, model string) {
	cfg := simconfig.Default()
	cfg.Latency, cfg.TTFT, cfg.ITL, cfg.MaxNumSeqs = simconfig.LatencyConstant, k.ttft, k.itl, k.seqs
	return servertest.Start(t, server.Options{Config: cfg}) + "/v1", cfg.Model
}

// searchStart picks, among a few starting loads, the one whose ideal
// search (Next against a perfect knee) keeps every step farthest from
// the knee: a step a fraction of a percent off the knee would be decided
// by the machine's timing noise rather than by the server. It returns the
// start, the ideal steps' loads and that distance.
func searchStart(t *testing.T, s SearchConfig, l StepLength, knee float64) (start float64, want []float64, margin float64) {
	t.Helper()
	for _, st := range []float64{4, 5, 6, 7, 9, 11, 13} {
		s.Start = st
		probes, _ := driveLengths(t, s, kneeAt(knee), &l)
		m := math.Inf(1)
		for _, p := range probes {
			m = math.Min(m, math.Abs(p.Load-knee)/knee)
		}
		if m > margin {
			start, want, margin = st, loads(probes), m
		}
	}
	return start, want, margin
}

// TestSearchFindsTheSimulatorsKnee runs the whole search against a
// simulator whose knee is known from its configuration (knownSim) and
// checks that the knee found lies within the precision asked of the
// known one, that the search took exactly the steps the ideal search takes
// against that knee (so a seed repeats it), that the steps below the knee
// passed and those above failed on the TTFT SLO, and that the outputs
// render. Its steps are short (about 2 s of measurement): the make test
// variant of a search that would take minutes with the default lengths.
func TestSearchFindsTheSimulatorsKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search against a simulator for half a minute; skipped under -short")
	}
	sim := knownSim{seqs: 20, ttft: 50 * time.Millisecond, itl: 50 * time.Millisecond, tokens: 6}
	knee := sim.knee() // 20 / 0.3 s ≈ 66.7 req/s
	target, model := sim.start(t)

	ths, err := assertions.ParseFlags([]string{"ttft: p(50)<" + strconv.Itoa(int(sim.ttft.Milliseconds())+30) + "ms", "error_rate: rate<0.05"})
	if err != nil {
		t.Fatal(err)
	}
	search := SearchConfig{Growth: 2, Min: 1, Max: 1000, Precision: 0.05, MaxSteps: 30}
	length := StepLength{Requests: 150, Min: 2 * time.Second, Max: 3 * time.Second, Short: time.Second}
	start, wantLoads, margin := searchStart(t, search, length, knee)
	if margin < 0.02 {
		t.Fatalf("the ideal search comes within %.1f%% of the knee: choose another simulator", 100*margin)
	}
	search.Start = start
	cfg := Config{
		Targets: []string{target}, Model: model, Mode: ModeRate,
		Arrival: workload.ArrivalConfig{Arrival: workload.ArrivalConstant},
		Workload: workload.Config{
			Name: "known", API: workload.APIChat, InputTokens: workload.FixedDist(16),
			OutputTokens: workload.FixedDist(sim.tokens), IgnoreEOS: true,
		}.WithDefaults(),
		SLOs: ths, Seed: 7, Search: search,
		Length: length,
		Warmup: 2 * time.Second, Settle: 300 * time.Millisecond, Grace: 2 * time.Second,
		// This machine is shared with other tests: its CPU is no sign of
		// this client's limit, and the race detector slows sends.
		Limits: ClientLimits{MinSentShare: 0.9, MaxSendLag: time.Second, MaxDropShare: 0.01},
	}
	var progress bytes.Buffer
	cfg.Progress = &progress
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	t.Logf("known knee %.2f req/s (margin %.1f%%); steps:\n%s", knee, 100*margin, progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFound {
		t.Fatalf("status %s: %s", res.Status, res.Summary)
	}
	k := res.Knee
	if k.Lo > knee || k.Hi <= knee || k.Hi-k.Lo > 0.05*k.Lo*(1+1e-9) {
		t.Errorf("bracket [%v, %v] does not hold the known knee %.2f within 5%%", k.Lo, k.Hi, knee)
	}
	if got := (knee - k.Load) / knee; got > 0.05 {
		t.Errorf("knee %v is %.1f%% below the known %.2f", k.Load, 100*got, knee)
	}
	var got []float64
	for _, st := range res.Steps {
		got = append(got, st.Load)
		if st.Seed != StepSeed(cfg.Seed, st.Index) {
			t.Errorf("step %d's seed %d is not derived from the search's", st.Index, st.Seed)
		}
		wantPass := st.Load <= knee
		if (st.Verdict == Pass) != wantPass {
			t.Errorf("step %d at %v: %s, want pass=%v (%+v)", st.Index, st.Load, st.Verdict, wantPass, st.SLOs)
		}
		if st.Full && st.Verdict != ClientLimited && math.Abs(st.AchievedRPS-st.Load)/st.Load > 0.1 {
			t.Errorf("step %d at %v req/s sent %.2f req/s", st.Index, st.Load, st.AchievedRPS)
		}
	}
	if !slices.Equal(got, wantLoads) {
		t.Errorf("loads %v, want the ideal search's %v", got, wantLoads)
	}
	if k.ThroughputRPS < 0.9*k.Load || k.GoodputRPS <= 0 || k.OutputTokensPerS <= 0 {
		t.Errorf("at the knee: %+v", k)
	}
	if os.Getenv("CAPACITY_KEEP") != "" {
		_ = res.WriteFile(os.Getenv("CAPACITY_KEEP"))
	}
	var text bytes.Buffer
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
}

// TestConcurrencySearch varies a closed loop's users against the same
// kind of simulator: up to MaxNumSeqs users no request waits for a slot;
// each user beyond waits a whole service time per round, so the mean
// TTFT grows by (users − MaxNumSeqs) / users × S. With ttft avg < TTFT +
// 30 ms that knee is at MaxNumSeqs + 2 users (27 ms for 22, 39 ms for 23
// with S = 300 ms); a coarse precision keeps the test short.
func TestConcurrencySearch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search for seconds; skipped under -short")
	}
	sim := knownSim{seqs: 20, ttft: 50 * time.Millisecond, itl: 50 * time.Millisecond, tokens: 6}
	target, model := sim.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Targets: []string{target}, Model: model, Mode: ModeConcurrency,
		Workload: workload.Config{
			Name: "known", API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(sim.tokens), IgnoreEOS: true,
		}.WithDefaults(),
		SLOs: mustParse(t, "ttft: avg<80ms"), Seed: 3,
		Search: SearchConfig{Start: 4, Growth: 2, Precision: 0.25},
		Length: StepLength{Requests: 100, Min: 2 * time.Second, Max: 3 * time.Second, Short: time.Second},
		Warmup: time.Second, Settle: 200 * time.Millisecond, Grace: 2 * time.Second,
		Limits: ClientLimits{MaxSendLag: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = WriteText(&b, res)
	t.Logf("\n%s", b.String())
	knee := float64(sim.seqs + 2)
	if res.Status != StatusFound || res.Unit != "users" || res.Knee.Lo > knee || res.Knee.Hi <= knee {
		t.Errorf("status %s, bracket [%v, %v] %s; want found around %v users", res.Status, res.Knee.Lo, res.Knee.Hi, res.Unit, knee)
	}
	for _, st := range res.Steps {
		if st.Load != math.Trunc(st.Load) {
			t.Errorf("step %d at %v users", st.Index, st.Load)
		}
		if st.Full && st.Expected != 0 {
			t.Errorf("step %d: a closed loop has no schedule to fall behind, expected %v", st.Index, st.Expected)
		}
	}
}
