package experiments

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// savedRequest is the part of a --save-requests line the runner's tests read.
type savedRequest struct {
	Seq       uint64 `json:"seq"`
	RequestID string `json:"request_id"`
	Phase     string `json:"phase"`
	Fault     string `json:"fault"`
	Outcome   string `json:"outcome"`
	SentUs    int64  `json:"sent_us"`
}

// readSavedRequests decodes a --save-requests file, failing the test on a
// line that is not a JSON object.
func readSavedRequests(t *testing.T, path string) []savedRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []savedRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s savedRequest
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %d %q: %v", len(out)+1, sc.Text(), err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunSavesEveryRequestWithItsPhase checks Options.SaveRequests: every
// scheduled request of the run is one line, once, tagged with the phase
// (and fault) the report counts it under.
func TestRunSavesEveryRequestWithItsPhase(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	errs := newFakeFault(t, "errors", srv.failing.Store)
	exp := testSpec(srv.URL, 2500*time.Millisecond, httpErrorFault("errors", 700*time.Millisecond, 600*time.Millisecond))
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := recording.NewRequestWriter(f)
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, Out: &out, SaveRequests: w, hooks: fakeBuilds(map[string]faults.Fault{"errors": errs})})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := readSavedRequests(t, path)
	d := o.Doc
	if got, want := int64(len(lines)), d.Requests.Scheduled; got != want || want < 50 {
		t.Errorf("%d lines, want one per scheduled request: %d (about 100)", got, want)
	}
	type key struct{ phase, fault, outcome string }
	got := map[key]int64{}
	seen := map[uint64]bool{}
	for i, l := range lines {
		if seen[l.Seq] {
			t.Errorf("line %d: seq %d appears twice", i+1, l.Seq)
		}
		seen[l.Seq] = true
		if l.Phase == "" {
			t.Errorf("line %d (seq %d): no phase", i+1, l.Seq)
		}
		got[key{l.Phase, l.Fault, l.Outcome}]++
	}
	want := map[key]int64{}
	for _, ts := range d.Histograms.ByTags {
		ph, fa := ts.Tags["phase"], ts.Tags["fault"]
		for outcome, n := range map[string]int64{"ok": ts.Counts.OK, "failed": ts.Counts.Failed, "cancelled": ts.Counts.Cancelled, "dropped": ts.Counts.Dropped} {
			if n > 0 {
				want[key{ph, fa, outcome}] += n
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("lines per phase, fault and outcome = %v, want the report's %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%+v: %d lines, want the report's %d", k, got[k], n)
		}
	}
	for _, k := range []key{{PhaseBaseline, "", "ok"}, {PhaseFault, "errors", "failed"}} {
		if got[k] == 0 {
			t.Errorf("no line for %+v; lines per phase, fault and outcome: %v", k, got)
		}
	}
}
