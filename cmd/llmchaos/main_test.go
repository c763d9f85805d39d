package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"version"}, &out, &errb)
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d (stderr %q)", code, ExitOK, errb.String())
	}
	if !strings.HasPrefix(out.String(), "llmchaos ") {
		t.Errorf("version output = %q, want prefix %q", out.String(), "llmchaos ")
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"version", "--no-such-flag"}, &out, &errb)
	if code != ExitUsage {
		t.Fatalf("exit code = %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(errb.String(), "no-such-flag") {
		t.Errorf("stderr = %q, want it to name the flag", errb.String())
	}
}
