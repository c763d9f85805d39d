package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// A fault whose selection is refused (min_available) is not an SLO failure:
// the run exits exitcode.Refused, says which fault, and the fault's record keeps
// the refusal.
func TestRunRefusedInjectionExitCode(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	code, out, doc, _ := runExperimentFile(t, bin, filepath.Join("testdata", "replica-kill-refused.yaml"))
	if code != exitcode.Refused {
		t.Fatalf("exit code %d, want %d:\n%s", code, exitcode.Refused, out)
	}
	if !strings.Contains(string(out), "kill-one") || !strings.Contains(string(out), "refused") {
		t.Errorf("output does not name the refused fault:\n%s", out)
	}
	if len(doc.Faults) != 1 || doc.Faults[0].InjectedAtS != nil || !strings.Contains(doc.Faults[0].Error, "min_available") {
		t.Errorf("fault records %+v, want kill-one not injected, refused by min_available", doc.Faults)
	}
}
