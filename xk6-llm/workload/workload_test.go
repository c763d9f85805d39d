package workload

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestWorkload(t *testing.T, c Config) Workload {
	t.Helper()
	w, err := New(c.WithDefaults(), testRand(11))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return w
}

func TestWorkloadSynthetic(t *testing.T) {
	t.Parallel()
	for _, api := range []APIKind{APIChat, APICompletions} {
		t.Run(string(api), func(t *testing.T) {
			w := newTestWorkload(t, Config{Name: "x", API: api, InputTokens: FixedDist(100), OutputTokens: UniformDist(10, 20)})
			rng := testRand(1)
			seen := map[string]bool{}
			for range 1000 {
				s := w.Next(rng, Arrival{})
				if s.Class != "x" || s.Chat != (api == APIChat) || len(s.Turns) != 1 || s.System != "" || s.ThinkTime != 0 {
					t.Fatalf("session = %+v", s)
				}
				tu := s.Turns[0]
				if tu.UserTokens != 100 || EstimateTokens(tu.User) != 100 {
					t.Fatalf("user turn %d tokens (estimated %d), want 100", tu.UserTokens, EstimateTokens(tu.User))
				}
				if tu.MaxTokens < 10 || tu.MaxTokens > 20 || tu.MinTokens != 0 || tu.IgnoreEOS || tu.CancelAfter != 0 || tu.CancelAfterTokens != 0 {
					t.Fatalf("turn = %+v", tu)
				}
				seen[tu.User] = true
				r := BuildRequest("m", s, 0, nil)
				if !r.Stream || r.Model != "m" || r.MaxTokens != tu.MaxTokens {
					t.Fatalf("request = %+v", r)
				}
				if api == APIChat {
					if want := []Message{{Role: "user", Content: tu.User}}; !reflect.DeepEqual(r.Messages, want) || r.PromptTokens != 104 {
						t.Fatalf("chat request messages %v, prompt tokens %d; want one user message, 104", r.Messages, r.PromptTokens)
					}
				} else if r.Prompt != tu.User || r.PromptTokens != 100 || r.Messages != nil {
					t.Fatalf("completions request prompt tokens %d, want 100 and the turn's text", r.PromptTokens)
				}
			}
			if len(seen) != 1000 {
				t.Errorf("%d distinct prompts out of 1000", len(seen))
			}
		})
	}
}

func TestWorkloadPrefixes(t *testing.T) {
	t.Parallel()
	// 20,000 sessions with share 0.3: the realised share's sd is 0.0032, so
	// ±0.015 is over 4.5σ.
	for _, api := range []APIKind{APIChat, APICompletions} {
		t.Run(string(api), func(t *testing.T) {
			w := newTestWorkload(t, Config{API: api, InputTokens: FixedDist(100), PrefixCount: 3, PrefixTokens: 50, PrefixShare: 0.3})
			rng := testRand(2)
			const n = 20_000
			with := 0
			systems := map[string]int{}
			for range n {
				s := w.Next(rng, Arrival{})
				r := BuildRequest("m", s, 0, nil)
				if s.System == "" {
					continue
				}
				with++
				systems[s.System]++
				if s.SystemTok != 50 || EstimateTokens(s.System) != 50 {
					t.Fatalf("system prompt %d tokens (estimated %d), want 50", s.SystemTok, EstimateTokens(s.System))
				}
				want := 50 + 100
				if api == APIChat {
					want += 2 * ChatMessageOverheadTokens
					if r.Messages[0].Role != "system" || r.Messages[0].Content != s.System {
						t.Fatalf("first message = %+v, want the system prompt", r.Messages[0])
					}
				} else if !strings.HasPrefix(r.Prompt, s.System) {
					t.Fatal("completions prompt does not start with the shared prefix")
				}
				if r.PromptTokens != want || r.PromptTokens != estimateRequest(r) {
					t.Fatalf("prompt tokens %d (recomputed %d), want %d", r.PromptTokens, estimateRequest(r), want)
				}
			}
			if got := float64(with) / n; math.Abs(got-0.3) > 0.015 {
				t.Errorf("share with a shared prefix = %.4f, want 0.3 ±0.015", got)
			}
			if len(systems) != 3 {
				t.Errorf("%d distinct system prompts, want 3 reused", len(systems))
			}
		})
	}
}

// estimateRequest recomputes a request's prompt estimate from what is sent.
func estimateRequest(r *Request) int {
	if r.Chat {
		return EstimateChatTokens(r.Messages)
	}
	return EstimateTokens(r.Prompt)
}

