package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresetsValidate(t *testing.T) {
	t.Parallel()
	var names []string
	for _, p := range Presets() {
		names = append(names, p.Name)
		t.Run(p.Name, func(t *testing.T) {
			if p.Description == "" || p.Workload.Name != p.Name {
				t.Errorf("preset %q: description %q, class %q", p.Name, p.Description, p.Workload.Name)
			}
			if err := p.Workload.WithDefaults().Validate(); err != nil {
				t.Errorf("workload: %v", err)
			}
			if _, err := New(p.Workload.WithDefaults(), testRand(1)); err != nil {
				t.Errorf("New: %v", err)
			}
			// A preset leaves the run's end to the user.
			if p.Arrival.Duration != 0 || p.Arrival.Requests != 0 {
				t.Errorf("preset sets the run's end: %+v", p.Arrival)
			}
			arr := p.Arrival.Overlay(ArrivalConfig{Duration: 30 * time.Second}).WithDefaults()
			if err := arr.Validate(); err != nil {
				t.Errorf("arrival with duration 30s: %v", err)
			}
			if arr.OpenLoop() {
				if _, err := NewArrivals(arr, testRand(1)); err != nil {
					t.Errorf("NewArrivals: %v", err)
				}
			}
		})
	}
	if want := []string{"chat", "batch", "completion", "agent"}; !slices.Equal(names, want) {
		t.Errorf("presets %v, want %v", names, want)
	}
	if _, err := LookupPreset("chat"); err != nil {
		t.Error(err)
	}
	if _, err := LookupPreset("chatty"); err == nil || !strings.Contains(err.Error(), "want one of chat, batch, completion, agent") {
		t.Errorf("LookupPreset(chatty) = %v", err)
	}
}

// presetSample draws n sessions of a preset.
func presetSample(t *testing.T, name string, n int) []*Session {
	t.Helper()
	p, err := LookupPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(p.Workload.WithDefaults(), testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	rng := testRand(2)
	out := make([]*Session, n)
	for i := range out {
		out[i] = w.Next(rng, Arrival{})
	}
	return out
}

func median(xs []int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

func TestPresetNumbers(t *testing.T) {
	t.Parallel()
	// The documented numbers are what the presets draw (medians of 20,000
	// sessions, standard error well under 1%; ±3% leaves room for rounding
	// small values such as 13).
	check := func(name, what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.03*want+0.5 {
			t.Errorf("%s %s median = %v, want %v", name, what, got, want)
		}
	}
	for _, tt := range []struct {
		name        string
		in, out     float64
		cancelShare float64
		api         bool // chat
	}{
		{"chat", 1020, 129, 0, true},
		{"batch", 1024, 1024, 0, true},
		{"completion", 1500, 13, 0.3, false},
	} {
		ss := presetSample(t, tt.name, 20_000)
		var in, out []int
		cancelled := 0
		for _, s := range ss {
			if s.Chat != tt.api || len(s.Turns) != 1 {
				t.Fatalf("%s: session %+v", tt.name, s)
			}
			in, out = append(in, s.Turns[0].UserTokens), append(out, s.Turns[0].MaxTokens)
			if c := s.Turns[0].CancelAfter; c != 0 {
				cancelled++
				if c < 100*time.Millisecond || c > 400*time.Millisecond {
					t.Fatalf("%s: cancel after %v, want 100–400ms", tt.name, c)
				}
			}
			if p := PlannedPromptTokens(s)[0] + s.Turns[0].MaxTokens; p > 8192 {
				t.Fatalf("%s: prompt + output = %d tokens, over 8192", tt.name, p)
			}
		}
		check(tt.name, "input", median(in), tt.in)
		check(tt.name, "output", median(out), tt.out)
		// sd of the share is 0.0032 at 0.3; ±0.02 is over 6σ.
		if got := float64(cancelled) / float64(len(ss)); math.Abs(got-tt.cancelShare) > 0.02 {
			t.Errorf("%s: cancelled share %.3f, want %v", tt.name, got, tt.cancelShare)
		}
	}
}

func TestPresetAgentContext(t *testing.T) {
	t.Parallel()
	// The agent preset's documented context growth: medians of about 2.4k
	// tokens at the first turn and about 7k at the eighth; and its plan
	// (replies at max_tokens, so an upper bound) keeps prompt + output under
	// 8192 for all but about 1% of turns (checked against 2%).
	ss := presetSample(t, "agent", 5000)
	var first, eighth []int
	turns, over := 0, 0
	for _, s := range ss {
		if len(s.Turns) < 3 || len(s.Turns) > 8 || s.SystemTok != 2048 || s.ThinkTime <= 0 || s.ThinkTime > 30*time.Second {
			t.Fatalf("agent session: %d turns, system %d tokens, think %v", len(s.Turns), s.SystemTok, s.ThinkTime)
		}
		plan := PlannedPromptTokens(s)
		first = append(first, plan[0])
		if len(plan) == 8 {
			eighth = append(eighth, plan[7])
		}
		for i, p := range plan {
			if i > 0 && p <= plan[i-1] {
				t.Fatalf("context shrank: %v", plan)
			}
			turns++
			if p+s.Turns[i].MaxTokens > 8192 {
				over++
			}
		}
	}
	if m := median(first); m < 2300 || m > 2500 {
		t.Errorf("first-turn context median %v, want about 2.4k", m)
	}
	if m := median(eighth); m < 6500 || m > 7500 {
		t.Errorf("eighth-turn context median %v, want about 7k", m)
	}
	if share := float64(over) / float64(turns); share > 0.02 {
		t.Errorf("%.1f%% of turns plan over 8192 tokens, want about 1%% (≤ 2%%)", 100*share)
	}
	t.Logf("agent: %.2f%% of turns plan prompt + max_tokens over 8192", 100*float64(over)/float64(turns))
}
