package experiments

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
)

// faultTimeline is the run's faults on the run clock: the faults built
// for the plan and where each acts (set by setUp before the load, read
// only afterwards), the ledger of those injected, and the record of each
// (injected, reverted, refused, failed), guarded by mu. The run's
// goroutines inject and revert through runFault and revertFault.
type faultTimeline struct {
	built   []faults.Fault
	targets []string // where each fault acts, for the journal and report
	ledger  *ledger

	mu         sync.Mutex
	recs       []report.FaultRecord
	revertErrs []error
	refused    []string // faults whose selection was refused (Outcome.Refused)
}

// newFaultTimeline returns the timeline of planned faults pfs, none built
// or injected yet.
func newFaultTimeline(pfs []*plannedFault) *faultTimeline {
	t := &faultTimeline{recs: make([]report.FaultRecord, len(pfs)), ledger: &ledger{active: map[int]*injection{}}}
	for i, pf := range pfs {
		t.recs[i] = report.FaultRecord{
			Name: pf.spec.Name, Type: pf.spec.Type,
			PlannedAtS: pf.spec.At.D().Seconds(), PlannedDurationS: pf.spec.Duration.D().Seconds(),
			RevertOK: true,
		}
	}
	return t
}

// add records fault i, built, and where it acts. Only setUp calls it,
// before the load.
func (t *faultTimeline) add(i int, f faults.Fault, target string) {
	t.built = append(t.built, f)
	t.targets = append(t.targets, target)
	t.mu.Lock()
	t.recs[i].Target = target
	t.mu.Unlock()
}

// setBy records who injected fault i by hand.
func (t *faultTimeline) setBy(i int, by string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs[i].By = by
}

// setTarget records where fault i acts.
func (t *faultTimeline) setTarget(i int, target string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs[i].Target = target
}

// addRecord appends the record of a fault that is not the plan's (one
// injected by hand in a game day) and returns its index, unless a fault
// of that name already exists.
func (t *faultTimeline) addRecord(rec report.FaultRecord) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.recs {
		if r.Name == rec.Name {
			return 0, false
		}
	}
	t.recs = append(t.recs, rec)
	return len(t.recs) - 1, true
}

// hasName reports whether a fault of that name exists.
func (t *faultTimeline) hasName(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.recs {
		if r.Name == name {
			return true
		}
	}
	return false
}

// injectedAt records that fault i was injected at run-clock time at.
func (t *faultTimeline) injectedAt(i int, at time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs[i].InjectedAtS = report.Seconds(at)
}

// reverted records how the revert of inj at run-clock time at went, and
// who asked for it (a person in a game day; "" for the run).
func (t *faultTimeline) reverted(inj *injection, at time.Duration, err error, by string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := &t.recs[inj.index]
	rec.RevertedBy = by
	if err == nil {
		rec.RevertedAtS = report.Seconds(at)
		return
	}
	rec.RevertOK = false
	rec.Error = "revert: " + err.Error()
	t.revertErrs = append(t.revertErrs, fmt.Errorf("fault %q (%s): %w", inj.name, inj.typ, err))
}

// undoIncomplete records that fault i's Inject failed part way and could
// not undo what it had applied: it counts as a failed revert (exit 97).
func (t *faultTimeline) undoIncomplete(i int, name, typ string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs[i].RevertOK = false
	t.revertErrs = append(t.revertErrs, fmt.Errorf("fault %q (%s): %w", name, typ, err))
}

// refuse records that fault name's selection was refused.
func (t *faultTimeline) refuse(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refused = append(t.refused, name)
}

// records returns a copy of the faults' records.
func (t *faultTimeline) records() []report.FaultRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.recs)
}

// revertErrors returns a copy of the reverts that failed.
func (t *faultTimeline) revertErrors() []error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.revertErrs)
}

// refusedNames returns a copy of the faults whose selection was refused.
func (t *faultTimeline) refusedNames() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.refused)
}

// injection is a fault that is injected and not yet reverted.
type injection struct {
	index int
	name  string
	typ   string
	undo  faults.Undo
	entry *faults.Entry
	seq   int // order of injection
}

