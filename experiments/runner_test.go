package experiments

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// planTolerance is how far from its plan a fault may be injected or
// reverted in a unit test: far above the target of 50 ms, which
// BenchmarkFaultTimeline reports (on this 2-core machine a busy CI run put
// a fake fault 63 ms late), and far below what a broken timeline does
// (a fault waiting for a whole window, a second, or the load's end).
const planTolerance = 500 * time.Millisecond

// skipShort skips runner tests that drive real load for seconds.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("drives seconds of real load; skipped under -short")
	}
}

// tupleCounts sums the finished requests of the report's tag tuples that
// carry phase (and fault, when not empty).
func tupleCounts(d *report.Document, phase, fault string) (ok, failed int64) {
	for _, ts := range d.Histograms.ByTags {
		if ts.Tags["phase"] != phase || (fault != "" && ts.Tags["fault"] != fault) {
			continue
		}
		ok += ts.Counts.OK
		failed += ts.Counts.Failed
	}
	return ok, failed
}

func TestRunNormalEnd(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	errs := newFakeFault(t, "errors", srv.failing.Store)
	idle := newFakeFault(t, "idle", nil)
	// idle comes once errors' recovery (1 s windows held 1 s from the
	// second after its revert) can be over: a recovery is never searched
	// across the next fault.
	exp := testSpec(srv.URL, 5*time.Second,
		httpErrorFault("errors", 800*time.Millisecond, 700*time.Millisecond),
		httpErrorFault("idle", 4*time.Second, 300*time.Millisecond))
	exp.Thresholds = spec.Thresholds{
		"error_rate{phase:fault,fault:errors}": {{Threshold: "rate>0.9"}},
		"error_rate{phase:baseline}":           {{Threshold: "rate<0.05"}}, // one request in flight at the injection may fail
		"recovery_time{fault:errors}":          {{Threshold: "max<3s"}},
		"requests_lost":                        {{Threshold: "count==0"}},
	}
	dir := t.TempDir()
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, Out: &out, hooks: fakeBuilds(map[string]faults.Fault{"errors": errs, "idle": idle})})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := o.Doc
	if d.Verdict != report.VerdictPass || o.Aborted {
		t.Errorf("verdict = %s (aborted %v %s), want pass; thresholds %+v\n%s", d.Verdict, o.Aborted, o.AbortDetail, d.Thresholds, out.String())
	}
	for _, f := range []*fakeFault{errs, idle} {
		if in, un := f.counts(); in != 1 || un != 1 {
			t.Errorf("fault %s: injected %d, undone %d times; want 1 and 1", f.name, in, un)
		}
	}
	// Actual times never before the plan, and not far after it.
	for _, fr := range d.Faults {
		if fr.InjectedAtS == nil || fr.RevertedAtS == nil || !fr.RevertOK {
			t.Fatalf("fault %s: %+v, want injected and reverted", fr.Name, fr)
		}
		gotIn := time.Duration(*fr.InjectedAtS * float64(time.Second))
		gotOut := time.Duration(*fr.RevertedAtS * float64(time.Second))
		wantIn := time.Duration(fr.PlannedAtS * float64(time.Second))
		wantOut := wantIn + time.Duration(fr.PlannedDurationS*float64(time.Second))
		if d := gotIn - wantIn; d < 0 || d > planTolerance {
			t.Errorf("fault %s injected at %v, planned %v: off by %v, want under %v", fr.Name, gotIn, wantIn, d, planTolerance)
		}
		if d := gotOut - wantOut; d < 0 || d > planTolerance {
			t.Errorf("fault %s reverted at %v, planned %v: off by %v, want under %v", fr.Name, gotOut, wantOut, d, planTolerance)
		}
	}
	// Phases tile the run: baseline, fault(errors), recovery(errors),
	// maybe after, fault(idle), ...
	var names []string
	for _, p := range d.Phases {
		names = append(names, p.Name+":"+p.Fault)
	}
	got := strings.Join(names, " ")
	if !strings.HasPrefix(got, "baseline: fault:errors recovery:errors") || !strings.Contains(got, "fault:idle") {
		t.Errorf("phases = %s, want baseline, fault:errors, recovery:errors, ..., fault:idle, ...", got)
	}
	if d.Phases[0].StartS != 0 || d.Phases[len(d.Phases)-1].EndS != d.DurationS {
		t.Errorf("phases %+v do not tile [0, %v)", d.Phases, d.DurationS)
	}
	// Results are tagged by the phase they were sent in: the server
	// failed exactly while "errors" was injected.
	// (A request sent in the instant between the fake's Undo and the
	// phase change may be ok: allow a few; on a loaded machine that
	// instant held two sends, at about 30 requests a phase.)
	if ok, failed := tupleCounts(d, PhaseFault, "errors"); failed < 10 || ok > 3 {
		t.Errorf("fault phase of errors: ok %d failed %d, want failures only", ok, failed)
	}
	// A request sent in the baseline and still on its way when the fault
	// went in may fail: allow one, as above.
	if ok, failed := tupleCounts(d, PhaseBaseline, ""); ok == 0 || failed > 1 {
		t.Errorf("baseline: ok %d failed %d, want only successes", ok, failed)
	}
	if len(d.Recovery) != 2 || !d.Recovery[0].Recovered || d.Recovery[0].RecoveryTimeS == nil {
		for _, row := range d.Timeseries {
			t.Logf("second %d: ok %d failed %d %v", row.T, row.OK, row.Failed, row.ErrorsByClass)
		}
		t.Fatalf("recovery = %+v, want errors recovered", d.Recovery)
	}
	// recovered at or after the revert (0.7s after injection), within the run
	if rt := *d.Recovery[0].RecoveryTimeS; rt < 0.7 || rt > 3 {
		t.Errorf("recovery_time of errors = %vs, want between 0.7s and 3s", rt)
	}
	// The journal shows nothing pending, and both faults begun.
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal pending = %+v, %v; want none", pend, err)
	}
	j, _ := os.ReadFile(filepath.Join(dir, faults.JournalFile))
	for _, want := range []string{`"name":"errors"`, `"name":"idle"`, `"kind":"test-fake"`} {
		if !bytes.Contains(j, []byte(want)) {
			t.Errorf("journal lacks %s:\n%s", want, j)
		}
	}
}

