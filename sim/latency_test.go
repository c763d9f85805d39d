package sim

import (
	"testing"
	"time"
)

func TestDefaultProfile(t *testing.T) {
	p := DefaultProfile()
	tests := []struct {
		name     string
		b        Batch
		min, max time.Duration
	}{
		{"single-stream decode, bandwidth-bound", Batch{DecodeTokens: 1, ContextTokens: 500}, 4 * time.Millisecond, 7 * time.Millisecond},
		{"256 decodes of 1k context", Batch{DecodeTokens: 256, ContextTokens: 256 * 1024}, 10 * time.Millisecond, 20 * time.Millisecond},
		{"1,000-token prefill, compute-bound", Batch{PrefillTokens: 1000, ContextTokens: 1000}, 25 * time.Millisecond, 45 * time.Millisecond},
		{"8,192-token prefill", Batch{PrefillTokens: 8192, ContextTokens: 8192}, 200 * time.Millisecond, 350 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := p.StepTime(tt.b); got < tt.min || got > tt.max {
			t.Errorf("%s: got %v, want in [%v, %v]", tt.name, got, tt.min, tt.max)
		}
	}
	// Cost grows with batch size and with context.
	base := p.StepTime(Batch{DecodeTokens: 64, ContextTokens: 64 * 512})
	if bigger := p.StepTime(Batch{DecodeTokens: 128, ContextTokens: 128 * 512}); bigger <= base {
		t.Errorf("batch 128 (%v) not slower than batch 64 (%v)", bigger, base)
	}
	if longer := p.StepTime(Batch{DecodeTokens: 64, ContextTokens: 64 * 4096}); longer <= base {
		t.Errorf("context 4096 (%v) not slower than 512 (%v)", longer, base)
	}
	if _, _, ok := p.Paced(); ok {
		t.Error("Profile claims to be paced")
	}
}

func TestConstantModel(t *testing.T) {
	c := Constant{TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond}
	ttft, itl, ok := c.Paced()
	if !ok || ttft != c.TTFT || itl != c.ITL {
		t.Errorf("Paced: got %v %v %v", ttft, itl, ok)
	}
}
