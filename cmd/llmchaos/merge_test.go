package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMergeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := savedRun(t, dir, "shard-a", 1, 1, 300)
	b := savedRun(t, dir, "shard-b", 2, 1.1, 500)
	out := filepath.Join(dir, "all.json")
	if code, _, errs := run(t, "merge", a, b, "-o", out, "--name", "all shards"); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := report.Read(a)
	db, _ := report.Read(b)
	for metric := range recording.NumMetrics {
		want := da.Summary().Histogram(metric, recording.TagFilter{})
		want.Merge(db.Summary().Histogram(metric, recording.TagFilter{}))
		if got := m.Summary().Histogram(metric, recording.TagFilter{}); !got.Equals(want) {
			t.Errorf("%s: merged histogram differs from the sum of the shards'", metric)
		}
	}
	if m.Name != "all shards" || m.Requests.Sent != 800 || m.Requests.OK != da.Requests.OK+db.Requests.OK || len(m.MergedFrom) != 2 ||
		m.ToolVersion != toolVersion() || m.DurationS != db.DurationS {
		t.Errorf("merged report: name %q sent %d ok %d merged_from %d tool %q duration %v",
			m.Name, m.Requests.Sent, m.Requests.OK, len(m.MergedFrom), m.ToolVersion, m.DurationS)
	}

	// With thresholds, merge judges the whole load.
	code, stdout, _ := run(t, "merge", a, b, "--threshold", "error_rate: rate<0.01")
	if code != exitcode.Thresholds || !strings.Contains(stdout, `"verdict": "fail"`) {
		t.Errorf("failing threshold: exit %d, want %d, with the merged report on stdout", code, exitcode.Thresholds)
	}
	if code, _, _ := run(t, "merge", a, b, "-o", out, "--threshold", "requests: count==800"); code != exitcode.OK {
		t.Errorf("holding threshold: exit %d, want 0", code)
	}
	for _, args := range [][]string{
		{"merge"},
		{"merge", a, filepath.Join(dir, "missing.json")},
		{"merge", a, "--threshold", "tftt: p(99)<1s"},
	} {
		if code, _, errs := run(t, args...); code != exitcode.Usage {
			t.Errorf("%q: exit %d (stderr %q), want %d", args, code, errs, exitcode.Usage)
		}
	}
}