// revert runs the fault's Undo; a panic in it is an error, not a crash, so
// that the other faults are still reverted.
func (in *injection) revert(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("undo panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return in.undo(ctx)
}

// ledger holds the run's injected faults, so that whoever reverts first
// (the fault's own goroutine at its time, or the runner when the run
// ends, is stopped or panics) reverts each exactly once. It is safe for
// concurrent use.
type ledger struct {
	mu     sync.Mutex
	active map[int]*injection
	seq    int
}

// add records an injected fault.
func (l *ledger) add(in *injection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	in.seq = l.seq
	l.active[in.index] = in
}

// take removes fault i and returns it; nil when it is not injected (never
// was, or already taken).
func (l *ledger) take(i int) *injection {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := l.active[i]
	delete(l.active, i)
	return in
}

// has reports whether fault i is injected (and not yet taken).
func (l *ledger) has(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active[i] != nil
}

// indexes returns the faults injected, last injected first.
func (l *ledger) indexes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ins := make([]*injection, 0, len(l.active))
	for _, in := range l.active {
		ins = append(ins, in)
	}
	slices.SortFunc(ins, func(a, b *injection) int { return b.seq - a.seq })
	out := make([]int, len(ins))
	for i, in := range ins {
		out[i] = in.index
	}
	return out
}

// runFault injects one fault at its time, once the steady state was seen
// to hold, and reverts it when its duration is over or ctx ends.
func (r *run) runFault(ctx context.Context, pf *plannedFault, f faults.Fault, target string, gate <-chan struct{}) {
	at := pf.spec.At.D()
	if !r.clock.sleepUntil(ctx, at) {
		r.notInjected(pf.index, "the run ended before its time")
		return
	}
	select {
	case <-gate:
	case <-ctx.Done():
		r.notInjected(pf.index, "the run ended before its time")
		return
	}
	if r.injectFault(ctx, pf.index, pf.spec.Name, pf.spec.Type, target, f, at, "") != nil {
		return
	}
	r.clock.sleepUntil(ctx, at+pf.spec.Duration.D())
	r.revertFault(ctx, pf.index, "")
}

// injectFault journals fault i (name, of type typ, acting on target),
// injects f now and records it in the ledger, the phases, the fault's
// record and the events, where by (a person in a game day; "" for the
// timeline) is named. planned is when it was meant to be injected. The
// error is the injection's (already recorded); on success the fault is in
// the ledger, to be reverted by revertFault.
func (r *run) injectFault(ctx context.Context, i int, name, typ, target string, f faults.Fault, planned time.Duration, by string) error {
	clock := r.clock.Load()
	entry, err := r.jr.BeginAt(name, typ, target, clock.Time(planned))
	if err != nil {
		r.notInjected(i, err.Error())
		r.judge.fail(fmt.Errorf("fault %q not injected: %w", name, err))
		return err
	}
	began := clock.Now()
	prev := r.tl.injecting(began, name)
	undo, err := f.Inject(ctx, entry)
	now := clock.Now()
	if err != nil {
		r.tl.injectFailed(now, name, prev)
		err = fmt.Errorf("inject: %w", err)
		record := entry.Failed
		if errors.Is(err, faults.ErrUndoIncomplete) {
			// Part of it may still be applied: the entry stays pending
			// for the guard and `llmchaos recover`, and the run fails as
			// for a revert that failed.
			record = entry.Reverted
			r.faults.undoIncomplete(i, name, typ, err)
		}
		if jerr := record(err); jerr != nil {
			r.judge.fail(jerr)
		}
		if _, refused := errors.AsType[*faults.SelectionError](err); refused || errors.Is(err, replica.ErrNotOptedIn) {
			r.faults.refuse(name)
		}
		r.notInjected(i, err.Error())
		r.obs.eventBy(report.EventSourceFault, "inject_failed", name, err.Error(), by)
		return err
	}
	r.faults.ledger.add(&injection{index: i, name: name, typ: typ, undo: undo, entry: entry})
	if jerr := entry.Injected(); jerr != nil {
		r.judge.fail(jerr)
	}
	r.obs.faultActive(name, typ, true)
	// An instantaneous fault acts as its Inject begins (a kill's or a
	// restart's signal goes out then), whatever Inject waits for after
	// (the process to exit, after a grace): its recovery counts from there,
	// the outage included. A sustained fault is in force once Inject
	// returns.
	at := now
	if InstantaneousFault(typ) {
		at = began
	}
	r.faults.injectedAt(i, at)
	how := fmt.Sprintf("%s %s (planned %s)", typ, target, fmtClock(planned))
	if by != "" {
		how = fmt.Sprintf("%s %s", typ, target)
	}
	r.obs.eventAt(at, report.EventSourceFault, "injected", name, how, by)
	return nil
}

