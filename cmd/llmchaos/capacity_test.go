package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/capacity"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

func TestCapacityFlagErrors(t *testing.T) {
	t.Parallel()
	base := []string{"capacity", "--target", "http://127.0.0.1:9/v1", "--model", "m", "--workload", "chat"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no SLO", nil, []string{"--slo is required"}},
		{"a bad SLO", []string{"--slo", "ttft: p(99)<fast"}, []string{`--slo "ttft: p(99)<fast"`, "^"}},
		{"an SLO on a phase", []string{"--slo", "ttft{phase:fault}: p(99)<1s"}, []string{"selects a phase or a fault"}},
		{"a mode", []string{"--slo", "ttft: p(99)<1s", "--mode", "users"}, []string{`--mode "users": want rate or concurrency`}},
		{"precision", []string{"--slo", "ttft: p(99)<1s", "--precision", "0%"}, []string{"--precision 0%"}},
		{"growth", []string{"--slo", "ttft: p(99)<1s", "--growth", "1"}, []string{"--growth 1"}},
		{"bounds", []string{"--slo", "ttft: p(99)<1s", "--min", "50", "--max", "5"}, []string{"--min 50 is above --max 5"}},
		{"a cap on a closed loop", []string{"--slo", "ttft: p(99)<1s", "--mode", "concurrency", "--max-in-flight", "4"}, []string{"--max-in-flight applies to --mode rate"}},
		{"steps", []string{"--slo", "ttft: p(99)<1s", "--min-step", "1m", "--max-step", "10s", "--ramp-step", "0s"}, []string{"--min-step 1m0s is longer than --max-step 10s", "--ramp-step 0s"}},
		{"an output folder", []string{"--slo", "ttft: p(99)<1s", "--out", "/nowhere/c.json"}, []string{"--out /nowhere/c.json: folder /nowhere does not exist"}},
		{"a load flag", []string{"--slo", "ttft: p(99)<1s", "--input-tokens", "many"}, []string{"--input-tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, append(append([]string{}, base...), tt.args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitcode.Usage, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing before a search starts", out)
			}
		})
	}
	// The load's own shape flags belong to the search.
	if code, _, errs := run(t, append(base, "--slo", "ttft: p(99)<1s", "--rate", "10")...); code != exitcode.Usage || !strings.Contains(errs, "unknown flag: --rate") {
		t.Errorf("--rate: exit %d, %s", code, errs)
	}
}

// TestCapacityCommand runs a short search against a simulator that holds
// every load tried (its knee is far above --max), so that it ends quickly
// as above_max, and checks the outputs: the table and the knee line, the
// capacity file, the HTML page, and --json's capacity file on stdout.
// It runs serially: the search judges the client's own send lag, which
// tests beside it would lengthen into a client_limited result.
func TestCapacityCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search against a simulator for seconds; skipped under -short")
	}
	cfg := simconfig.Default()
	cfg.Latency, cfg.TTFT, cfg.ITL = simconfig.LatencyConstant, 20*time.Millisecond, 5*time.Millisecond
	target := servertest.Start(t, server.Options{Config: cfg}) + "/v1"
	dir := t.TempDir()
	file, page := filepath.Join(dir, "capacity.json"), filepath.Join(dir, "capacity.html")
	args := []string{"capacity", "--target", target, "--model", cfg.Model, "--input-tokens", "16", "--max-tokens", "4", "--ignore-eos",
		"--arrival", "constant", "--slo", "ttft: p(90)<1s", "--slo", "error_rate: rate<0.1", "--seed", "5",
		"--start", "4", "--max", "8", "--step-requests", "20", "--min-step", "1s", "--max-step", "1s", "--ramp-step", "500ms",
		"--warmup", "300ms", "--settle", "100ms", "--grace", "2s", "--max-client-cpu", "0"}

	// A model the target does not serve: the pre-flight check stops the
	// search before any load, exit 2.
	wrong := append([]string{}, args...)
	wrong[4] = "not-served"
	if code, out, errs := run(t, wrong...); code != exitcode.Usage || !strings.Contains(errs, "pre-flight check of") || strings.Contains(out, "step 0") {
		t.Errorf("a wrong model: exit %d, stderr %q, stdout %q", code, errs, out)
	}

	code, out, errs := run(t, append(args, "--out", file, "--html", page)...)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	for _, want := range []string{
		"llmchaos capacity: rate mode, SLOs 'ttft: p(90)<1s', 'error_rate: rate<0.1'\n20 requests per full step (--step-requests), precision 5%, seed 5\n",
		"step 0 ramp",
		"#", "load req/s", "ttft p(90)", "verdict",
		"knee: 8 req/s (a lower bound: no load above it failed)",
		"Every SLO held at the highest load the search may try, 8 req/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	r, err := capacity.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != capacity.StatusAboveMax || r.Knee.Load != 8 || r.Seed != 5 || len(r.Steps) < 2 || r.Steps[0].Load != 4 {
		t.Errorf("capacity file: status %s, knee %+v, seed %d, %d steps", r.Status, r.Knee, r.Seed, len(r.Steps))
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `<div class="verdict-word">≥ 8 req/s</div>`) {
		t.Errorf("HTML page: %v", err)
	}

	code, out, errs = run(t, append(args, "--json")...)
	if code != exitcode.OK {
		t.Fatalf("--json: exit %d; stderr:\n%s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["kind"] != capacity.FileKind {
		t.Errorf("--json stdout is not the capacity file (%v):\n%s", err, out)
	}
	if !strings.Contains(errs, "step 0 ramp") {
		t.Errorf("--json: the progress lines are not on stderr:\n%s", errs)
	}
}

