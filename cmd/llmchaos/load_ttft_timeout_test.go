package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestLoadTTFTTimeout: --ttft-timeout cuts a request whose first token comes
// too late, and such a request failed (class timeout): it counts in
// error_rate, so the usual error threshold fails.
func TestLoadTTFTTimeout(t *testing.T) {
	t.Parallel()
	simURL := loadSim(t, 600*time.Millisecond, 2*time.Millisecond, "")
	out := filepath.Join(t.TempDir(), "run.json")
	code, stdout, stderr := run(t, loadArgs(simURL, "--rate", "20", "--requests", "4", "--progress", "0", "--no-scrape",
		"--ttft-timeout", "100ms", "--out", out, "--threshold", "error_rate: rate<0.01")...)
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitcode.Thresholds, stderr, stdout)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Requests struct {
			Failed        int64            `json:"failed"`
			ErrorsByClass map[string]int64 `json:"errors_by_class"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Requests.ErrorsByClass["timeout"]; got != 4 || doc.Requests.Failed != 4 {
		t.Errorf("failed %d, timeout errors %d; want 4 and 4 (errors %v)", doc.Requests.Failed, got, doc.Requests.ErrorsByClass)
	}
}