func TestRunRevertsOnCancel(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	f := newFakeFault(t, "errors", srv.failing.Store)
	exp := testSpec(srv.URL, 10*time.Second, httpErrorFault("errors", 300*time.Millisecond, 8*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooks := fakeBuilds(map[string]faults.Fault{"errors": f})
	// Cancel (as Ctrl-C does) once the fault is in: from the tag hook of
	// the first result sent in its phase.
	hooks.onTag = func(_ time.Duration, tags *recording.Tags) {
		if tags.Phase == PhaseFault {
			cancel()
		}
	}
	start := time.Now()
	o, err := runSpec(ctx, exp, Options{RunDir: t.TempDir(), hooks: hooks})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v after a cancel, want it to stop at once", took)
	}
	if in, un := f.counts(); in != 1 || un != 1 || f.isActive() {
		t.Errorf("injected %d, undone %d; want the one injection undone", in, un)
	}
	if !o.Aborted || o.AbortReason != AbortInterrupted || o.Doc.Verdict != report.VerdictAborted {
		t.Errorf("outcome aborted=%v reason=%q verdict=%s, want aborted by interruption", o.Aborted, o.AbortReason, o.Doc.Verdict)
	}
	if fr := o.Doc.Faults[0]; fr.RevertedAtS == nil || !fr.RevertOK {
		t.Errorf("fault record %+v, want reverted", fr)
	}
}

func TestRunRevertsOnPanic(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	f := newFakeFault(t, "errors", srv.failing.Store)
	exp := testSpec(srv.URL, 10*time.Second, httpErrorFault("errors", 300*time.Millisecond, 8*time.Second))
	hooks := fakeBuilds(map[string]faults.Fault{"errors": f})
	// A panic inside the load, on one of the engine's goroutines.
	hooks.onTag = func(_ time.Duration, tags *recording.Tags) {
		if tags.Phase == PhaseFault {
			panic("boom in the load")
		}
	}
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), hooks: hooks})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom in the load" {
		t.Fatalf("Run error = %v, want a *PanicError with the panic's value", err)
	}
	if in, un := f.counts(); in != 1 || un != 1 || f.isActive() {
		t.Errorf("injected %d, undone %d; want the one injection undone", in, un)
	}
	if o == nil || !o.Aborted || o.AbortReason != AbortError {
		t.Errorf("outcome %+v, want aborted with reason %q", o, AbortError)
	}
}

