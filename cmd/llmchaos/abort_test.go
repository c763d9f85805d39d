package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// TestLoadSignalAborts: a load ended by a signal is aborted, never a pass
// of what ran: exit 98, verdict aborted with the signal as its cause in
// run.json, the summary and JUnit (an <error>).
func TestLoadSignalAborts(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, 20*time.Millisecond, "")
	dir := t.TempDir()
	out, junit := filepath.Join(dir, "run.json"), filepath.Join(dir, "junit.xml")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, loadArgs(url, "--rate", "20", "--duration", "1m", "--max-tokens", "200", "--out", out, "--junit", junit,
			"--threshold", "requests_lost: count==0"), &stdout, &stderr)
	}()
	waitOutput(t, &stdout, regexp.MustCompile(`in flight`), done)
	cancel(signalCause{syscall.SIGTERM})
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("load did not stop within 20s of SIGTERM")
	}
	if code != exitcode.Aborted {
		t.Fatalf("exit %d after SIGTERM, want %d; stderr:\n%s", code, exitcode.Aborted, &stderr)
	}
	if !strings.Contains(stdout.String(), "verdict: ABORTED by signal SIGTERM") {
		t.Errorf("summary does not say the run was aborted by SIGTERM:\n%s", &stdout)
	}
	d, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != report.VerdictAborted || d.Abort == nil || d.Abort.Cause != report.AbortSignal || d.Abort.Name != "SIGTERM" {
		t.Errorf("run.json verdict %q abort %+v, want aborted by signal SIGTERM", d.Verdict, d.Abort)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `errors="1"`) || !strings.Contains(string(b), `<error message="the run was aborted by signal SIGTERM"`) {
		t.Errorf("JUnit does not show the interruption as an error:\n%s", b)
	}
}
