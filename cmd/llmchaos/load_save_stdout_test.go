package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestLoadSavesRequestsToStdout: --save-requests - with --out - writes
// the request lines, then the report, on stdout (a shard's pod log); the
// human lines go to stderr. The lines read back, the report is found.
func TestLoadSavesRequestsToStdout(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	code, stdout, stderr := run(t, loadArgs(url, "--rate", "40", "--requests", "20", "--out", "-", "--save-requests", "-")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	var n int
	if err := recording.ReadRequests(strings.NewReader(stdout), true, func(*recording.Result) { n++ }); err != nil {
		t.Fatal(err)
	}
	doc, err := shardjob.ParseReport([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if n != 20 || doc.Requests.Scheduled != 20 {
		t.Errorf("%d request lines, report of %d requests; want 20 and 20", n, doc.Requests.Scheduled)
	}
	report := strings.Index(stdout, "\n{\n")
	if last := strings.LastIndex(stdout, `{"seq":`); report < 0 || last > report {
		t.Errorf("the request lines do not all come before the report (last at %d, report at %d)", last, report)
	}
	if strings.Contains(stdout, "llmchaos load:") || !strings.Contains(stderr, "llmchaos load:") {
		t.Errorf("human lines on stdout, or none on stderr:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

// TestLoadFramedHandsBackEverythingOnStdout: with --framed (what a
// shard's pod runs) the request lines and the report go to stdout as
// frames, the human lines (start line, summary) there too and nothing to
// stderr, so that a pod's log, which interleaves a container's two
// streams, has nothing to mix into the frames; shardjob.ParseShardLog
// reads back every request line and the report. Without --out - or
// --save-requests - there is nothing to frame: exit 2.
func TestLoadFramedHandsBackEverythingOnStdout(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	code, stdout, stderr := run(t, loadArgs(url, "--rate", "40", "--requests", "20", "--out", "-", "--save-requests", "-", "--framed", "--progress", "100ms")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if stderr != "" {
		t.Errorf("stderr holds %q, want nothing", stderr)
	}
	doc, reqs, err := shardjob.ParseShardLog([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := recording.ReadRequests(strings.NewReader(string(reqs)), false, func(*recording.Result) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != 20 || doc.Requests.Scheduled != 20 {
		t.Errorf("%d request lines, report of %d requests; want 20 and 20", n, doc.Requests.Scheduled)
	}
	if !strings.Contains(stdout, "llmchaos load:") || strings.Contains(stdout, `{"seq":`) {
		t.Errorf("no human line on stdout, or a request line not framed:\n%s", stdout)
	}
	code, _, stderr = run(t, loadArgs(url, "--rate", "40", "--requests", "2", "--framed")...)
	if code != exitcode.Usage || !strings.Contains(stderr, "--framed: nothing goes to standard output") {
		t.Errorf("--framed alone: exit %d, stderr:\n%s", code, stderr)
	}
}
