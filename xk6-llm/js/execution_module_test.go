package js

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestExecutionModuleReportsTheVUScenarioAndInstance(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `import exec from 'k6/execution';
import { vu, scenario, instance } from 'k6/execution';
import { Counter } from 'k6/metrics';
const seen = new Counter('seen');
export const idInInit = exec.vu.idInTest;
let scenarioInInit = 'readable';
try { exec.scenario.name; } catch (e) { scenarioInInit = String(e); }
export const scenarioError = scenarioInInit;
export default function () {
  const it = scenario.iterationInTest;
  if (vu.idInInstance !== 3 || vu.idInTest !== 3) throw new Error('vu id ' + vu.idInInstance);
  if (vu.iterationInInstance !== __ITER || vu.iterationInScenario !== __ITER) throw new Error('vu iteration ' + vu.iterationInInstance);
  if (scenario.name !== 'sc' || scenario.executor !== 'constant-vus') throw new Error('scenario ' + scenario.name);
  if (scenario.iterationInInstance !== it) throw new Error('iterationInInstance ' + scenario.iterationInInstance);
  if (scenario.progress !== 0.25 || scenario.startTime !== 1700000000000) throw new Error('progress ' + scenario.progress + ' start ' + scenario.startTime);
  if (instance.iterationsCompleted !== __ITER) throw new Error('completed ' + instance.iterationsCompleted);
  if (instance.vusActive !== 7 || instance.vusInitialized !== 9) throw new Error('vus ' + instance.vusActive);
  if (!(instance.currentTestRunDuration >= 0)) throw new Error('duration ' + instance.currentTestRunDuration);
  if (exec.test.options.vus !== 4) throw new Error('options ' + JSON.stringify(exec.test.options));
  if (vu.tags.scenario !== 'sc' || vu.metrics.tags.team !== 'qa') throw new Error('tags ' + JSON.stringify(vu.tags));
  if (__ITER === 1) { vu.tags.class = 'second'; vu.tags.weight = 2; }
  seen.add(1);
}
`})
	vu, sh, err := loadVU(t, dir) // VU 1
	if err != nil {
		t.Fatal(err)
	}
	if got := vu.exports.Get("idInInit").ToInteger(); got != 1 {
		t.Errorf("exec.vu.idInTest in init: got %d, want 1", got)
	}
	vu.ID = 3 // the fields are read when the script reads them
	if got := vu.exports.Get("scenarioError").String(); !strings.Contains(got, "not in the init context") {
		t.Errorf("exec.scenario in init: got %q, want an error saying it is not available there", got)
	}
	sh.Exec.AddActive(7)
	sh.Exec.AddInitialized(9)
	sh.Exec.SetOptions(`{"vus":4}`)
	sc := &Scenario{Name: "sc", Executor: "constant-vus", Exec: "default",
		Tags: map[string]string{"scenario": "sc", "team": "qa"}, Progress: func() float64 { return 0.25 }}
	sc.MarkStarted(time.UnixMilli(1700000000000))
	if err := vu.Activate(sc); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if it := vu.Run(context.Background()); it.Err != nil {
			t.Fatalf("iteration %d: %v", i, it.Err)
		}
	}
	if got := sc.Iterations(); got != 3 {
		t.Errorf("scenario iterations: got %d, want 3", got)
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	for _, c := range []struct {
		name   string
		filter recording.TagFilter
		want   float64
	}{
		{"seen in the scenario", recording.TagFilter{Scenario: "sc"}, 3},
		{"seen after vu.tags.class was set", recording.TagFilter{Scenario: "sc", Class: "second"}, 2},
	} {
		if got := sum.Custom("seen", c.filter).Sum; got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if got := sum.Custom(MetricIterations, recording.TagFilter{Scenario: "sc"}).Sum; got != 3 {
		t.Errorf("iterations{scenario:sc}: got %v, want 3", got)
	}
}

func TestExecutionModuleRefusesBadWrites(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"read-only field", "exec.vu.idInTest = 5;", "exec.vu.idInTest is read-only"},
		{"object as a tag", "exec.vu.tags.x = { a: 1 };", "a tag's value must be a string, a number or a boolean"},
		{"scenario outside an iteration", "exec.scenario.name;", "only available in an iteration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": "import exec from 'k6/execution';\n" +
				"export function setup() { " + tt.body + " }\nexport default function () {}\n"}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = vu.Setup(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestTestAbortStopsTheIterationAndCallsTheRunsAbort(t *testing.T) {
	vu, sh, err := loadVU(t, writeScripts(t, map[string]string{"script.js": `import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
const after = new Counter('after_abort');
export default function () {
  if (__ITER === 1) { exec.test.abort('enough'); after.add(1); }
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	sh.Exec.SetAbort(func(r string) { reasons = append(reasons, r) })
	if err := vu.Activate(&Scenario{Name: "a", Exec: "default"}); err != nil {
		t.Fatal(err)
	}
	var its []Iteration
	for range 3 {
		its = append(its, vu.Run(context.Background()))
	}
	if its[0].Interrupted || !its[1].Interrupted || its[2].Interrupted || its[2].Err != nil {
		t.Errorf("got iterations %+v, want the second interrupted and the VU usable after it", its)
	}
	if len(reasons) != 1 || reasons[0] != "enough" {
		t.Errorf("abort got reasons %q, want [enough]", reasons)
	}
	if sh.Exec.Interrupted() != 1 || sh.Exec.Completed() != 2 {
		t.Errorf("got %d interrupted and %d completed iterations, want 1 and 2", sh.Exec.Interrupted(), sh.Exec.Completed())
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	if s := sum.Custom("after_abort", recording.TagFilter{}); s != nil {
		t.Errorf("the iteration went on after abort: %d samples", s.Count)
	}
	if got := sum.Custom(MetricIterationsInterrupted, recording.TagFilter{}).Sum; got != 1 {
		t.Errorf("iterations_interrupted: got %v, want 1", got)
	}
	if ae := (&AbortError{Reason: "enough"}); !errors.As(error(ae), new(*AbortError)) || !strings.Contains(ae.Error(), "enough") {
		t.Errorf("AbortError %q does not carry its reason", ae.Error())
	}
}

func TestRandomSeedMakesMathRandomRepeatable(t *testing.T) {
	script := map[string]string{"script.js": `import { randomSeed } from 'k6';
export function draw(seed) { randomSeed(seed); return [Math.random(), Math.random(), Math.random()].join(','); }
export default function () {}
`}
	draw := func(seed int) string {
		vu, _, err := loadVU(t, writeScripts(t, script))
		if err != nil {
			t.Fatal(err)
		}
		v, err := vu.call(context.Background(), "draw", vu.rt.ToValue(seed))
		if err != nil {
			t.Fatal(err)
		}
		return v.String()
	}
	a, b, c := draw(42), draw(42), draw(43)
	if a != b {
		t.Errorf("seed 42 drew %s then %s in two VUs, want the same", a, b)
	}
	if a == c {
		t.Errorf("seeds 42 and 43 drew the same %s", a)
	}
}

func TestTestFailMarksTheRunAndLetsTheIterationGoOn(t *testing.T) {
	var console strings.Builder
	sh, err := NewShared(SharedOptions{Console: &console})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	prog, err := Load(filepath.Join(writeScripts(t, map[string]string{"script.js": `import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
const after = new Counter('after_fail');
export default function () {
  if (__ITER === 1) { exec.test.fail('too slow'); }
  after.add(1);
}
`}), "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	vu, err := NewVU(context.Background(), 1, prog, sh)
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := sh.Exec.MarkedFailed(); failed {
		t.Fatal("marked failed before any call of exec.test.fail()")
	}
	for range 3 {
		if it := runDefault(context.Background(), t, vu); it.Err != nil || it.Interrupted {
			t.Fatalf("got iteration %+v, want it to go on past exec.test.fail()", it)
		}
	}
	if reason, failed := sh.Exec.MarkedFailed(); !failed || reason != "too slow" {
		t.Errorf("got %q, %v: exec.test.fail() did not mark the run failed with its reason", reason, failed)
	}
	if !strings.Contains(console.String(), `level=error msg="test marked as failed: too slow"`) {
		t.Errorf("console lacks the reason:\n%s", console.String())
	}
	if got := sh.Recorder.Finish(sh.Clock.Now()).Custom("after_fail", recording.TagFilter{}).Sum; got != 3 {
		t.Errorf("after_fail: got %v, want 3", got)
	}

	_, _, err = loadVU(t, writeScripts(t, map[string]string{"script.js": "import exec from 'k6/execution';\nexec.test.fail();\nexport default function () {}\n"}))
	if err == nil || !strings.Contains(err.Error(), "script.js:2:") || !strings.Contains(err.Error(), "outside of VU context") {
		t.Errorf("got %v, want exec.test.fail() in the init code refused at script.js:2", err)
	}
}
