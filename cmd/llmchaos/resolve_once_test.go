package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/gameday"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
	"time"
)

// One llmchaos run of a one-fault experiment resolves it once: the
// fault's params are decoded into their struct once and the arrival
// config is validated once, however many parts of the run (the plan, the
// proxies, the timeline, the engine, the schedule) use them. The hooks
// are process-wide: this test does not run in parallel.
func TestRunResolvesOnce(t *testing.T) {
	bin := needBinary(t) // the proxy helper
	old := ownExecutable
	ownExecutable = func() (string, error) { return bin, nil }
	defer func() { ownExecutable = old }()
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "one-fault.yaml")
	exp := fmt.Sprintf(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: one-fault}
target: {llm: {url: %q, model: llmchaos-sim}}
workload: {preset: chat, rate: 20, duration: 3s, input_tokens: 16, output_tokens: 4}
faults:
  - {name: slow, type: network.latency, at: 1s, duration: 1s, params: {latency: 20ms}}
recovery: {window: 500ms, hold: 500ms, latency_band: 20}
`, url)
	if err := os.WriteFile(file, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	var decodes, validations atomic.Int64
	defer spec.SetDecodeHook(func() { decodes.Add(1) })()
	defer workload.SetValidateHook(func() { validations.Add(1) })()

	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"run", file, "--no-guard", "--no-scrape", "--progress", "0", "--out", filepath.Join(dir, "run")}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errb.String(), out.String())
	}
	run, err := os.ReadFile(filepath.Join(dir, "run", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Faults []struct {
			Name      string   `json:"name"`
			InjectedS *float64 `json:"injected_at_s"`
		} `json:"faults"`
	}
	if err := json.Unmarshal(run, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Faults) != 1 || doc.Faults[0].Name != "slow" {
		t.Fatalf("run.json faults = %+v, want the one fault", doc.Faults)
	}
	t.Logf("decodes %d, arrival validations %d", decodes.Load(), validations.Load())
	if n := decodes.Load(); n != 1 {
		t.Errorf("the fault's params were decoded %d times, want once", n)
	}
	if n := validations.Load(); n != 1 {
		t.Errorf("the arrival config was validated %d times, want once", n)
	}
}

// The game day takes every experiment llmchaos run takes, resolved to the
// same values: each catalog experiment's plan as run --dry-run prints it
// equals the plan of the experiment the game day's loader resolves; and
// a rate given as a share of a measured capacity file is applied by both.
func TestGameDayResolvesAsRun(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "experiments", "catalog", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	capFile := filepath.Join(dir, "capacity.json")
	if err := os.WriteFile(capFile, []byte(`{"kind":"llmchaos-capacity","version":1,"mode":"rate","unit":"req/s","status":"found","summary":"knee 40 req/s","workload":{"preset":"chat","class":"chat"},"knee":{"load":40}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	share := filepath.Join(dir, "share.yaml")
	if err := os.WriteFile(share, []byte(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: share}
target: {sim: {replicas: 1}}
workload: {preset: chat, rate: 50%, capacity: capacity.json, duration: 30s}
faults:
  - {name: slow, type: network.latency, at: 5s, duration: 5s, params: {latency: 100ms}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, share)
	compared := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("\nkind: Suite")) {
			continue
		}
		compared++
		t.Run(filepath.Base(f), func(t *testing.T) {
			runDir := filepath.Join(t.TempDir(), "run")
			var out, errb bytes.Buffer
			code := execute(context.Background(), []string{"run", "--dry-run", "--out", runDir, f}, &out, &errb)

			x, _, err := gameday.Load(gameday.Config{File: f})
			if err != nil {
				t.Fatalf("the game day's loader refuses what run takes (run --dry-run exit %d): %v", code, err)
			}
			var plan bytes.Buffer
			gerr := experiments.DryRunExperiment(&plan, x, experiments.Options{RunDir: runDir, File: f, ToolVersion: toolVersion()})
			if (code == exitcode.OK) != (gerr == nil) {
				t.Fatalf("run --dry-run exit %d (stderr %s), the game day's plan: %v", code, errb.String(), gerr)
			}
			// run prints what the capacity file set before the plan.
			got := out.String()
			if x.Capacity != nil {
				line := "llmchaos run: workload.rate " + x.Capacity.String() + "\n"
				if !strings.HasPrefix(got, line) {
					t.Fatalf("run --dry-run does not start with %q:\n%s", line, got)
				}
				got = strings.TrimPrefix(got, line)
			}
			if got != plan.String() {
				t.Errorf("run --dry-run's plan differs from the game day's:\nrun:\n%s\ngame day:\n%s", got, plan.String())
			}
			if filepath.Base(f) == "share.yaml" && (x.Capacity == nil || x.Spec.Workload.Rate.PerSecond != 20) {
				t.Errorf("rate 50%% of the knee 40: got %v (%+v)", x.Spec.Workload.Rate, x.Capacity)
			}
		})
	}
	if compared < 10 {
		t.Fatalf("compared %d catalog experiments; the catalog was not found", compared)
	}
}