// notInjected records why fault i was not injected.
func (r *run) notInjected(i int, why string) {
	r.faults.mu.Lock()
	defer r.faults.mu.Unlock()
	rec := &r.faults.recs[i]
	if rec.Error == "" {
		rec.Error = "not injected: " + why
	}
}

// revertFault reverts fault i if it is injected, under
// context.WithoutCancel with the run's revert timeout, and records when
// and how it went, and who asked (by: a person in a game day; "" for the
// run). It reports whether it reverted the fault (false: it was not
// injected, or its revert failed).
func (r *run) revertFault(ctx context.Context, i int, by string) bool {
	inj := r.faults.ledger.take(i)
	if inj == nil {
		return false
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.revertTimeout(i))
	err := inj.revert(c)
	cancel()
	at := r.now()
	if jerr := inj.entry.Reverted(err); jerr != nil {
		r.judge.addFailure(jerr)
	}
	r.faults.reverted(inj, at, err, by)
	r.recordActed(inj.index)
	if err != nil {
		r.obs.eventBy(report.EventSourceFault, "revert_failed", inj.name, err.Error(), by)
		return false
	}
	if r.clock.Load() != nil {
		r.tl.reverted(at, inj.name)
	}
	r.obs.faultActive(inj.name, inj.typ, false)
	r.obs.eventBy(report.EventSourceFault, "reverted", inj.name, "", by)
	return true
}

// actedTimeout bounds the question to a proxy of what a fault's toxic did.
const actedTimeout = 5 * time.Second

// recordActed records, for a fault that a proxy decides per request, how
// many requests it acted on (see report.FaultRecord.RequestsActedOn).
func (r *run) recordActed(i int) {
	if i >= len(r.faults.built) {
		return
	}
	r.faults.mu.Lock()
	typ := r.faults.recs[i].Type
	r.faults.mu.Unlock()
	if ft, ok := spec.FaultTypes()[typ]; !ok || !ft.L7 {
		return
	}
	a, ok := r.faults.built[i].(interface {
		Acted(context.Context) (int64, error)
	})
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), actedTimeout)
	defer cancel()
	n, err := a.Acted(ctx)
	if err != nil {
		r.out.printf("warning: %v: what it acted on is not known", err)
		return
	}
	r.faults.mu.Lock()
	r.faults.recs[i].RequestsActedOn = &n
	r.faults.mu.Unlock()
}

// revertWaitMargin is what the revert of a fault that waits for its
// target to come back gets beyond the fault's own wait.
const revertWaitMargin = 5 * time.Second

// revertTimeout bounds the revert of fault i: the run's revert timeout, or
// longer for a fault whose revert waits longer for its target to come back
// (a killed pod's replacement Ready).
func (r *run) revertTimeout(i int) time.Duration {
	d := r.opts.RevertTimeout
	if i < len(r.faults.built) {
		if w, ok := r.faults.built[i].(faults.RevertWaiter); ok {
			d = max(d, w.RevertWait()+revertWaitMargin)
		}
	}
	return d
}

