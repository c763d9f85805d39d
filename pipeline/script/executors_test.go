package script

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// writeScript writes src as script.js in a temporary directory.
func writeScript(t testing.TB, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// custom returns a custom metric's sink over the tuples f selects, empty
// when nothing was recorded.
func custom(doc *report.Document, name string, f recording.TagFilter) sinkFigures {
	s := doc.Summary().Custom(name, f)
	if s == nil {
		return sinkFigures{}
	}
	return sinkFigures{Count: s.Count, Sum: s.Sum, Last: s.Last, Max: s.Max()}
}

// sinkFigures are the figures of a sink the tests look at.
type sinkFigures struct {
	Count          int64
	Sum, Last, Max float64
}

func TestExecutorsAndLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		check  func(t *testing.T, doc *report.Document, out string)
	}{
		{"arrival rate with one busy VU drops iterations", `import { sleep } from 'k6';
export const options = { scenarios: { busy: { executor: 'constant-arrival-rate', rate: 50, timeUnit: '1s', duration: '400ms', preAllocatedVUs: 1 } } };
export default function () { sleep(0.15); }
`, func(t *testing.T, doc *report.Document, _ string) {
			// 20 arrivals; one VU busy 150 ms serves about every 8th.
			it, dropped := custom(doc, js.MetricIterations, recording.TagFilter{}).Sum, custom(doc, js.MetricDroppedIterations, recording.TagFilter{}).Sum
			if it+dropped != 20 || it < 2 || it > 5 {
				t.Errorf("got %v iterations and %v dropped, want 20 in all with 2 to 5 run", it, dropped)
			}
			if got := custom(doc, js.MetricDroppedIterations, recording.TagFilter{Scenario: "busy"}).Sum; got != dropped {
				t.Errorf("dropped_iterations{scenario:busy}: got %v, want all %v", got, dropped)
			}
		}},
		{"arrival rate grows its VUs up to maxVUs", `import { sleep } from 'k6';
export const options = { scenarios: { grow: { executor: 'constant-arrival-rate', rate: 50, duration: '1s', preAllocatedVUs: 1, maxVUs: 10 } } };
export default function () { sleep(0.1); }
`, func(t *testing.T, doc *report.Document, _ string) {
			// 50 arrivals, each busy 100 ms: about 5 VUs at once. Each
			// arrival that finds none free is dropped and starts one
			// more VU's init, so a few are dropped at first, then none.
			it, dropped := custom(doc, js.MetricIterations, recording.TagFilter{}).Sum, custom(doc, js.MetricDroppedIterations, recording.TagFilter{}).Sum
			vusMax := custom(doc, js.MetricVUsMax, recording.TagFilter{}).Last
			if it+dropped != 50 || dropped > 20 {
				t.Errorf("got %v iterations and %v dropped, want 50 in all with at most 20 dropped", it, dropped)
			}
			if vusMax < 3 || vusMax > 10 {
				t.Errorf("vus_max: got %v, want 3 to 10 (grown from 1, never past maxVUs)", vusMax)
			}
		}},
		{"ramping arrival rate starts the integral of its rate", `export const options = { scenarios: { ramp: { executor: 'ramping-arrival-rate',
  startRate: 0, timeUnit: '1s', preAllocatedVUs: 2, maxVUs: 4, stages: [{ duration: '1s', target: 40 }] } } };
export default function () {}
`, func(t *testing.T, doc *report.Document, _ string) {
			// r(t) = 40t per second: ∫₀¹ = 20 starts.
			it, dropped := custom(doc, js.MetricIterations, recording.TagFilter{}).Sum, custom(doc, js.MetricDroppedIterations, recording.TagFilter{}).Sum
			if it+dropped != 20 || it < 15 {
				t.Errorf("got %v iterations and %v dropped, want 20 in all, at least 15 run", it, dropped)
			}
		}},
		{"ramping VUs follow the stages and ramp-downs interrupt", `import { sleep } from 'k6';
import exec from 'k6/execution';
import { Trend } from 'k6/metrics';
const active = new Trend('active_vus');
export const options = { scenarios: { r: { executor: 'ramping-vus', startVUs: 0, gracefulRampDown: '0s',
  stages: [{ duration: '300ms', target: 3 }, { duration: '300ms', target: 3 }, { duration: '300ms', target: 0 }] } } };
export default function () { active.add(exec.instance.vusActive); sleep(0.05); }
`, func(t *testing.T, doc *report.Document, _ string) {
			if got := custom(doc, js.MetricVUsMax, recording.TagFilter{}).Last; got != 3 {
				t.Errorf("vus_max: got %v, want 3 (the stages' most)", got)
			}
			if got := math.Round(custom(doc, "active_vus", recording.TagFilter{}).Max); got < 2 || got > 3 {
				t.Errorf("most VUs active seen by an iteration: got %v, want 3 (2 on a loaded machine)", got)
			}
			// Three VUs sleep in a loop; each ramp-down with
			// gracefulRampDown 0 catches its VU in an iteration.
			if got := custom(doc, js.MetricIterationsInterrupted, recording.TagFilter{}).Sum; got < 2 {
				t.Errorf("iterations_interrupted: got %v, want the ramp-downs' 2 or 3", got)
			}
			if got := custom(doc, js.MetricIterations, recording.TagFilter{Scenario: "r"}).Sum; got < 15 {
				t.Errorf("iterations{scenario:r}: got %v, want about 30", got)
			}
		}},
		{"gracefulStop's end interrupts iterations and counts them", `import { sleep } from 'k6';
export const options = { scenarios: { s: { executor: 'constant-vus', vus: 2, duration: '200ms', gracefulStop: '0s' } } };
export default function () { sleep(5); }
`, func(t *testing.T, doc *report.Document, _ string) {
			if got := custom(doc, js.MetricIterationsInterrupted, recording.TagFilter{Scenario: "s"}).Sum; got != 2 {
				t.Errorf("iterations_interrupted: got %v, want 2", got)
			}
			if got := custom(doc, js.MetricIterations, recording.TagFilter{}).Count; got != 0 {
				t.Errorf("iterations: got %v, want none completed", got)
			}
		}},
		{"scenario env and tags, options tags", `import { Counter } from 'k6/metrics';
const envSeen = new Counter('env_seen');
export const options = { tags: { class: 'all' }, scenarios: {
  a: { executor: 'per-vu-iterations', vus: 2, iterations: 3, env: { WHO: 'alpha' }, tags: { phase: 'p1' } },
  b: { executor: 'shared-iterations', vus: 2, iterations: 4, env: { WHO: 'beta' }, exec: 'other' } } };
export default function () { if (__ENV.WHO === 'alpha') envSeen.add(1); }
export function other() { if (__ENV.WHO === 'beta') envSeen.add(1); }
`, func(t *testing.T, doc *report.Document, _ string) {
			for _, c := range []struct {
				metric string
				f      recording.TagFilter
				want   float64
			}{
				{"env_seen", recording.TagFilter{Scenario: "a"}, 6},
				{"env_seen", recording.TagFilter{Scenario: "b"}, 4},
				{js.MetricIterations, recording.TagFilter{Class: "all", Phase: "p1"}, 6},
				{js.MetricIterations, recording.TagFilter{Class: "all", Scenario: "b"}, 4},
			} {
				if got := custom(doc, c.metric, c.f).Sum; got != c.want {
					t.Errorf("%s %+v: got %v, want %v", c.metric, c.f, got, c.want)
				}
			}
		}},
		{"setup data reaches every VU and teardown", `import { Counter } from 'k6/metrics';
const seen = new Counter('seen');
export const options = { scenarios: { a: { executor: 'per-vu-iterations', vus: 2, iterations: 2, exec: 'work' } } };
export function setup() { return { n: 21 }; }
export function work(data) { seen.add(data.n); }
export default function () { throw new Error('not this one'); }
export function teardown(data) { console.log('teardown got', data.n * 2); }
`, func(t *testing.T, doc *report.Document, out string) {
			if got := custom(doc, "seen", recording.TagFilter{}).Sum; got != 84 {
				t.Errorf("seen: got %v, want 84", got)
			}
			if !strings.Contains(out, "teardown got 42") {
				t.Errorf("console output %q lacks teardown's line", out)
			}
		}},
		{"noSetup and noTeardown skip setup and teardown", `export const options = { iterations: 1, noSetup: true, noTeardown: true };
export function setup() { console.log('setup ran'); return { n: 1 }; }
export default function (data) { console.log('data is ' + typeof data); }
export function teardown() { console.log('teardown ran'); }
`, func(t *testing.T, _ *report.Document, out string) {
			if strings.Contains(out, "setup ran") || strings.Contains(out, "teardown ran") || !strings.Contains(out, "data is undefined") {
				t.Errorf("want neither setup nor teardown run, and no data for the iteration:\n%s", out)
			}
		}},
		{"minIterationDuration spaces a VU's iterations", `export const options = { iterations: 2, minIterationDuration: '400ms' };
export default function () { console.log('started at ' + Date.now()); }
`, func(t *testing.T, _ *report.Document, out string) {
			var at []int64
			for _, f := range strings.Fields(out) {
				if n, err := strconv.ParseInt(strings.Trim(f, `"`), 10, 64); err == nil && n > 1e12 {
					at = append(at, n)
				}
			}
			if len(at) != 2 || at[1]-at[0] < 400 {
				t.Errorf("iterations started at %v (ms): want two, at least 400 ms apart\n%s", at, out)
			}
		}},
		{"summaryTrendStats picks the summary's columns", `import { Trend } from 'k6/metrics';
const t = new Trend('mine');
export const options = { iterations: 3, summaryTrendStats: ['avg', 'p(95)', 'max'] };
export default function () { t.add(__ITER); }
`, func(t *testing.T, _ *report.Document, out string) {
			if !strings.Contains(out, "p(95)") || strings.Contains(out, "p50") {
				t.Errorf("summary lacks the p(95) column or has the default ones:\n%s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && (strings.Contains(tt.name, "arrival") || strings.Contains(tt.name, "ramp")) {
				t.Skip("real-time schedule; its bounds are loose but need the clock")
			}
			var out strings.Builder
			doc, err := Run(context.Background(), Config{Script: writeScript(t, tt.script), Stdout: &out, Stderr: &out})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			tt.check(t, doc, out.String())
		})
	}
}

