package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/spf13/pflag"
)

// savedRun records n requests, 100 per second, through the real recorder
// and saves the run as llmchaos load --out would: ttft lognormal around
// 200 ms, 16 output tokens with gaps lognormal around 20 ms, every 50th
// request an HTTP 503. scale multiplies every latency (1.3: a server 30%
// slower); seed draws the values. It returns the file's path.
func savedRun(t *testing.T, dir, name string, seed uint64, scale float64, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	rec := recording.NewRecorder(recording.Options{SLO: recording.SLO{TTFT: 250 * time.Millisecond}})
	lognormal := func(median time.Duration, sigma float64) time.Duration {
		return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()) * scale)
	}
	gaps := make([]uint32, 15)
	var last time.Duration
	for i := range n {
		sent := time.Duration(i)*10*time.Millisecond + time.Millisecond
		res := &recording.Result{Seq: uint64(i), Tags: recording.Tags{Class: "chat"}, Scheduled: sent, Dequeued: sent, Sent: sent,
			HTTPStatus: 200, InputTokens: 100, UsageReported: true, FinishReason: "stop"}
		rec.RequestStarted(sent)
		if i%50 == 49 {
			res.End = sent + 30*time.Millisecond
			res.Outcome, res.Class, res.HTTPStatus = recording.OutcomeFailed, recording.ClassHTTP5xx, 503
		} else {
			res.FirstToken = sent + lognormal(200*time.Millisecond, 0.3)
			res.End = res.FirstToken
			for j := range gaps {
				g := lognormal(20*time.Millisecond, 0.25)
				gaps[j] = uint32(g / time.Microsecond)
				res.End += g
			}
			res.ITLMicros = gaps
			res.Outcome, res.OutputTokens, res.ContentChunks, res.OutputChars = recording.OutcomeOK, 16, 16, 64
		}
		rec.RequestEnded(res.End)
		rec.Record(res)
		last = max(last, res.End)
	}
	d, err := report.Build(report.Meta{ToolVersion: "test", Name: name, StartedAt: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC),
		Seed: int64(seed), Config: map[string]any{"rate": 100}}, rec.Finish(last.Truncate(time.Second)+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".json")
	if err := report.WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	return path
}

