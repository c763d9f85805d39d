package js

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grafana/sobek"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestExceptionAfterAwaitFailsTheCall(t *testing.T) {
	vu, sh, err := loadVU(t, writeScripts(t, map[string]string{"script.js": `import { Counter } from 'k6/metrics';
const reached = new Counter('reached');
const later = () => new Promise((resolve) => setTimeout(resolve, 1));
export async function setup() {
  await later();
  return { n: 41 };
}
export default async function (data) {
  await later();
  reached.add(data.n);
  await null;
  if (__ITER === 1) {
    throw new Error('boom after await ' + __ITER);
  }
}
export async function teardown(data) {
  await later();
  throw new TypeError('teardown broke with ' + data.n);
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	data, err := vu.Setup(context.Background())
	if err != nil || data != `{"n":41}` {
		t.Fatalf("setup: got %q, %v, want its awaited data", data, err)
	}
	if err := vu.SetData(data); err != nil {
		t.Fatal(err)
	}
	var its []Iteration
	for range 3 {
		its = append(its, runDefault(context.Background(), t, vu))
	}
	for i, it := range its {
		switch {
		case it.Interrupted:
			t.Errorf("iteration %d: interrupted", i)
		case i == 1 && (it.Err == nil || it.Err.Pos == "" || !strings.Contains(it.Err.Pos, "script.js:13:") ||
			!strings.Contains(it.Err.Msg, "Error: boom after await 1")):
			t.Errorf("iteration 1: got error %v, want Error: boom after await 1 at script.js:13", it.Err)
		case i != 1 && it.Err != nil:
			t.Errorf("iteration %d: got error %v, want none", i, it.Err)
		}
	}
	err = vu.Teardown(context.Background(), data)
	if err == nil || !strings.Contains(err.Error(), "script.js:18:") || !strings.Contains(err.Error(), "TypeError: teardown broke with 41") {
		t.Errorf("teardown: got %v, want TypeError: teardown broke with 41 at script.js:18", err)
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	for name, want := range map[string]float64{MetricIterations: 3, MetricIterationsFailed: 1, "reached": 3 * 41} {
		if got := sum.Custom(name, recording.TagFilter{}); got == nil || got.Sum != want {
			t.Errorf("%s: got %+v, want a sum of %v", name, got, want)
		}
	}
}

func TestUnhandledRejectionFailsTheIteration(t *testing.T) {
	r := runIteration(context.Background(), t, `
export default function () {
  Promise.reject(new RangeError('nobody caught me'));
  Promise.reject(new Error('caught')).catch(() => {});
}
`, nil)
	if r.it.Err == nil || !strings.Contains(r.it.Err.Msg, "Uncaught (in promise) RangeError: nobody caught me") ||
		!strings.Contains(r.it.Err.Pos, "script.js:3:") {
		t.Errorf("got %v, want the uncaught rejection with its position", r.it.Err)
	}
}

func TestTimersRunOnTheVUsEventLoop(t *testing.T) {
	r := runIteration(context.Background(), t, jsAsserts+`
import * as timers from 'k6/timers';
import { check } from 'k6';
export default async function () {
  eq(timers.setTimeout, setTimeout, 'k6/timers exports the global setTimeout');
  eq(typeof clearInterval, 'function', 'typeof clearInterval');
  eq('setInterval' in globalThis && globalThis.clearTimeout === clearTimeout, true, 'timers are globals');
  const seen = [];
  setTimeout((a, b) => seen.push('timeout ' + a + b), 5, 'x', 'y');
  setTimeout(() => seen.push('zero'), 0);
  const never = setTimeout(() => seen.push('cleared'), 1);
  clearTimeout(never);
  await new Promise((resolve) => {
    let ticks = 0;
    const iv = timers.setInterval(() => {
      ticks++;
      seen.push('tick ' + ticks);
      if (ticks === 3) {
        clearInterval(iv);
        resolve();
      }
    }, 1);
  });
  // A timer cleared by another that falls due first never runs.
  let victim;
  setTimeout(() => clearTimeout(victim), 2);
  victim = setTimeout(() => seen.push('victim'), 2);
  // Due after every timer above: timers run in the order they fall due.
  await new Promise((resolve) => setTimeout(resolve, 6));
  seen.sort();
  eq(seen.join(','), 'tick 1,tick 2,tick 3,timeout xy,zero', 'timers in their order');
  // The iteration goes on past its function's end: this check runs from
  // a timer, after the function returned.
  setTimeout(() => check(seen, { 'saw all': (s) => s.length === 5 }), 1);
}
`, nil)
	r.mustPass(t)
	if c := r.sum.Custom(MetricChecks, recording.TagFilter{}); c == nil || c.Count != 1 || c.Rate() != 1 {
		t.Errorf("checks: got %+v, want the one check a timer made after the function returned, passed", c)
	}
}

func TestTimerGlobalsCanBeReplaced(t *testing.T) {
	r := runIteration(context.Background(), t, jsAsserts+`
globalThis.setTimeout = function (fn) { return 'mine'; };
export default function () {
  eq(setTimeout(() => {}), 'mine', 'the script\'s own setTimeout');
  eq(typeof setInterval, 'function', 'the others stay');
}
`, nil)
	r.mustPass(t)
}

func TestTimerCallbackExceptionFailsTheIteration(t *testing.T) {
	r := runIteration(context.Background(), t, `
export default function () {
  setTimeout(() => {
    throw new Error('from a timer');
  }, 1);
}
`, nil)
	if r.it.Err == nil || !strings.Contains(r.it.Err.Msg, "Error: from a timer") || !strings.Contains(r.it.Err.Pos, "script.js:4:") {
		t.Errorf("got %v, want the timer's exception at script.js:4", r.it.Err)
	}
}

func TestTopLevelAwaitSettlesInInit(t *testing.T) {
	r := runIteration(context.Background(), t, jsAsserts+`
const config = await new Promise((resolve) => setTimeout(() => resolve({ ready: true }), 1));
export default function () {
  eq(config.ready, true, 'top-level await');
}
`, nil)
	r.mustPass(t)
}

// TestCutIterationLeavesNothingBehind: an iteration cut while its timers
// wait ends at once, and its timers never run afterwards, in the next
// iteration or later.
func TestCutIterationLeavesNothingBehind(t *testing.T) {
	vu, sh, err := loadVU(t, writeScripts(t, map[string]string{"script.js": `import { Counter } from 'k6/metrics';
const late = new Counter('late');
const started = new Counter('started');
export default async function () {
  if (__ITER === 0) {
    setInterval(() => late.add(1), 5);
    setTimeout(() => late.add(1), 30);
    started.add(1);
    await new Promise(() => {}); // never settles, so the loop waits on the timers
  }
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sh.SetHooks(Hooks{Sample: func(name string, _ recording.Tags, _ float64) {
		if name == "started" {
			cancel()
		}
	}})
	if it := runDefault(ctx, t, vu); !it.Interrupted {
		t.Fatalf("first iteration: got %+v, want it interrupted", it)
	}
	// The next iteration outlives the first one's timers.
	if it := runDefault(context.Background(), t, vu); it.Err != nil || it.Interrupted {
		t.Fatalf("second iteration: got %+v", it)
	}
	_, err = vu.invoke(context.Background(), mustFunc(t, vu, `() => new Promise((resolve) => setTimeout(resolve, 60))`))
	if err != nil {
		t.Fatal(err)
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	if c := sum.Custom("late", recording.TagFilter{}); c != nil && c.Count > 0 {
		t.Errorf("late: got %d samples from the cut iteration's timers, want none", c.Count)
	}
	if c := sum.Custom(MetricIterations, recording.TagFilter{}); c == nil || c.Sum != 1 {
		t.Errorf("iterations: got %+v, want 1 (the cut one is not counted)", c)
	}
	if got := sh.Exec.Interrupted(); got != 1 {
		t.Errorf("interrupted iterations: got %d, want 1", got)
	}
}

// mustFunc evaluates src, a function expression, in vu's runtime.
func mustFunc(t *testing.T, vu *VU, src string) sobek.Callable {
	t.Helper()
	v, err := vu.rt.RunString(src)
	if err != nil {
		t.Fatal(err)
	}
	fn, ok := sobek.AssertFunction(v)
	if !ok {
		t.Fatalf("%s is not a function", src)
	}
	return fn
}

// The cut routes of a VU's call: each way an iteration can be stalled
// when its context ends.
func TestNothingIsRecordedAfterTheCut(t *testing.T) {
	// startStaller serves streams that stall after their first bytes and
	// says so on stalled; each subtest has its own, so that a stream of
	// the one before (http.batch's second, say) cannot cut the next.
	startStaller := func(t *testing.T) (*rawEngine, chan struct{}) {
		stalled := make(chan struct{}, 16)
		stall := func(head string) func(c *engineConn) bool {
			return func(c *engineConn) bool {
				c.write(head)
				stalled <- struct{}{}
				c.waitClosed()
				return false
			}
		}
		return startRawEngine(t, map[string]func(c *engineConn) bool{
			"/http": stall("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nhalf of it"),
			"/sse":  stall(sseHead + "data: first\n\n"),
			"/v1/chat/completions": stall(sseHead + chunkEvent(`{"role":"assistant","content":""}`, "") +
				chunkEvent(`{"content":"Once"}`, "")),
		}), stalled
	}
	script := `
import { check, sleep, group } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import http from 'k6/http';
import sse from 'k6/x/sse';
import llm from 'k6/x/llm';
const before = new Counter('before');
const after = new Counter('after');
const afterTrend = new Trend('after_trend');
const client = new llm.Client({ baseURL: __ENV.URL + '/v1', model: 'm' });
const ask = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 };

async function stalled() {
  switch (__ENV.WHAT) {
  case 'sleep': return sleep(600);
  case 'http': return http.get(__ENV.URL + '/http');
  case 'http-batch': return http.batch([__ENV.URL + '/http', __ENV.URL + '/http']);
  case 'sse': return sse.open(__ENV.URL + '/sse', (c) => { c.on('event', () => check(1, { 'event seen': () => true })); });
  case 'llm': return client.chat(ask);
  case 'llm-onToken': return client.chat(Object.assign({ onToken: () => check(1, { 'token seen': () => true }) }, ask));
  case 'timer': return new Promise((resolve) => setTimeout(resolve, 600000));
  case 'group': return group('g', () => sleep(600));
  }
  throw new Error('unknown WHAT ' + __ENV.WHAT);
}

export default async function () {
  before.add(1);
  const r = await stalled();
  check(r, { 'after the stall': () => true });
  after.add(1);
  afterTrend.add(1);
}
`
	for _, what := range []string{"sleep", "http", "http-batch", "sse", "llm", "llm-onToken", "timer", "group"} {
		t.Run(what, func(t *testing.T) {
			e, stalled := startStaller(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			server := what != "sleep" && what != "timer" && what != "group"
			began := make(chan struct{}, 1)
			go func() {
				if server {
					select { // the server holds the stream: cut it
					case <-stalled:
					case <-ctx.Done():
						return
					}
				} else {
					// Nothing to observe from outside once the iteration
					// began: the cut lands before or during the wait, and
					// either way nothing after it may be recorded.
					select {
					case <-began:
					case <-ctx.Done():
						return
					}
					t := time.NewTimer(20 * time.Millisecond)
					defer t.Stop()
					select {
					case <-t.C:
					case <-ctx.Done():
						return
					}
				}
				cancel()
			}()
			r := runIteration(ctx, t, script, map[string]string{"URL": e.URL, "WHAT": what}, func(sh *Shared) {
				sh.SetHooks(Hooks{Sample: func(name string, _ recording.Tags, _ float64) {
					if name == "before" {
						began <- struct{}{}
					}
				}})
			})
			if !r.it.Interrupted || r.it.Err != nil {
				t.Fatalf("got iteration %+v, want it interrupted\n%s", r.it, r.console)
			}
			// The SSE stream's first event may be checked before the cut.
			afterCheck := extra("check", "after the stall")
			if got := r.countOf(MetricChecks, afterCheck); got != 0 {
				t.Errorf("checks after the stall: got %d samples, want none", got)
			}
			for name, want := range map[string]int64{"before": 1, "after": 0, "after_trend": 0,
				MetricIterations: 0, MetricIterationDuration: 0, MetricIterationsFailed: 0, MetricHTTPReqs: 0, MetricHTTPReqDuration: 0} {
				if got := r.countOf(name, recording.TagFilter{}); got != want {
					t.Errorf("%s: got %d samples, want %d", name, got, want)
				}
			}
			if got := r.countOf(MetricSSEEvent, recording.TagFilter{}); what == "sse" && got > 1 {
				t.Errorf("sse_event: got %d, want at most the one event before the cut", got)
			}
			req := r.sum.Requests()
			if strings.HasPrefix(what, "llm") && (req.Scheduled != 1 || req.OK != 0 || req.Lost != 0) {
				t.Errorf("llm request: got %d scheduled, %d ok, %d lost: want the cut stream recorded once, not as ok", req.Scheduled, req.OK, req.Lost)
			}
		})
	}
}

// TestCallsWaitForTheirAsynchronousWork: asynchronous work a call starts
// keeps the call going until its callback is queued, which then runs on
// the VU's goroutine; the work's context ends with the call, and a
// callback queued after its call ended never runs.
func TestCallsWaitForTheirAsynchronousWork(t *testing.T) {
	vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": "export default function () {}\n"}))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	var workCtx context.Context
	start := func(then func()) sobek.Callable {
		return func(sobek.Value, ...sobek.Value) (sobek.Value, error) {
			ctx, enqueue := vu.asyncWork()
			workCtx = ctx
			_, late := vu.asyncWork()
			go func() {
				enqueue(func() error {
					ran++
					late(func() error { ran += 100; return nil })
					return nil
				})
				then()
			}()
			return sobek.Undefined(), nil
		}
	}
	if _, err := vu.invoke(context.Background(), start(func() {})); err != nil || ran != 101 {
		t.Fatalf("got %v, ran %d: want the callbacks run by the loop, in their call", err, ran)
	}
	if workCtx.Err() == nil {
		t.Error("the work's context outlived its call")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var leftOver func(func() error)
	_, err = vu.invoke(ctx, func(sobek.Value, ...sobek.Value) (sobek.Value, error) {
		_, leftOver = vu.asyncWork()
		cancel()
		return sobek.Undefined(), nil
	})
	if !errors.Is(err, errIterationInterrupted) {
		t.Fatalf("got %v, want the call interrupted while its work was pending", err)
	}
	leftOver(func() error { ran = -1; return nil })
	if _, err := vu.invoke(context.Background(), start(func() {})); err != nil || ran != 202 {
		t.Errorf("got %v, ran %d: a callback of an ended call must not run in the next", err, ran)
	}
}