func TestWorkloadSessionsGrow(t *testing.T) {
	t.Parallel()
	for _, api := range []APIKind{APIChat, APICompletions} {
		t.Run(string(api), func(t *testing.T) {
			w := newTestWorkload(t, Config{
				API: api, InputTokens: UniformDist(20, 80), OutputTokens: UniformDist(5, 30),
				PrefixCount: 1, PrefixTokens: 64, Turns: FixedDist(5), ThinkTime: FixedDuration(2 * time.Second),
			})
			rng := testRand(3)
			for range 50 {
				s := w.Next(rng, Arrival{})
				if len(s.Turns) != 5 || s.ThinkTime != 2*time.Second {
					t.Fatalf("session with %d turns, think %v; want 5, 2s", len(s.Turns), s.ThinkTime)
				}
				plan := PlannedPromptTokens(s)
				var history []Message
				for i, tu := range s.Turns {
					r := BuildRequest("m", s, i, history)
					if r.PromptTokens != plan[i] || r.PromptTokens != estimateRequest(r) {
						t.Fatalf("turn %d: prompt tokens %d, plan %d, recomputed %d", i, r.PromptTokens, plan[i], estimateRequest(r))
					}
					if i > 0 && plan[i] <= plan[i-1]+tu.UserTokens {
						t.Fatalf("turn %d: context %d did not grow by the reply and the new turn from %d", i, plan[i], plan[i-1])
					}
					if api == APIChat && len(r.Messages) != 2*i+2 {
						t.Fatalf("turn %d: %d messages, want system + %d history + 1", i, len(r.Messages), 2*i)
					}
					// The engine's side: append the reply it received (here
					// exactly max_tokens long) and go on.
					history = AppendTurn(history, tu, strings.Repeat("r", 4*tu.MaxTokens))
				}
			}
		})
	}
	// A one-turn session has no think time even when one is configured.
	w := newTestWorkload(t, Config{InputTokens: FixedDist(5), Turns: FixedDist(1), ThinkTime: FixedDuration(time.Second)})
	if s := w.Next(testRand(1), Arrival{}); s.ThinkTime != 0 || len(s.Turns) != 1 {
		t.Errorf("one-turn session = %+v, want no think time", s)
	}
}

func TestWorkloadCancellation(t *testing.T) {
	t.Parallel()
	w := newTestWorkload(t, Config{
		InputTokens: FixedDist(10), OutputTokens: FixedDist(50),
		CancelShare: 0.25, CancelAfterTokens: UniformDist(1, 5), CancelAfter: FixedDuration(300 * time.Millisecond),
	})
	rng := testRand(4)
	const n = 20_000
	cancelled := 0
	for range n {
		tu := w.Next(rng, Arrival{}).Turns[0]
		switch {
		case tu.CancelAfterTokens == 0 && tu.CancelAfter == 0:
		case tu.CancelAfterTokens >= 1 && tu.CancelAfterTokens <= 5 && tu.CancelAfter == 300*time.Millisecond:
			cancelled++
			if r := BuildRequest("m", &Session{Chat: true, Turns: []Turn{tu}}, 0, nil); r.CancelAfterTokens != tu.CancelAfterTokens || r.CancelAfter != tu.CancelAfter {
				t.Fatalf("request lost the cancel plan: %+v", r)
			}
		default:
			t.Fatalf("turn cancel plan = %d tokens / %v", tu.CancelAfterTokens, tu.CancelAfter)
		}
	}
	// sd of the share is √(0.25·0.75/20000) = 0.0031; ±0.015 is over 4.8σ.
	if got := float64(cancelled) / n; math.Abs(got-0.25) > 0.015 {
		t.Errorf("cancelled share = %.4f, want 0.25 ±0.015", got)
	}
}

func TestWorkloadTraceLengths(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"chat", Config{API: APIChat, InputTokens: FixedDist(10)}},
		{"chat with prefix", Config{API: APIChat, InputTokens: FixedDist(10), PrefixCount: 2, PrefixTokens: 100}},
		{"completions", Config{API: APICompletions, InputTokens: FixedDist(10), OutputTokens: FixedDist(99)}},
		{"completions with prefix", Config{API: APICompletions, InputTokens: FixedDist(10), PrefixCount: 2, PrefixTokens: 100}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWorkload(t, tt.cfg)
			s := w.Next(testRand(5), Arrival{InputTokens: 500, OutputTokens: 20})
			r := BuildRequest("m", s, 0, nil)
			if r.PromptTokens != 500 || r.MaxTokens != 20 {
				t.Errorf("trace lengths 500/20 gave a request of %d prompt tokens, max_tokens %d", r.PromptTokens, r.MaxTokens)
			}
		})
	}
}

