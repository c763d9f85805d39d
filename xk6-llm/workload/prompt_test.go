package workload

import (
	"strings"
	"testing"
)

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"abcdefgh", 2},
		{"héllo", 2}, // 6 bytes
		{strings.Repeat("x", 4000), 1000},
		{strings.Repeat("x", 4001), 1001},
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.in); got != tt.want {
			t.Errorf("EstimateTokens(%d bytes) = %d, want %d", len(tt.in), got, tt.want)
		}
	}
	msgs := []Message{{Role: "system", Content: "abcdefgh"}, {Role: "user", Content: "abcde"}, {Role: "assistant", Content: ""}}
	if got, want := EstimateChatTokens(msgs), (2+4)+(2+4)+(0+4); got != want {
		t.Errorf("EstimateChatTokens = %d, want %d", got, want)
	}
}

func TestPromptBuilderExactCounts(t *testing.T) {
	t.Parallel()
	b := NewPromptBuilder(testRand(1))
	rng := testRand(2)
	sizes := []int{1, 2, 3, 5, 16, 100, 1000, 4096}
	for n := 1; n <= 300; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 200_000) // longer than the corpus: wraps around
	for _, n := range sizes {
		p := b.Build(rng, n)
		if got := EstimateTokens(p); got != n || len(p) != 4*n {
			t.Fatalf("Build(%d): %d bytes, %d estimated tokens; want %d bytes, %d tokens", n, len(p), got, 4*n, n)
		}
		for i := 0; i < len(p); i++ {
			if c := p[i]; c >= 0x80 || (c < ' ' && c != '\n') {
				t.Fatalf("Build(%d): byte %d is %q, want printable ASCII", n, i, c)
			}
		}
	}
	if p := b.Build(rng, 0); p != "" {
		t.Errorf("Build(0) = %q, want empty", p)
	}
}

func TestPromptBuilderDeterministicAndVaried(t *testing.T) {
	t.Parallel()
	a := NewPromptBuilder(testRand(7)).Build(testRand(8), 500)
	b := NewPromptBuilder(testRand(7)).Build(testRand(8), 500)
	if a != b {
		t.Error("same seeds gave different prompts")
	}
	if c := NewPromptBuilder(testRand(7)).Build(testRand(9), 500); c == a {
		t.Error("different rng gave the same prompt")
	}
	// No two of 2,000 prompts share their first 16 tokens (one prefix-cache
	// block), and they are prose, not one repeated word.
	pb := NewPromptBuilder(testRand(1))
	rng := testRand(3)
	seen := map[string]bool{}
	for range 2000 {
		p := pb.Build(rng, 64)
		head := p[:64]
		if seen[head] {
			t.Fatalf("two prompts share their first block %q", head)
		}
		seen[head] = true
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(pb.Build(rng, 2000)) {
		words[strings.Trim(strings.ToLower(w), ".,")] = true
	}
	if len(words) < 200 {
		t.Errorf("a 2000-token prompt uses %d distinct words, want prose (≥ 200)", len(words))
	}
}