// build builds one fault with what the run resolved.
func (r *run) build(pf *plannedFault, simEnv *spec.SimEnv) (faults.Fault, string, error) {
	var proxies []*runProxy
	if pf.ft.Target == spec.TargetProxy {
		if t := pf.spec.Target; t != nil && t.Proxy != "" {
			proxies = []*runProxy{r.declared[t.Proxy]}
		} else {
			for _, i := range pf.pickEndpoints(len(r.endpoints)) {
				if px := r.endpoints[i].proxy; px != nil {
					proxies = append(proxies, px)
				}
			}
		}
	}
	var target string
	if len(proxies) > 0 {
		parts := make([]string, len(proxies))
		for i, px := range proxies {
			parts[i] = px.describe()
		}
		target = strings.Join(parts, "; ")
	}
	if h := r.opts.hooks; h != nil && h.build != nil {
		f, err := h.build(pf)
		return f, target, err
	}
	params, err := pf.params(r.p.spec.EnvOf(simEnv))
	if err != nil {
		return nil, "", err
	}
	name := pf.spec.Name
	env := faults.BuildEnv{
		Name: name, Seed: pf.seed, Helper: r.opts.Helper, RunID: filepath.Base(r.dir),
		OnApplied: func(target string) {
			r.obs.event(report.EventSourceFault, "acted_on", name, target)
		},
		OnHelperExit: func(err error) {
			r.obs.event(report.EventSourceFault, "balloon_exited", name, err.Error())
		}, Sim: simEnv,
	}
	f, err := buildFault(pf.ft, env, pf.spec, params, proxies)
	if err != nil {
		return nil, "", err
	}
	if target == "" {
		if d, ok := f.(interface{ Target() string }); ok {
			target = d.Target()
		}
	}
	if target == "" {
		target = "params " + paramsText(pf.spec.Params)
	}
	if h := r.opts.hooks; h != nil && h.wrap != nil {
		f = h.wrap(name, f)
	}
	return f, target, nil
}

// revertAll reverts every fault still injected, last injected first, and
// records the outcomes.
func (r *run) revertAll(ctx context.Context) {
	for _, i := range r.faults.ledger.indexes() {
		r.revertFault(ctx, i, "")
	}
}

// buildFault builds fault f of type ft from its decoded params. A proxy
// fault is one fault per proxy it acts through (each with its own seed),
// injected together.
func buildFault(ft spec.FaultType, env faults.BuildEnv, f spec.Fault, params any, proxies []*runProxy) (faults.Fault, error) {
	if ft.Build == nil {
		return nil, fmt.Errorf("fault %q: type %s has no builder", f.Name, f.Type)
	}
	if ft.Target != spec.TargetProxy {
		return ft.Build(env, params)
	}
	if len(proxies) == 0 {
		return nil, fmt.Errorf("fault %q (%s): no proxy to act through", f.Name, f.Type)
	}
	all := make(multiFault, 0, len(proxies))
	seed := env.Seed
	for i, px := range proxies {
		env.Proxy, env.Seed = px.toxics, seed+uint64(i)
		t, err := ft.Build(env, params)
		if err != nil {
			return nil, err
		}
		all = append(all, t)
	}
	return all, nil
}

// netnsOf returns the network namespace the params of a kernel-level
// fault name, "" for other faults.
func netnsOf(params any) string {
	if p, ok := params.(interface{ Namespace() string }); ok {
		return p.Namespace()
	}
	return ""
}

// multiFault injects several faults as one: all of them or none. Its
// Undo reverts them in reverse order and joins their errors.
type multiFault []faults.Fault

// Acted sums what its parts acted on (see recordActed); it fails when a
// part that can say does not.
func (m multiFault) Acted(ctx context.Context) (int64, error) {
	var n int64
	for _, f := range m {
		a, ok := f.(interface {
			Acted(context.Context) (int64, error)
		})
		if !ok {
			continue
		}
		k, err := a.Acted(ctx)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

var _ faults.Fault = multiFault(nil)

// Inject implements faults.Fault: when one part fails, the parts already
// injected are reverted before it returns.
func (m multiFault) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undos := make([]faults.Undo, 0, len(m))
	for _, f := range m {
		u, err := f.Inject(ctx, log)
		if err != nil {
			undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRevertTimeout)
			defer cancel()
			if uerr := faults.JoinUndos(undos)(undoCtx); uerr != nil {
				return nil, errors.Join(err, fmt.Errorf("%w: %w", faults.ErrUndoIncomplete, uerr))
			}
			return nil, err
		}
		undos = append(undos, u)
	}
	return faults.JoinUndos(undos), nil
}

// Target describes where the parts act, for the run's record.
func (m multiFault) Target() string {
	parts := make([]string, 0, len(m))
	for _, f := range m {
		if d, ok := f.(interface{ Target() string }); ok {
			parts = append(parts, d.Target())
		}
	}
	return strings.Join(parts, "; ")
}