func TestWorkloadDataset(t *testing.T) {
	t.Parallel()
	cfg := Config{Dataset: datasetPath("prompts.jsonl")}
	w := newTestWorkload(t, cfg)
	rng := testRand(6)
	// Each cycle visits every entry once, in a seeded order.
	var firstCycle []string
	for cycle := range 3 {
		var got []string
		for range 3 {
			s := w.Next(rng, Arrival{})
			got = append(got, s.Turns[0].User)
			if s.Turns[0].UserTokens != EstimateTokens(s.Turns[0].User) {
				t.Fatalf("UserTokens %d, want %d", s.Turns[0].UserTokens, EstimateTokens(s.Turns[0].User))
			}
		}
		if cycle == 0 {
			firstCycle = got
			seen := map[string]bool{}
			for _, u := range got {
				seen[u] = true
			}
			if len(seen) != 3 {
				t.Fatalf("first cycle %q repeats an entry", got)
			}
		} else if !reflect.DeepEqual(got, firstCycle) {
			t.Fatalf("cycle %d = %q, want the same order %q", cycle, got, firstCycle)
		}
	}

	// Output lengths: the dataset's, replaced by output_tokens, replaced
	// for the first turn by a trace's.
	w = newTestWorkload(t, Config{Dataset: datasetPath("messages.jsonl")})
	lengths := map[string][]int{}
	for range 2 {
		s := w.Next(rng, Arrival{})
		for _, tu := range s.Turns {
			lengths[s.System] = append(lengths[s.System], tu.MaxTokens)
		}
		if s.System == "You are a terse SRE assistant." && (len(s.Turns) != 2 || s.SystemTok != EstimateTokens(s.System)) {
			t.Errorf("system entry = %+v", s)
		}
	}
	want := map[string][]int{
		"You are a terse SRE assistant.": {EstimateTokens("Too many requests: the server is throttling you; back off and retry later."), 40},
		"":                               {EstimateTokens("One answer to both parts.")},
	}
	if !reflect.DeepEqual(lengths, want) {
		t.Errorf("output lengths = %v, want %v", lengths, want)
	}
	w = newTestWorkload(t, Config{Dataset: datasetPath("messages.jsonl"), OutputTokens: FixedDist(7)})
	s := w.Next(rng, Arrival{OutputTokens: 3})
	if s.Turns[0].MaxTokens != 3 || (len(s.Turns) > 1 && s.Turns[1].MaxTokens != 7) {
		t.Errorf("overridden lengths = %+v", s.Turns)
	}

	if _, err := New(Config{Dataset: datasetPath("prompts.jsonl"), IgnoreEOS: true}.WithDefaults(), testRand(1)); err == nil || !strings.Contains(err.Error(), "without an output length") {
		t.Errorf("ignore_eos with a length-less dataset entry: %v", err)
	}
	if _, err := New(Config{Dataset: datasetPath("bad_lines.jsonl")}.WithDefaults(), testRand(1)); err == nil || !strings.Contains(err.Error(), "bad_lines.jsonl:3") {
		t.Errorf("bad dataset: %v", err)
	}
}

func TestWorkloadDeterministic(t *testing.T) {
	t.Parallel()
	cfg := Config{InputTokens: LognormalDist(200, 0.5), OutputTokens: NormalDist(50, 10), Turns: UniformDist(1, 4),
		ThinkTime: FixedDuration(time.Second), PrefixCount: 2, PrefixTokens: 30, PrefixShare: 0.5, CancelShare: 0.2, CancelAfterTokens: FixedDist(3)}
	draw := func(buildSeed, rngSeed uint64) []*Session {
		w, err := New(cfg.WithDefaults(), testRand(buildSeed))
		if err != nil {
			t.Fatal(err)
		}
		rng := testRand(rngSeed)
		var out []*Session
		for range 200 {
			out = append(out, w.Next(rng, Arrival{}))
		}
		return out
	}
	a, b := draw(1, 2), draw(1, 2)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seeds gave different sessions")
	}
	if reflect.DeepEqual(a, draw(1, 3)) {
		t.Error("a different Next rng gave the same sessions")
	}
}