// run executes the CLI in process and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := savedRun(t, dir, "nightly", 1, 1, 400)
	saved, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("text", func(t *testing.T) {
		code, out, errs := run(t, "report", path)
		if code != exitcode.OK || !strings.Contains(out, `llmchaos load "nightly"`) || !strings.HasSuffix(out, "verdict: no thresholds — no verdict\n") {
			t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errs, out)
		}
		var want bytes.Buffer
		if err := report.WriteText(&want, saved); err != nil {
			t.Fatal(err)
		}
		if out != want.String() {
			t.Errorf("re-rendered text differs from the saved run's summary")
		}
	})
	t.Run("json", func(t *testing.T) {
		out := filepath.Join(dir, "again.json")
		if code, _, errs := run(t, "report", path, "--format", "json", "-o", out); code != exitcode.OK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		a, _ := os.ReadFile(path)
		b, _ := os.ReadFile(out)
		if !bytes.Equal(a, b) {
			t.Error("json re-render differs from the saved file")
		}
	})
	t.Run("junit", func(t *testing.T) {
		code, out, errs := run(t, "report", path, "--format", "junit", "--threshold", "ttft: p(99)<1ms", "--threshold", "error_rate: rate<5%")
		if code != exitcode.Thresholds {
			t.Errorf("exit %d (stderr %q), want %d: the new ttft threshold fails", code, errs, exitcode.Thresholds)
		}
		var s struct {
			Suites []struct {
				Name     string `xml:"name,attr"`
				Tests    int    `xml:"tests,attr"`
				Failures int    `xml:"failures,attr"`
				Cases    []struct {
					Classname string `xml:"classname,attr"`
					Name      string `xml:"name,attr"`
					Failure   *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("junit does not parse: %v\n%s", err, out)
		}
		su := s.Suites[0]
		if su.Name != "nightly" || su.Tests != 2 || su.Failures != 1 || su.Cases[0].Failure == nil || su.Cases[1].Failure != nil ||
			su.Cases[0].Classname != "ttft" || su.Cases[0].Name != "p(99)<1ms" || !strings.Contains(su.Cases[0].Failure.Message, "ms") {
			t.Errorf("junit = %+v", su)
		}
	})
	t.Run("re-evaluated thresholds", func(t *testing.T) {
		code, out, _ := run(t, "report", path, "--threshold", "ttft: p(99)<100s, p(50)<=1s", "--threshold", "requests_lost: count==0")
		if code != exitcode.OK || !strings.Contains(out, "verdict: PASS (3 thresholds held)") || !strings.Contains(out, "✓ ttft") {
			t.Errorf("exit %d, want 0 for generous thresholds:\n%s", code, out)
		}
		code, out, _ = run(t, "report", path, "--threshold", "error_rate: rate<0.01")
		if code != exitcode.Thresholds || !strings.Contains(out, "✗ error_rate") || !strings.Contains(out, "0.02") {
			t.Errorf("exit %d, want 99 (2%% errors):\n%s", code, out)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		tests := []struct {
			args []string
			want string
		}{
			{[]string{"report", path, "--threshold", "ttft: p(99)<500xs"}, "unknown unit"},
			{[]string{"report", path, "--format", "pdf"}, `--format "pdf"`},
			{[]string{"report", filepath.Join(dir, "missing.json")}, "missing.json"},
			{[]string{"report"}, "accepts 1 arg"},
		}
		for _, tt := range tests {
			code, _, errs := run(t, tt.args...)
			if code != exitcode.Usage || !strings.Contains(errs, tt.want) {
				t.Errorf("%q: exit %d stderr %q, want %d mentioning %q", tt.args, code, errs, exitcode.Usage, tt.want)
			}
		}
		// The caret points at the bad unit.
		_, _, errs := run(t, "report", path, "--threshold", "ttft: p(99)<500xs")
		if !strings.Contains(errs, "ttft: p(99)<500xs\n                   ^") {
			t.Errorf("no caret under the unit:\n%s", errs)
		}
	})
}

// TestEndRun drives the end of a run as `llmchaos load` does it: flags
// parsed before the run, the report judged, written and printed after.
func TestEndRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved, err := report.Read(savedRun(t, dir, "load", 1, 1, 400))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		thresholds []string
		aborted    bool
		code       int
		verdict    string
	}{
		{"pass", []string{"ttft: p(99)<10s", "error_rate: rate<5%"}, false, exitcode.OK, "pass"},
		{"fail", []string{"ttft: p(99)<10s", "error_rate: rate<1%"}, false, exitcode.Thresholds, "fail"},
		{"aborted", []string{"ttft: p(99)<10s"}, true, exitcode.Aborted, "aborted"},
		{"no thresholds", nil, false, exitcode.OK, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := verdictFlags{Thresholds: tt.thresholds, Goodput: "ttft:250ms", JUnit: filepath.Join(t.TempDir(), "junit.xml")}
			ths, slo, err := v.parse()
			if err != nil || slo.TTFT != 250*time.Millisecond {
				t.Fatalf("parse: %v, slo %+v", err, slo)
			}
			jsonPath := filepath.Join(t.TempDir(), "run.json")
			var out bytes.Buffer
			err = endRunOutputs(&out, &out, saved, ths, tt.aborted, []report.Output{{Format: report.FormatJSON, Path: jsonPath}, {Format: report.FormatJUnit, Path: v.JUnit}}, report.TextOptions{}, nil)
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit %d (%v), want %d", got, err, tt.code)
			}
			back, rerr := report.Read(jsonPath)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if back.Verdict != tt.verdict || len(back.Thresholds) != len(tt.thresholds) {
				t.Errorf("saved verdict %q with %d thresholds, want %q with %d", back.Verdict, len(back.Thresholds), tt.verdict, len(tt.thresholds))
			}
			line := "verdict: " + strings.ToUpper(tt.verdict)
			if tt.verdict == report.VerdictNone {
				line = "verdict: no thresholds — no verdict"
			}
			if !strings.Contains(out.String(), line) {
				t.Errorf("summary lacks the verdict:\n%s", out.String())
			}
			if x := readFile(t, v.JUnit); !bytes.Contains(x, []byte("<testsuites")) {
				t.Errorf("junit file = %q", x)
			}
		})
	}
}

// exitCode maps a command's error as execute does.
func exitCode(err error) int {
	if err == nil {
		return exitcode.OK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitcode.Internal
}

func TestVerdictFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    verdictFlags
		want []string // fragments of the error; none: valid
	}{
		{"valid", verdictFlags{Thresholds: []string{"goodput: value>1", "ttft{phase:fault}: p(99)<1s, med<200"}, Goodput: "ttft:500ms,tpot:50ms"}, nil},
		{"goodput without SLOs", verdictFlags{Thresholds: []string{"goodput: value>1"}}, []string{"add --goodput"}},
		{"every problem at once", verdictFlags{Thresholds: []string{"ttft: p(99)<1xs", "eror_rate: rate<1%"}, Goodput: "ttft:0"},
			[]string{`unknown unit "xs"`, `did you mean "error_rate"`, "ttft objective must be positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
			var v verdictFlags
			v.add(fs)
			args := []string{"--goodput", tt.v.Goodput}
			for _, th := range tt.v.Thresholds {
				args = append(args, "--threshold", th)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			if len(v.Thresholds) != len(tt.v.Thresholds) {
				t.Fatalf("--threshold kept %d values, want %d (commas must not split them)", len(v.Thresholds), len(tt.v.Thresholds))
			}
			_, _, err := v.parse()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if exitCode(err) != exitcode.Usage {
				t.Errorf("exit %d, want %d", exitCode(err), exitcode.Usage)
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
		})
	}
}