// experimentAt writes an experiment whose workload is given, against an
// endpoint that is never contacted (the tests dry-run it).
func experimentAt(t *testing.T, dir, name, workload string) string {
	t.Helper()
	file := filepath.Join(dir, name+".yaml")
	doc := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: e}\ntarget: {llm: {url: \"http://127.0.0.1:9/v1\", model: m}}\nworkload: " + workload + "\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestRunAppliesCapacity: run takes a rate given as a share from the
// capacity file the experiment names, or from --capacity, says what it
// set, and the plan runs at that rate; without a usable file it refuses.
func TestRunAppliesCapacity(t *testing.T) {
	dir := t.TempDir()
	fixture, err := os.ReadFile("../../capacity/testdata/sim-knee.json") // knee 65 req/s
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "capacity.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	own := experimentAt(t, dir, "own", "{rate: 80%, capacity: capacity.json, arrival: constant, duration: 30s, input_tokens: 16, output_tokens: 6}")
	code, out, errs := run(t, "run", "--dry-run", own)
	if code != exitcode.OK || !strings.Contains(out, "workload.rate 80% of the knee 65 req/s ("+filepath.Join(dir, "capacity.json")+"): 52 req/s") ||
		!strings.Contains(out, "constant arrivals at 52 req/s") {
		t.Errorf("own capacity: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}

	t.Chdir(dir)
	shareOnly := experimentAt(t, dir, "share", "{rate: 50%, arrival: constant, duration: 30s, input_tokens: 16, output_tokens: 6}")
	if code, _, errs := run(t, "run", "--dry-run", shareOnly); code != exitcode.Usage || !strings.Contains(errs, "workload.rate: 50% is a share of a measured capacity: add capacity: FILE") {
		t.Errorf("a share without a capacity: exit %d, stderr %q", code, errs)
	}
	code, out, errs = run(t, "run", "--dry-run", "--capacity", "capacity.json", shareOnly)
	if code != exitcode.OK || !strings.Contains(out, "constant arrivals at 32.5 req/s") {
		t.Errorf("--capacity: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
	if code, _, errs := run(t, "run", "--dry-run", "--capacity", "missing.json", shareOnly); code != exitcode.Usage || !strings.Contains(errs, "capacity file: open") {
		t.Errorf("a missing capacity file: exit %d, stderr %q", code, errs)
	}
	perSecond := experimentAt(t, dir, "per-second", "{rate: 5, arrival: constant, duration: 30s, input_tokens: 16, output_tokens: 6}")
	// --rate: any experiment at a share of the capacity (the catalog at 80 % of it).
	for _, tt := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--rate", "80%", "--capacity", "capacity.json"}, exitcode.OK, "constant arrivals at 52 req/s", ""},
		{[]string{"--rate", "12"}, exitcode.OK, "constant arrivals at 12 req/s", ""},
		{[]string{"--rate", "80%"}, exitcode.Usage, "", "--rate 80% is a share of a measured capacity: give the capacity file with --capacity FILE"},
		{[]string{"--rate", "lots"}, exitcode.Usage, "", `--rate "lots": want requests per second`},
		{[]string{"--rate", "0"}, exitcode.Usage, "", "--rate 0 requests per second sends nothing"},
	} {
		code, out, errs := run(t, append(append([]string{"run", "--dry-run"}, tt.args...), perSecond)...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.err) {
			t.Errorf("run %q: exit %d, stderr %q, stdout:\n%s", tt.args, code, errs, out)
		}
	}
	concurrent := experimentAt(t, dir, "closed", "{concurrency: 4, duration: 30s, input_tokens: 16, output_tokens: 6}")
	if code, _, errs := run(t, "run", "--dry-run", "--rate", "80%", "--capacity", "capacity.json", concurrent); code != exitcode.Usage || !strings.Contains(errs, "with --duration/--threshold/--rate the experiment is invalid") {
		t.Errorf("--rate on a closed loop: exit %d, stderr %q", code, errs)
	}
	if code, out, errs := run(t, "run", "--dry-run", "--capacity", "capacity.json", perSecond); code != exitcode.OK || !strings.Contains(errs, "--capacity: workload.rate is 5 requests per second") || !strings.Contains(out, "at 5 req/s") {
		t.Errorf("--capacity with a rate per second: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
}