func TestWorkloadConcurrentNext(t *testing.T) {
	t.Parallel()
	w := newTestWorkload(t, Config{Dataset: datasetPath("prompts.jsonl"), OutputTokens: FixedDist(5)})
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for g := range 8 {
		wg.Go(func() {
			rng := testRand(uint64(g))
			for range 300 {
				u := w.Next(rng, Arrival{}).Turns[0].User
				mu.Lock()
				counts[u]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// 2,400 draws over 3 entries in whole cycles: 800 each.
	for u, n := range counts {
		if n != 800 {
			t.Errorf("entry %q drawn %d times, want 800", u, n)
		}
	}
}

func TestWorkloadMinTokensAndIgnoreEOS(t *testing.T) {
	t.Parallel()
	w := newTestWorkload(t, Config{InputTokens: FixedDist(5), OutputTokens: FixedDist(20), MinTokens: 50, IgnoreEOS: true})
	tu := w.Next(testRand(1), Arrival{}).Turns[0]
	if tu.MinTokens != 20 || !tu.IgnoreEOS {
		t.Errorf("turn = %+v, want min_tokens capped at 20 and ignore_eos", tu)
	}
	r := BuildRequest("m", &Session{Turns: []Turn{tu}}, 0, nil)
	if r.MinTokens != 20 || !r.IgnoreEOS || r.MaxTokens != 20 {
		t.Errorf("request = %+v", r)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"synthetic", Config{InputTokens: FixedDist(5)}, nil},
		{"dataset", Config{Dataset: "d.jsonl", DatasetFormat: DatasetJSONL}, nil},
		{"no input", Config{}, []string{"input_tokens is required without dataset"}},
		{"input and dataset", Config{InputTokens: FixedDist(5), Dataset: "d"}, []string{"input_tokens and dataset are both set"}},
		{"bad api", Config{InputTokens: FixedDist(5), API: "embeddings"}, []string{`api "embeddings"`}},
		{"bad dist", Config{InputTokens: Dist{Kind: DistUniform, A: 9, B: 3}}, []string{"input_tokens uniform:9:3", "below low"}},
		{"ignore eos unbounded", Config{InputTokens: FixedDist(5), IgnoreEOS: true}, []string{"ignore_eos needs output_tokens"}},
		{"prefix half", Config{InputTokens: FixedDist(5), PrefixCount: 3}, []string{"prefix_count and prefix_tokens go together"}},
		{"prefix share", Config{InputTokens: FixedDist(5), PrefixCount: 1, PrefixTokens: 5, PrefixShare: 1.5}, []string{"prefix_share 1.5"}},
		{"think without turns", Config{InputTokens: FixedDist(5), ThinkTime: FixedDuration(time.Second)}, []string{"session_think_time needs turns"}},
		{"turns with dataset", Config{Dataset: "d", Turns: FixedDist(3)}, []string{"turns applies to synthetic sessions"}},
		{"cancel share without plan", Config{InputTokens: FixedDist(5), CancelShare: 0.5}, []string{"cancel_share needs"}},
		{"format without dataset", Config{InputTokens: FixedDist(5), DatasetFormat: DatasetJSONL}, []string{"dataset_format given without dataset"}},
		{
			name: "every problem at once",
			cfg:  Config{API: "x", MinTokens: -1, CancelShare: 2, PrefixTokens: 4},
			want: []string{`api "x"`, "input_tokens is required", "min_tokens -1", "cancel_share 2", "prefix_count and prefix_tokens go together"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.WithDefaults().Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, missing %q", err, w)
				}
			}
		})
	}
	if err := (Config{InputTokens: FixedDist(5)}).Validate(); err == nil || !strings.Contains(err.Error(), "defaults not applied") {
		t.Errorf("Validate without defaults = %v, want the empty fields reported", err)
	}
	d := Config{PrefixCount: 2, PrefixTokens: 8, CancelAfter: FixedDuration(time.Second)}.WithDefaults()
	if d.Name != "custom" || d.API != APIChat || d.PrefixShare != 1 || d.CancelShare != 1 {
		t.Errorf("WithDefaults() = %+v", d)
	}
}

func TestConfigOverlay(t *testing.T) {
	t.Parallel()
	preset, err := LookupPreset("batch")
	if err != nil {
		t.Fatal(err)
	}
	got := preset.Workload.Overlay(Config{Dataset: "d.jsonl", API: APICompletions})
	want := Config{Name: "batch", API: APICompletions, IgnoreEOS: true, Dataset: "d.jsonl"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dataset overlay = %+v, want %+v", got, want)
	}
	got = preset.Workload.Overlay(Config{OutputTokens: FixedDist(64), Name: "mine"})
	if got.OutputTokens != FixedDist(64) || got.InputTokens != preset.Workload.InputTokens || got.Name != "mine" || !got.IgnoreEOS {
		t.Errorf("length overlay = %+v", got)
	}
}