func TestRunRevertsOnStopCondition(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	f := newFakeFault(t, "errors", srv.failing.Store)
	exp := testSpec(srv.URL, 10*time.Second, httpErrorFault("errors", 500*time.Millisecond, 8*time.Second))
	exp.StopConditions = []spec.StopCondition{{Threshold: "error_rate: rate<0.3"}}
	start := time.Now()
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), hooks: fakeBuilds(map[string]faults.Fault{"errors": f})})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Run took %v, want the stop condition to end it within seconds of the fault", took)
	}
	if in, un := f.counts(); in != 1 || un != 1 || f.isActive() {
		t.Errorf("injected %d, undone %d; want the one injection undone", in, un)
	}
	if !o.Aborted || o.AbortReason != AbortStopCondition || o.Doc.Verdict != report.VerdictAborted {
		t.Errorf("outcome aborted=%v reason=%q verdict=%s, want aborted by the stop condition", o.Aborted, o.AbortReason, o.Doc.Verdict)
	}
	if !strings.Contains(o.AbortDetail, "error_rate") {
		t.Errorf("abort detail %q, want it to name error_rate", o.AbortDetail)
	}
}

func TestRunNotSteadyBefore(t *testing.T) {
	t.Parallel()
	skipShort(t)
	t.Run("http probe", func(t *testing.T) {
		srv := newSSEServer(t)
		srv.unhealthy.Store(true)
		f := newFakeFault(t, "errors", nil)
		exp := testSpec(srv.URL, 2*time.Second, httpErrorFault("errors", 500*time.Millisecond, time.Second))
		exp.SteadyState = []spec.Probe{{HTTP: &spec.HTTPProbe{URL: spec.TemplateTarget + "/health"}}}
		o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), hooks: fakeBuilds(map[string]faults.Fault{"errors": f})})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !o.NotSteady() || o.Doc.Verdict != report.VerdictAborted {
			t.Errorf("outcome reason %q verdict %s, want not steady", o.AbortReason, o.Doc.Verdict)
		}
		if in, _ := f.counts(); in != 0 || srv.requests.Load() != 0 {
			t.Errorf("injected %d times, %d requests sent; want nothing started", in, srv.requests.Load())
		}
		if ss := o.Doc.SteadyState; ss == nil || len(ss.Before) != 1 || ss.Before[0].OK {
			t.Errorf("steady state %+v, want one failed probe before", ss)
		}
	})
	t.Run("threshold over the baseline", func(t *testing.T) {
		srv := newSSEServer(t)
		srv.failing.Store(true) // the service fails from the start
		f := newFakeFault(t, "errors", nil)
		exp := testSpec(srv.URL, 5*time.Second, httpErrorFault("errors", time.Second, time.Second))
		exp.SteadyState = []spec.Probe{{Threshold: "error_rate: rate<0.01"}}
		o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), hooks: fakeBuilds(map[string]faults.Fault{"errors": f})})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !o.NotSteady() {
			t.Errorf("abort reason %q, want %q", o.AbortReason, AbortNotSteady)
		}
		if in, _ := f.counts(); in != 0 {
			t.Errorf("injected %d times, want no fault injected when the baseline is not steady", in)
		}
		if fr := o.Doc.Faults[0]; fr.InjectedAtS != nil || !strings.Contains(fr.Error, "not injected") {
			t.Errorf("fault record %+v, want not injected", fr)
		}
	})
}

func TestRunInjectFailure(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	f := newFakeFault(t, "broken", nil)
	f.injectErr = errors.New("target refused")
	exp := testSpec(srv.URL, 1500*time.Millisecond, httpErrorFault("broken", 300*time.Millisecond, 500*time.Millisecond))
	dir := t.TempDir()
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, hooks: fakeBuilds(map[string]faults.Fault{"broken": f})})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	fr := o.Doc.Faults[0]
	if fr.InjectedAtS != nil || !strings.Contains(fr.Error, "target refused") || !fr.RevertOK {
		t.Errorf("fault record %+v, want not injected, the error kept, nothing to revert", fr)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("pending %+v %v, want a failed injection closed in the journal", pend, err)
	}
}

