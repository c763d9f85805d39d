package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/gameday"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/suite"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// oneFaultExperiment is an experiment against the simulator at url with
// the workload given and one latency fault through the proxies, at 1s
// for 1s.
func oneFaultExperiment(url, workload string) string {
	return fmt.Sprintf(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: one-fault}
target: {llm: {url: %q, model: llmchaos-sim}}
workload: %s
faults:
  - {name: slow, type: network.latency, at: 1s, duration: 1s, params: {latency: 20ms}}
recovery: {window: 500ms, hold: 500ms, latency_band: 20}
`, url, workload)
}

// countResolution runs f and counts the decodings of fault params into
// their structs and the validations of arrival configs it makes. The
// hooks are process-wide: a test that counts does not run in parallel.
func countResolution(t *testing.T, f func()) (decodes, validations int64) {
	t.Helper()
	var d, v atomic.Int64
	restoreDecode := spec.SetDecodeHook(func() { d.Add(1) })
	restoreValidate := workload.SetValidateHook(func() { v.Add(1) })
	f()
	restoreValidate()
	restoreDecode()
	t.Logf("decodes %d, arrival validations %d", d.Load(), v.Load())
	return d.Load(), v.Load()
}

// oneFaultSetup serves the simulator, makes the verbs run in the test's
// process start their helpers (proxies) from the built llmchaos, and
// writes oneFaultExperiment with the workload given into a directory of
// its own; it returns the file.
func oneFaultSetup(t *testing.T, workload string) string {
	t.Helper()
	bin := needBinary(t)
	old := ownExecutable
	ownExecutable = func() (string, error) { return bin, nil }
	t.Cleanup(func() { ownExecutable = old })
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	file := filepath.Join(t.TempDir(), "one-fault.yaml")
	writeFile(t, file, oneFaultExperiment(url, workload))
	return file
}

// checkFaultRan fails the test unless the run.json at path records the
// one fault injected.
func checkFaultRan(t *testing.T, path string) {
	t.Helper()
	run, err := os.ReadFile(path)
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
	if len(doc.Faults) != 1 || doc.Faults[0].Name != "slow" || doc.Faults[0].InjectedS == nil {
		t.Fatalf("run.json faults = %+v, want the one fault, injected", doc.Faults)
	}
}

// checkOnce fails the test unless the params were decoded once and the
// arrival config validated once.
func checkOnce(t *testing.T, decodes, validations int64) {
	t.Helper()
	if decodes != 1 {
		t.Errorf("the fault's params were decoded %d times, want once", decodes)
	}
	if validations != 1 {
		t.Errorf("the arrival config was validated %d times, want once", validations)
	}
}

// One llmchaos run of a one-fault experiment resolves it once: the
// fault's params are decoded into their struct once and the arrival
// config is validated once, however many parts of the run (the plan, the
// proxies, the timeline, the engine, the schedule) use them; with the
// command line's overrides too, which change the file before its one
// resolution.
func TestRunResolvesOnce(t *testing.T) {
	file := oneFaultSetup(t, "{preset: chat, rate: 20, duration: 4s, input_tokens: 16, output_tokens: 4}")
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"as written", nil},
		{"with overrides", []string{"--duration", "3s", "--threshold", "requests_lost: count==0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			var stdout, stderr bytes.Buffer
			decodes, validations := countResolution(t, func() {
				args := append([]string{"run", file, "--no-guard", "--no-scrape", "--progress", "0", "--out", out}, tt.args...)
				if code := execute(context.Background(), args, &stdout, &stderr); code != exitcode.OK {
					t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
				}
			})
			checkFaultRan(t, filepath.Join(out, "run.json"))
			checkOnce(t, decodes, validations)
		})
	}
}

// llmchaos suite resolves each experiment once, with the suite's
// overrides and a rate taken from a capacity file: its params are decoded
// once and its arrival config validated once, for the plan, the health
// check and the run.
func TestSuiteResolvesOnce(t *testing.T) {
	file := oneFaultSetup(t, "{preset: chat, rate: 50%, capacity: capacity.json, duration: 4s, input_tokens: 16, output_tokens: 4}")
	dir := filepath.Dir(file)
	writeFile(t, filepath.Join(dir, "capacity.json"), `{"kind":"llmchaos-capacity","version":1,"mode":"rate","unit":"req/s","status":"found","workload":{"preset":"chat"},"knee":{"load":40}}`)
	suiteFile := filepath.Join(dir, "suite.yaml")
	writeFile(t, suiteFile, `apiVersion: llmchaos/v1
kind: Suite
metadata: {name: once}
overrides: {duration: 3s}
experiments:
  - {path: one-fault.yaml}
`)
	out := filepath.Join(dir, "suite")
	var stdout, stderr bytes.Buffer
	decodes, validations := countResolution(t, func() {
		args := []string{"suite", suiteFile, "--no-guard", "--progress", "0", "--out", out}
		if code := execute(context.Background(), args, &stdout, &stderr); code != exitcode.OK {
			t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
		}
	})
	if want := "llmchaos suite: one-fault: workload.rate 50% of the knee 40 req/s"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
	}
	checkFaultRan(t, filepath.Join(out, "01-one-fault", "run.json"))
	checkOnce(t, decodes, validations)
}

// A game day resolves its experiment once: the timeline's fault,
// played from the console, decoded once, and the load's shape validated
// once (the game day's load lasts until it is ended, --max-duration here,
// and is paced live, without a second check).
func TestGameDayResolvesOnce(t *testing.T) {
	file := oneFaultSetup(t, "{preset: chat, rate: 20, duration: 5s, input_tokens: 16, output_tokens: 4}")
	out := filepath.Join(filepath.Dir(file), "run")
	var code int
	decodes, validations := countResolution(t, func() {
		g := startCmd(t, "gameday", file, "--no-guard", "--no-scrape", "--max-duration", "5s", "--out", out)
		m := waitOutput(t, g.out, consoleLine, g.done)
		api := func(method, path string, out any) int {
			req, err := http.NewRequest(method, m[1]+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+m[2])
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0
			}
			defer res.Body.Close()
			if out != nil {
				_ = json.NewDecoder(res.Body).Decode(out)
			}
			return res.StatusCode
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var st struct {
				Status struct {
					GateOpen bool `json:"gate_open"`
				}
			}
			if api("GET", "/api/status", &st) == http.StatusOK && st.Status.GateOpen {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("faults not allowed within 30s:\n%s", g.out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if c := api("POST", "/api/timeline/play", nil); c != http.StatusOK {
			t.Fatalf("POST /api/timeline/play: %d\n%s", c, g.out)
		}
		select {
		case code = <-g.done:
			g.done <- code // for startCmd's cleanup
		case <-time.After(60 * time.Second):
			t.Fatalf("the game day did not end within 60s:\n%s", g.out)
		}
		if code != exitcode.OK {
			t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, g.err, g.out)
		}
	})
	checkFaultRan(t, filepath.Join(out, "run.json"))
	checkOnce(t, decodes, validations)
}

// The game day and the suite take every experiment llmchaos run takes,
// resolved to the same values: each catalog experiment's plan as run
// --dry-run prints it equals the plan of the experiment the game day's
// loader resolves and that of the experiment the suite's loader resolves;
// and a rate given as a share of a measured capacity file is applied by
// all three.
func TestGameDayAndSuiteResolveAsRun(t *testing.T) {
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
			sp, ps, err := suite.Load([]string{f}, suite.Selection{})
			if err != nil || sp == nil || len(sp.Items) != 1 {
				t.Fatalf("the suite's loader refuses what run takes: %v\n%v", err, ps)
			}
			var splan bytes.Buffer
			serr := experiments.DryRunExperiment(&splan, sp.Items[0].Experiment, experiments.Options{RunDir: runDir, File: f, ToolVersion: toolVersion()})
			if (serr == nil) != (gerr == nil) || splan.String() != plan.String() {
				t.Errorf("the suite's plan (%v) differs from the game day's (%v):\nsuite:\n%s\ngame day:\n%s", serr, gerr, splan.String(), plan.String())
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
