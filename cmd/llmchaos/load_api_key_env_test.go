package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestLoadAPIKeyEnvWarning: a --api-key-env naming a variable that is
// unset or empty is warned about on stderr (the run goes on, without a
// key); a set one, or the default left alone, is not.
func TestLoadAPIKeyEnvWarning(t *testing.T) {
	url := loadSim(t, time.Millisecond, time.Millisecond, "")
	t.Setenv("LLMCHAOS_TEST_EMPTY_KEY", "")
	t.Setenv("LLMCHAOS_TEST_SET_KEY", "sk-test")
	const warning = "the environment variable %s is not set (or empty): requests will be sent without an API key"
	for _, tt := range []struct {
		name string
		args []string
		warn string // the variable warned about, "" for none
	}{
		{"unset", []string{"--api-key-env", "LLMCHAOS_TEST_NO_SUCH_KEY"}, "LLMCHAOS_TEST_NO_SUCH_KEY"},
		{"empty", []string{"--api-key-env", "LLMCHAOS_TEST_EMPTY_KEY"}, "LLMCHAOS_TEST_EMPTY_KEY"},
		{"set", []string{"--api-key-env", "LLMCHAOS_TEST_SET_KEY"}, ""},
		{"default", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := loadArgs(url, append([]string{"--rate", "50", "--requests", "2", "--progress", "0", "--no-scrape"}, tt.args...)...)
			code, stdout, stderr := run(t, args...)
			if code != exitcode.OK {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitcode.OK, stderr, stdout)
			}
			got := strings.Contains(stderr, "llmchaos load: warning: --api-key-env: ") && strings.Contains(stderr, "requests will be sent without an API key")
			switch {
			case tt.warn != "" && !strings.Contains(stderr, strings.ReplaceAll(warning, "%s", tt.warn)):
				t.Errorf("stderr lacks the warning about %s:\n%s", tt.warn, stderr)
			case tt.warn == "" && got:
				t.Errorf("warned, want no warning:\n%s", stderr)
			}
		})
	}
}