// failingUndo is a fault whose Undo fails: the run must say so with a
// *RevertError naming it, and leave it pending for recover.
type failingUndo struct{}

func (failingUndo) Inject(_ context.Context, log faults.RevertLog) (faults.Undo, error) {
	if err := log.Will(faults.RevertSpec{Kind: "test-stuck", Data: []byte(`{}`)}); err != nil {
		return nil, err
	}
	return func(context.Context) error { return errors.New("iptables is gone") }, nil
}

func TestRunRevertFailure(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	exp := testSpec(srv.URL, 1500*time.Millisecond, httpErrorFault("stuck", 300*time.Millisecond, 500*time.Millisecond))
	dir := t.TempDir()
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, hooks: fakeBuilds(map[string]faults.Fault{"stuck": failingUndo{}})})
	var re *RevertError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `"stuck"`) || !strings.Contains(err.Error(), "iptables is gone") || !strings.Contains(err.Error(), "llmchaos recover --run-dir") {
		t.Fatalf("Run error = %v, want a *RevertError naming the fault, its error and how to recover", err)
	}
	if o == nil || o.Doc == nil || o.Doc.Faults[0].RevertOK {
		t.Fatalf("outcome %+v, want the report with revert_ok false", o)
	}
	pend, err := faults.Pending(dir)
	if err != nil || len(pend) != 1 || pend[0].Name != "stuck" {
		t.Errorf("pending = %+v, %v; want the fault left for recover", pend, err)
	}
}

func TestRunRefusesARunDirWithPendingFaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin("left-over", "replica.pause", "replica-0"); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	exp := testSpec("http://127.0.0.1:1", time.Second)
	_, err = runSpec(context.Background(), exp, Options{RunDir: dir})
	if err == nil || !strings.Contains(err.Error(), `"left-over"`) || !strings.Contains(err.Error(), "llmchaos recover --run-dir") {
		t.Errorf("Run = %v, want a refusal naming the pending fault and recover", err)
	}
}