func TestAbortsEndTheRunAsAborted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		script    string
		cancelOn  string // cancel the caller's context when the console shows this
		wantCause string
		wantIters bool
		// wantInterrupted: some iteration was cut short and counted.
		wantInterrupted bool
	}{
		{"exec.test.abort() in an iteration", `import exec from 'k6/execution';
import { sleep } from 'k6';
export const options = { scenarios: { a: { executor: 'constant-vus', vus: 1, duration: '30s' } } };
export default function () { if (__ITER === 2) { exec.test.abort('stop now'); } sleep(0.01); }
export function teardown() { console.log('teardown ran'); }
`, "", report.AbortScript, true, true},
		{"exec.test.abort() in setup", `import exec from 'k6/execution';
export const options = { vus: 1, duration: '30s' };
export function setup() { exec.test.abort('stop now'); }
export default function () {}
`, "", report.AbortScript, false, false},
		{"exec.test.abort() in the init context", `import exec from 'k6/execution';
exec.test.abort('stop now');
export default function () {}
`, "", report.AbortScript, false, false},
		{"Ctrl-C during setup", `import { sleep } from 'k6';
export const options = { vus: 1, duration: '30s' };
export function setup() { console.log('setup started'); sleep(30); }
export default function () {}
`, "setup started", report.AbortInterrupted, false, false},
		{"Ctrl-C during the load", `import { sleep } from 'k6';
export const options = { vus: 2, duration: '30s' };
export default function () { console.log('iterating'); sleep(30); }
export function teardown() { console.log('teardown ran'); }
`, "iterating", report.AbortInterrupted, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &watchWriter{on: tt.cancelOn, fire: cancel}
			doc, err := Run(ctx, Config{Script: writeScript(t, tt.script), Stdout: out, Stderr: out})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if doc.Verdict != report.VerdictAborted || doc.Abort == nil || doc.Abort.Cause != tt.wantCause {
				t.Fatalf("got verdict %s, abort %+v, want aborted by %s\n%s", doc.Verdict, doc.Abort, tt.wantCause, out.String())
			}
			if tt.wantCause == report.AbortScript && doc.Abort.Detail != "stop now" {
				t.Errorf("abort detail: got %q, want the reason given", doc.Abort.Detail)
			}
			if got := custom(doc, js.MetricIterations, recording.TagFilter{}).Sum; (got > 0) != tt.wantIters {
				t.Errorf("got %v iterations, want some: %v", got, tt.wantIters)
			}
			if got := custom(doc, js.MetricIterationsInterrupted, recording.TagFilter{}).Sum; (got > 0) != tt.wantInterrupted {
				t.Errorf("got %v iterations interrupted, want some: %v", got, tt.wantInterrupted)
			}
			if strings.Contains(out.String(), "teardown ran") {
				t.Errorf("teardown ran after the abort")
			}
		})
	}
}

