package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"Hello, world!", 4}, // 13 bytes
		{"héllo", 2},         // 6 bytes in UTF-8
		{strings.Repeat("x", 4000), 1000},
		{strings.Repeat("x", 4001), 1001},
	}
	for _, tt := range tests {
		if got := CountTokens(tt.in); got != tt.want {
			t.Errorf("CountTokens(%.20q): got %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestChatPromptTokens(t *testing.T) {
	tests := []struct {
		name     string
		contents []string
		want     int
	}{
		{"none", nil, 0},
		{"one empty", []string{""}, 4},
		{"two", []string{"You are terse.", "Hello"}, (4 + 4) + (2 + 4)},
	}
	for _, tt := range tests {
		if got := ChatPromptTokens(tt.contents...); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestVocabulary(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range vocabulary {
		if len(w) != BytesPerToken || CountTokens(w) != 1 {
			t.Errorf("token %q is %d bytes, want %d", w, len(w), BytesPerToken)
		}
		b, _ := json.Marshal(w)
		if string(b) != `"`+w+`"` {
			t.Errorf("token %q needs JSON escaping", w)
		}
		if seen[w] {
			t.Errorf("token %q twice", w)
		}
		seen[w] = true
	}
	// Token texts depend on seed and position only (a fresh stream of the
	// same seed says the same), and spread over the vocabulary.
	a, b := &Stream{seed: 7}, &Stream{seed: 7}
	used := map[string]bool{}
	for i := range 2000 {
		if a.Token(i) != b.Token(i) {
			t.Fatalf("token %d differs between two streams of seed 7", i)
		}
		used[a.Token(i)] = true
	}
	if len(used) < 200 {
		t.Errorf("2000 tokens used only %d of 256 words", len(used))
	}
	if tokenText(7, 0)+tokenText(7, 1)+tokenText(7, 2) == tokenText(8, 0)+tokenText(8, 1)+tokenText(8, 2) {
		t.Error("seeds 7 and 8 start with the same three tokens")
	}
}
