package network

import (
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// greedyAsk sends one greedy streamed chat request through base and returns
// its result and answer.
func greedyAsk(t *testing.T, c *client.Client, base string) (recording.Result, string) {
	t.Helper()
	req := &workload.Request{Chat: true, Model: sim.DefaultConfig().Model, Stream: true, MaxTokens: 32,
		Messages: []workload.Message{{Role: "user", Content: "Name three colours."}},
		Extra:    map[string]any{"temperature": 0}}
	var res recording.Result
	text := c.DoContent(context.Background(), base+"/v1", req, &res)
	return res, text
}

// Each stream corruption, through the proxy in front of the real
// simulator, is found: as its integrity class where the stream itself
// shows it, else as an answer that differs from the greedy reference (what
// consistency probes compare). Once the toxic is removed the same request
// gets the reference again, clean.
func TestStreamCorruptionsAgainstSim(t *testing.T) {
	upstream := startSimReplica(t, 20*time.Millisecond, 5*time.Millisecond)
	tests := []struct {
		name   string
		params ProxyParams
		class  recording.ErrorClass // "" → ok, but another answer
		check  func(t *testing.T, res recording.Result, text, ref string)
	}{
		{"duplicate", &DuplicateParams{AfterTokens: 8, Events: 4}, recording.ClassIntegrityResumeRepeat, nil},
		{"splice", &SpliceParams{PositionParams{AfterTokens: 3}}, recording.ClassIntegrityIDChanged, nil},
		{"flip", &FlipParams{PositionParams{AfterTokens: 3}}, recording.ClassIntegrityInvalidUTF8, nil},
		{"drop", &DropParams{AfterTokens: 3, Events: 4}, "", func(t *testing.T, res recording.Result, text, ref string) {
			if len(text) != len(ref)-4*sim.BytesPerToken || res.ContentChunks != res.OutputTokens-4 {
				t.Errorf("answer %d bytes (reference %d), %d chunks for usage %d: want 4 tokens missing", len(text), len(ref), res.ContentChunks, res.OutputTokens)
			}
		}},
		{"reorder", &ReorderParams{PositionParams{AfterTokens: 3}}, "", func(t *testing.T, res recording.Result, text, ref string) {
			if len(text) != len(ref) {
				t.Errorf("answer %d bytes, reference %d: want the same tokens, two swapped", len(text), len(ref))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, upstream, ModeHTTP)
			base := "http://" + p.Addr()
			c, err := client.New(client.Options{Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			refRes, ref := greedyAsk(t, c, base)
			if refRes.Outcome != recording.OutcomeOK || ref == "" {
				t.Fatalf("clean request: %v/%q %q", refRes.Outcome, refRes.Class, refRes.Err)
			}
			undo := inject(t, p, "corrupt", tt.params, 1)
			res, text := greedyAsk(t, c, base)
			if tt.class != "" {
				if res.Outcome != recording.OutcomeFailed || res.Class != tt.class {
					t.Errorf("corrupted: %v/%q (%q), want failed/%q", res.Outcome, res.Class, res.Err, tt.class)
				}
			} else {
				if res.Outcome != recording.OutcomeOK || text == ref {
					t.Errorf("corrupted: %v/%q (%q), answer equal to the reference %v: want ok with another answer", res.Outcome, res.Class, res.Err, text == ref)
				}
				tt.check(t, res, text, ref)
			}
			if n, err := p.Acted(context.Background(), "corrupt"); err != nil || n != 1 {
				t.Errorf("acted = %d, %v; want 1", n, err)
			}
			if err := undo(context.Background()); err != nil {
				t.Fatal(err)
			}
			res, text = greedyAsk(t, c, base)
			if res.Outcome != recording.OutcomeOK || text != ref {
				t.Errorf("after the revert: %v/%q (%q), answer equal to the reference %v", res.Outcome, res.Class, res.Err, text == ref)
			}
		})
	}
}