// watchWriter collects output and calls fire once when on appears in it.
type watchWriter struct {
	on   string
	fire func()

	mu    sync.Mutex
	b     strings.Builder
	fired bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.on != "" && !w.fired && strings.Contains(w.b.String(), w.on) {
		w.fired = true
		w.fire()
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestSetupAndTeardownTimeoutsAreScriptErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
		wantDoc            bool
	}{
		{"setup", `import { sleep } from 'k6';
export const options = { setupTimeout: '100ms' };
export function setup() { sleep(30); }
export default function () {}
`, "setup() did not end within setupTimeout (100ms)", false},
		{"teardown", `import { sleep } from 'k6';
export const options = { teardownTimeout: '100ms' };
export default function () {}
export function teardown() { sleep(30); }
`, "teardown() did not end within teardownTimeout (100ms)", true},
		{"bad summaryTrendStats", `export const options = { summaryTrendStats: ['avg', 'p(200)'] };
export default function () {}
`, `options.summaryTrendStats: trend stats "p(200)"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Run(context.Background(), Config{Script: writeScript(t, tt.script)})
			if _, ok := errors.AsType[*js.ScriptError](err); !ok || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v (%T), want a *js.ScriptError saying %q", err, err, tt.want)
			}
			if (doc != nil) != tt.wantDoc {
				t.Errorf("got report %v, want one: %v", doc != nil, tt.wantDoc)
			}
			// k6's exit codes tell them apart: 100, 101, 104.
			te, timedOut := errors.AsType[*TimeoutError](err)
			_, badOptions := errors.AsType[*OptionsError](err)
			switch tt.name {
			case "setup", "teardown":
				if !timedOut || te.Teardown != (tt.name == "teardown") || badOptions {
					t.Errorf("got %T %+v, want a *TimeoutError of %s", err, te, tt.name)
				}
			default:
				if !badOptions || timedOut {
					t.Errorf("got %T, want an *OptionsError", err)
				}
			}
		})
	}
}
