package sim

import (
	"reflect"
	"testing"
	"time"
)

// A greedy request's output is a function of its prompt (and seed, when it
// gives one), the same on every replica whatever the replica's own seed,
// and another prompt gives another answer.
func TestGreedyOutputPerPromptAndSeed(t *testing.T) {
	seed := int64(5)
	out := func(engineSeed int64, hash uint64, seed *int64) []string {
		cfg := constantConfig()
		cfg.Seed = engineSeed
		tr := run(t, newTestEngine(t, cfg), []arrival{{req: Request{PromptTokens: 10, MaxTokens: 60, Greedy: true, PromptHash: hash, Seed: seed}}}, time.Hour)
		return tr.texts[0]
	}
	if a, b := out(1, 77, nil), out(2, 77, nil); !reflect.DeepEqual(a, b) {
		t.Errorf("same prompt, greedy, two replicas: %q vs %q", a, b)
	}
	if a, b := out(1, 77, &seed), out(9, 77, &seed); !reflect.DeepEqual(a, b) {
		t.Errorf("same prompt and seed, two replicas: %q vs %q", a, b)
	}
	if a, b := out(1, 77, nil), out(1, 78, nil); reflect.DeepEqual(a, b) {
		t.Errorf("two prompts gave the same greedy answer %q", a)
	}
	if a, b := out(1, 77, nil), out(1, 77, &seed); reflect.DeepEqual(a, b) {
		t.Errorf("a seed did not change the answer %q", a)
	}
}

// divergenceRun runs the greedy request under test (prompt hash 99, 120
// tokens) alongside others and returns its tokens.
func divergenceRun(t *testing.T, cfg Config, others int) []string {
	t.Helper()
	arrivals := []arrival{{req: Request{PromptTokens: 16, MaxTokens: 120, IgnoreEOS: true, Greedy: true, PromptHash: 99}}}
	for i := range others {
		arrivals = append(arrivals, arrival{req: Request{PromptTokens: 16, MaxTokens: 120, IgnoreEOS: true, Greedy: true, PromptHash: uint64(1000 + i)}})
	}
	return run(t, newTestEngine(t, cfg), arrivals, time.Hour).texts[0]
}

// firstDiff is the index of the first token where a and b differ, -1 when none.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// Divergence batch: alone, the answer is the reference; in a batch of 16
// it leaves the reference at a near-tie token and keeps its own
// continuation after, the same for the same batch every time. Without the
// mode the batch changes nothing.
func TestDivergenceBatch(t *testing.T) {
	cfg := constantConfig()
	ref := divergenceRun(t, cfg, 0)
	if got := divergenceRun(t, cfg, 15); !reflect.DeepEqual(got, ref) {
		t.Fatalf("divergence off: a batch changed the answer at token %d", firstDiff(got, ref))
	}
	cfg.Divergence = DivergenceBatch
	if got := divergenceRun(t, cfg, 0); !reflect.DeepEqual(got, ref) {
		t.Fatalf("divergence batch, alone: answer differs at token %d", firstDiff(got, ref))
	}
	got := divergenceRun(t, cfg, 15)
	at := firstDiff(got, ref)
	if at < 0 {
		t.Fatal("divergence batch, batch of 16: the answer is the reference")
	}
	if again := divergenceRun(t, cfg, 15); !reflect.DeepEqual(again, got) {
		t.Errorf("the same batch gave two answers (at token %d)", firstDiff(again, got))
	}
	if same := 0; at+1 < len(got) {
		for i := at + 1; i < len(got); i++ {
			if got[i] == ref[i] {
				same++
			}
		}
		if same > (len(got)-at)/4 {
			t.Errorf("after the divergence at %d, %d tokens still match the reference: the continuation did not change", at, same)
		}
	}
}

// Divergence batch with a minimum batch: a batch smaller than
// DivergenceMinBatch keeps the reference answer, one that size leaves it.
func TestDivergenceMinBatch(t *testing.T) {
	cfg := constantConfig()
	ref := divergenceRun(t, cfg, 0)
	cfg.Divergence = DivergenceBatch
	cfg.DivergenceMinBatch = 17
	if got := divergenceRun(t, cfg, 15); !reflect.DeepEqual(got, ref) {
		t.Errorf("min batch 17, batch of 16: answer differs at token %d", firstDiff(got, ref))
	}
	cfg.DivergenceMinBatch = 16
	if got := divergenceRun(t, cfg, 15); firstDiff(got, ref) < 0 {
		t.Error("min batch 16, batch of 16: the answer is the reference")
	}
}

// Divergence preempt: a sequence that was preempted and recomputed goes on
// with another continuation from the token it had reached; without the mode
// preemption leaves the answer as it was.
func TestDivergencePreempt(t *testing.T) {
	answers := func(mode string) (texts [][]string, preempted int64) {
		cfg := smallConfig(LatencyConstant, 10) // 160 tokens of KV for four sequences of 64
		cfg.MaxModelLen = 64
		cfg.Divergence = mode
		e := newTestEngine(t, cfg)
		var arrivals []arrival
		for i := range 4 {
			arrivals = append(arrivals, arrival{req: Request{PromptTokens: 16, MaxTokens: 48, IgnoreEOS: true, Greedy: true, PromptHash: uint64(500 + i)}})
		}
		tr := run(t, e, arrivals, time.Hour)
		return tr.texts, e.Stats().Preemptions
	}
	alone := func(i int) []string {
		cfg := smallConfig(LatencyConstant, 10)
		cfg.MaxModelLen = 64
		return run(t, newTestEngine(t, cfg), []arrival{{req: Request{PromptTokens: 16, MaxTokens: 48, IgnoreEOS: true, Greedy: true, PromptHash: uint64(500 + i)}}}, time.Hour).texts[0]
	}
	off, n := answers(DivergenceOff)
	if n == 0 {
		t.Fatal("no preemption happened; the test's KV pool is too large")
	}
	for i, got := range off {
		if want := alone(i); !reflect.DeepEqual(got, want) {
			t.Errorf("divergence off: sequence %d changed by preemption at token %d", i, firstDiff(got, want))
		}
	}
	on, _ := answers(DivergencePreempt)
	changed := 0
	for i, got := range on {
		if firstDiff(got, alone(i)) > 0 {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("divergence preempt: %d preemptions changed no answer", n)
	}
}