// TestRunRealProxyFault runs a real proxy fault (the builders, not a fake)
// through a proxy the runner starts in this process: the fault's requests
// fail with the injected status, results carry the endpoint's own URL, and
// the toxic is gone after the revert.
//
// The fault phase also holds the requests sent while the toxic is being
// put in place and taken away (DESIGN §4: a request that may have met a
// fault is counted under it), which succeed: on a loaded machine a few.
// So no success is tolerated by count; each one is judged by causality.
// It was sent before Inject returned, or the upstream saw it (matched by
// X-Request-Id, on the upstream's own clock) after Undo began; one sent
// after Inject returned that reached the upstream before Undo began went
// through a toxic in force.
func TestRunRealProxyFault(t *testing.T) {
	t.Parallel()
	skipShort(t)
	var arrivals sync.Map // X-Request-Id → time.Time the upstream saw it
	srv := newSSEServerWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id := r.Header.Get("X-Request-Id"); id != "" && r.Method == http.MethodPost {
				arrivals.Store(id, time.Now())
			}
			h.ServeHTTP(w, r)
		})
	})
	var undoBegan atomic.Pointer[time.Time]
	hooks := &testHooks{wrap: func(_ string, f faults.Fault) faults.Fault {
		return undoStamp{f, &undoBegan}
	}}
	exp := testSpec(srv.URL, 2500*time.Millisecond,
		spec.Fault{Name: "unavailable", Type: "http.error", At: spec.Duration(500 * time.Millisecond), Duration: spec.Duration(time.Second), Params: map[string]any{"status": 503}})
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	w := recording.NewRequestWriter(file)
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, SaveRequests: w, hooks: hooks})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	d := o.Doc
	if ok, failed := tupleCounts(d, PhaseFault, "unavailable"); failed < 20 {
		t.Errorf("fault phase: ok %d failed %d, want ~40 failures", ok, failed)
	}
	undo := undoBegan.Load()
	if d.Faults[0].InjectedAtS == nil || undo == nil {
		t.Fatalf("fault record %+v, undo began %v: want it injected and undone", d.Faults[0], undo)
	}
	inForce := int64(*d.Faults[0].InjectedAtS * 1e6)
	lines := readSavedRequests(t, path)
	for _, l := range lines {
		if l.Phase != PhaseFault || l.Outcome != "ok" || l.SentUs < inForce {
			continue
		}
		at, seen := arrivals.Load(l.RequestID)
		if !seen {
			t.Errorf("request %s succeeded, but the upstream never saw it", l.RequestID)
		} else if at.(time.Time).Before(*undo) {
			t.Errorf("request %s sent at %d µs, after the toxic was in force (%d µs), reached the upstream %v before Undo began",
				l.RequestID, l.SentUs, inForce, undo.Sub(at.(time.Time)))
		}
	}
	if ok, failed := tupleCounts(d, PhaseRecovery, "unavailable"); ok == 0 || failed > 0 {
		t.Errorf("recovery phase: ok %d failed %d, want successes only once the toxic is removed", ok, failed)
	}
	for _, ts := range d.Histograms.ByTags {
		if ep := ts.Tags["endpoint"]; ep != srv.URL+"/v1" {
			t.Errorf("result tagged with endpoint %q, want the endpoint's own %q", ep, srv.URL+"/v1")
		}
	}
	if got := d.Requests.ErrorsByClass["http_5xx"]; got == 0 {
		t.Errorf("errors by class %v, want http_5xx from the proxy", d.Requests.ErrorsByClass)
	}
	// Every one of them was made by the proxy on purpose, and the fault's
	// record says how many.
	if n := d.Faults[0].RequestsActedOn; n == nil {
		t.Error("fault record has no requests_acted_on")
	} else if *n != d.Requests.ErrorsByClass["http_5xx"] {
		t.Errorf("fault record's requests_acted_on %d, want the %d http_5xx errors it made (requests %+v)", *n, d.Requests.ErrorsByClass["http_5xx"], d.Requests)
	}
	if f := d.Faults[0]; !strings.Contains(f.Target, "proxy endpoint-0") || !f.RevertOK {
		t.Errorf("fault record %+v, want it to name the proxy and be reverted", f)
	}
}

func TestRunKeepsSecretsOutOfTheReport(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	const secret = "sk-live-0123456789abcdefghij"
	file := filepath.Join(t.TempDir(), "secret.yaml")
	text := `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: secrets}
target:
  llm: {url: "` + srv.URL + `/v1", model: stub-model, headers: {X-Api-Token: "` + secret + `"}}
workload: {rate: 20, duration: 1s, input_tokens: 16, output_tokens: 4}
`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	exp, _, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), File: file, Out: &progress})
	if err != nil {
		t.Fatal(err)
	}
	var doc bytes.Buffer
	if err := report.Write(&doc, o.Doc); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"run.json": doc.Bytes(), "progress": progress.Bytes()} {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("0123456789abcdef")) {
			i := bytes.Index(b, []byte("0123456789abcdef"))
			t.Errorf("%s holds the header's secret: %s", name, b[max(i-300, 0):min(i+50, len(b))])
		}
	}
	if o.Doc.Experiment == nil || !strings.Contains(o.Doc.Experiment.Spec, "X-Api-Token") {
		t.Errorf("experiment record %+v, want the file's text (redacted)", o.Doc.Experiment)
	}
	if o.Doc.Requests.OK == 0 {
		t.Errorf("requests %+v, want the load to have run", o.Doc.Requests)
	}
}

// undoStamp is a fault whose Undo stores when it began, before the
// wrapped fault's Undo runs.
type undoStamp struct {
	faults.Fault
	began *atomic.Pointer[time.Time]
}

func (u undoStamp) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undo, err := u.Fault.Inject(ctx, log)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		now := time.Now()
		u.began.CompareAndSwap(nil, &now)
		return undo(ctx)
	}, nil
}

// Acted passes on what the proxy fault acted on, which the run records.
func (u undoStamp) Acted(ctx context.Context) (int64, error) {
	return u.Fault.(interface {
		Acted(context.Context) (int64, error)
	}).Acted(ctx)
}
