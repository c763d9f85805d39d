package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

func TestCompareCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := savedRun(t, dir, "base", 1, 1, 2000)
	slow := savedRun(t, dir, "slow", 2, 1.3, 2000)
	same := savedRun(t, dir, "same", 3, 1, 2000)

	code, out, errs := run(t, "compare", base, slow, "--max-regression", "10%")
	if code != exitcode.Thresholds {
		t.Errorf("30%% slower: exit %d (stderr %q), want %d", code, errs, exitcode.Thresholds)
	}
	if !strings.Contains(out, "REGRESSION beyond 10.0% with confidence: ttft p50") {
		t.Errorf("30%% slower: output does not name the regressions:\n%s", out)
	}

	code, out, errs = run(t, "compare", base, same, "--max-regression", "10%")
	if code != exitcode.OK || !strings.Contains(out, "no latency percentile regressed beyond 10.0% with confidence") {
		t.Errorf("same configuration, another seed: exit %d (stderr %q), want 0:\n%s", code, errs, out)
	}

	// Without a limit the comparison only reports.
	if code, _, _ := run(t, "compare", base, slow); code != exitcode.OK {
		t.Errorf("no --max-regression: exit %d, want 0", code)
	}
	// A limit above the slowdown is not exceeded with confidence.
	if code, _, _ := run(t, "compare", base, slow, "--max-regression", "0.6"); code != exitcode.OK {
		t.Errorf("--max-regression 60%%: exit %d, want 0", code)
	}

	jsonOut := filepath.Join(dir, "cmp.json")
	if code, _, errs := run(t, "compare", base, slow, "--format", "json", "-o", jsonOut, "--resamples", "200", "--seed", "7"); code != exitcode.OK {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var c report.Comparison
	if err := json.Unmarshal(readFile(t, jsonOut), &c); err != nil {
		t.Fatal(err)
	}
	if c.Resamples != 200 || len(c.Percentiles) != 12 || c.Base.Name != "base" || c.New.Name != "slow" {
		t.Errorf("json comparison = %+v", c)
	}

	for _, args := range [][]string{
		{"compare", base, slow, "--max-regression", "10"},
		{"compare", base, slow, "--max-regression", "-5%"},
		{"compare", base, slow, "--confidence", "95"},
		{"compare", base, slow, "--format", "junit"},
		{"compare", base},
		{"compare", base, filepath.Join(dir, "missing.json")},
	} {
		if code, _, errs := run(t, args...); code != exitcode.Usage {
			t.Errorf("%q: exit %d (stderr %q), want %d", args, code, errs, exitcode.Usage)
		}
	}
}

func TestParseShare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"10%", 0.1, true}, {"0.1", 0.1, true}, {" 2.5 % ", 0.025, true}, {"0", 0, true}, {"1", 1, true},
		{"10", 0, false}, {"-1%", 0, false}, {"x%", 0, false}, {"NaN", 0, false},
	}
	for _, tt := range tests {
		got, err := parseShare(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parseShare(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestCompareConfigWarning: compare names, on stderr, each config key in
// which the two runs differ (nested keys dotted), and still compares
// (exit 0); runs that differ only in seed, name and outputs get no
// warning.
func TestCompareConfigWarning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	withConfig := func(name string, seed uint64, cfg map[string]any) string {
		path := savedRun(t, dir, name, seed, 1, 400)
		d, err := report.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		d.Config = cfg
		if err := report.WriteFile(path, d); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := withConfig("base", 1, map[string]any{"model": "m1", "rate": 10, "seed": 1, "prompt_tokens": "512", "targets": []any{"http://a/v1"},
		"workload": map[string]any{"duration": "60s"}, "save_requests": false, "name": "base"})
	other := withConfig("other", 2, map[string]any{"model": "m2", "rate": 20, "seed": 2, "prompt_tokens": "512", "targets": []any{"http://b/v1"},
		"workload": map[string]any{"duration": "30s"}, "save_requests": true, "name": "other", "ignore_eos": true})
	same := withConfig("same", 3, map[string]any{"model": "m1", "rate": 10, "seed": 3, "prompt_tokens": "512", "targets": []any{"http://a/v1"},
		"workload": map[string]any{"duration": "60s"}, "save_requests": true, "name": "same"})

	code, out, errs := run(t, "compare", base, other)
	if code != exitcode.OK || !strings.Contains(out, "base") {
		t.Fatalf("exit %d, want 0 and a comparison; stderr %q", code, errs)
	}
	for _, want := range []string{"warning: the runs' configurations differ", `model: "m1" vs "m2"`, "rate: 10 vs 20",
		"targets: [http://a/v1] vs [http://b/v1]", `workload.duration: "60s" vs "30s"`, "ignore_eos: unset vs true"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	for _, not := range []string{"seed", "save_requests", "name", "prompt_tokens"} {
		if strings.Contains(errs, not) {
			t.Errorf("stderr names %q, which is not a difference of configuration:\n%s", not, errs)
		}
	}
	if strings.Contains(out, "warning") {
		t.Errorf("the warning went to stdout:\n%s", out)
	}
	if code, _, errs := run(t, "compare", base, same); code != exitcode.OK || errs != "" {
		t.Errorf("same configuration: exit %d, stderr %q; want 0 and no warning", code, errs)
	}
}
