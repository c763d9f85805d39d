package kube

import (
	"regexp"
	"strings"
	"testing"
)

func TestLabelValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"quickstart-20260101-120000", "quickstart-20260101-120000"},
		{"run/1", "run-1"},
		{"-x y-", "x-y"},
		{"_é_", ""},
		{"", ""},
		{strings.Repeat("a", 70), strings.Repeat("a", 63)},
		{strings.Repeat("a", 62) + "-b", strings.Repeat("a", 62)},
	}
	for _, tt := range tests {
		if got := LabelValue(tt.in); got != tt.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Object names are DNS labels (at most 63 characters), begin with the
// prefix and the fault's name, and differ between calls.
func TestObjectName(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, fault := range []string{"pod-delay", "Slow_Net.1", strings.Repeat("x", 80), "--"} {
		a, b := ObjectName("llmchaos", fault), ObjectName("llmchaos", fault)
		if a == b {
			t.Errorf("ObjectName(%q) twice = %q", fault, a)
		}
		if len(a) > 63 || !label.MatchString(a) || !strings.HasPrefix(a, "llmchaos-") {
			t.Errorf("ObjectName(%q) = %q: not a DNS label starting llmchaos-", fault, a)
		}
	}
	if got := ObjectName("llmchaos", "Slow_Net.1"); !strings.HasPrefix(got, "llmchaos-slow-net-1-") {
		t.Errorf("ObjectName = %q, want llmchaos-slow-net-1-SUFFIX", got)
	}
}
