package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/grafana/sobek"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// errIterationInterrupted is what a VU's runtime is interrupted with when
// its iteration's context ends.
var errIterationInterrupted = errors.New("iteration interrupted: the scenario ended")

// VU is one virtual user: a sobek runtime with the script's init code
// evaluated in it. A VU is used by one goroutine at a time.
type VU struct {
	// ID is the VU's number in the run, from 1 (0 is the VU that reads
	// options and runs setup and teardown).
	ID int

	rt      *sobek.Runtime
	loop    *eventLoop
	prog    *Program
	shared  *Shared
	exports *sobek.Object
	objects map[string]*sobek.Object // built-in module objects, by name
	inInit  bool
	env     *sobek.Object // __ENV
	group   string        // path of the group() in progress, "" outside any

	// The scenario the VU runs (nil before Activate), its iterations
	// (iter: all of the VU's, as __ITER; inScenario: in this scenario) and
	// the current iteration's number in the scenario.
	scenario   *Scenario
	exec       sobek.Callable // the scenario's Exec function, looked up once
	iter       int64
	inScenario int64
	scIter     int64

	// tags are the VU's tags (exec.vu.tags), recTags the part of them the
	// recorder keeps, kept in step by setTag and SetTags.
	tags    map[string]string
	recTags recording.Tags

	// ctx is the context of the call in progress (init, setup, an
	// iteration, teardown): Go functions called from JavaScript (sleep,
	// requests) have no other way to reach it. Set and cleared by invoke.
	ctx context.Context
	// asyncCancel ends the context of the asynchronous work the call in
	// progress started (asyncWork), made on first use; the call's end
	// calls it.
	asyncCtx    context.Context
	asyncCancel context.CancelFunc

	// The watch that interrupts a call when its context ends: one
	// context.AfterFunc per context (keyed by its Done channel), not per
	// call, as the iterations of a scenario share one. watchGen names the
	// registration in force; intMu guards it and inCall, so that an
	// interruption lands only inside a call of the context it watches.
	intMu       sync.Mutex
	watchGen    uint64
	inCall      bool
	watchedDone <-chan struct{} // the owner's alone, as is stopWatch
	stopWatch   func() bool

	data     sobek.Value // setup's data as this VU's value
	dataJSON string

	// ownHTTP is the VU's own connection pool under k6's
	// noVUConnectionReuse (nil: the run's shared one), its idle
	// connections closed at the end of each iteration.
	ownHTTP *httpClient
	// jar is the VU's cookie jar (http.cookieJar()), made on first use
	// and emptied before each iteration.
	jar *cookieJar
}

// httpClient is the HTTP client of the VU's k6/http and SSE requests.
func (vu *VU) httpClient() *httpClient {
	if vu.ownHTTP != nil {
		return vu.ownHTTP
	}
	return vu.shared.http
}

// NewVU makes VU id and evaluates the script's init code in it, with
// __ENV, __VU, console and open(). An exception in the init code is a
// *ScriptError with its position and stack.
func NewVU(ctx context.Context, id int, prog *Program, shared *Shared) (*VU, error) {
	rt := sobek.New()
	rt.SetFieldNameMapper(sobek.TagFieldNameMapper("js", true))
	vu := &VU{ID: id, rt: rt, loop: newEventLoop(rt), prog: prog, shared: shared, objects: map[string]*sobek.Object{}, inInit: true, ctx: ctx, tags: map[string]string{}}
	if shared.perVU && id > 0 {
		vu.ownHTTP = newHTTPClient(shared.httpO)
	}
	if err := vu.globals(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { rt.Interrupt(context.Cause(ctx)) })
	defer stop()
	// The module is evaluated on the event loop, so that a top-level
	// await (and the timers the init code sets) settle before the VU is
	// used, as in k6.
	var promise *sobek.Promise
	err := vu.loop.run(ctx, func() error {
		return catch(func() { promise = prog.main.Evaluate(rt) })
	})
	vu.loop.end()
	vu.endAsync()
	rt.ClearInterrupt()
	if pr, ok := errors.AsType[*promiseRejection](err); ok && pr.promise == promise {
		err = nil // the module's evaluation failed: its promise says how
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &ScriptError{Pos: prog.Path, Msg: "init: interrupted: " + context.Cause(ctx).Error()}
	case err != nil:
		return nil, scriptError("init", err)
	}
	switch promise.State() {
	case sobek.PromiseStateRejected:
		return nil, rejection("init", promise.Result())
	case sobek.PromiseStatePending:
		return nil, &ScriptError{Pos: prog.Path, Msg: "init: a top-level await never settled (nothing the init code started is left to settle it)"}
	}
	vu.exports = rt.NamespaceObjectFor(prog.main)
	vu.inInit = false
	vu.ctx = nil
	return vu, nil
}

// catch runs fn and turns a JavaScript exception panicking out of it into
// an error.
func catch(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch x := r.(type) {
			case *sobek.Exception:
				err = x
			case *sobek.InterruptedError:
				err = x
			default:
				panic(r)
			}
		}
	}()
	fn()
	return nil
}

// rejection describes a rejected module evaluation.
func rejection(what string, v sobek.Value) *ScriptError {
	if ex, ok := v.Export().(*sobek.Exception); ok {
		return exceptionError(what, ex)
	}
	se := &ScriptError{Msg: what + ": " + exceptionMessage(v)}
	if o, ok := v.(*sobek.Object); ok {
		if st := o.Get("stack"); st != nil && !sobek.IsUndefined(st) {
			se.Stack = st.String()
			se.Pos = firstPos(se.Stack)
		}
	}
	return se
}

// posPattern finds a FILE:LINE:COL in a stack trace.
var posPattern = regexp.MustCompile(`[^\s()]+:\d+:\d+`)

// firstPos is the first FILE:LINE:COL of stack ("" when none).
func firstPos(stack string) string { return posPattern.FindString(stack) }

// globals installs the VU's globals.
func (vu *VU) globals() error {
	rt := vu.rt
	env := rt.NewObject()
	for k, v := range vu.shared.Env {
		if err := env.Set(k, v); err != nil {
			return err
		}
	}
	console := rt.NewObject()
	for _, level := range []string{"log", "info", "debug", "warn", "error"} {
		if err := console.Set(level, vu.consoleFunc(level)); err != nil {
			return err
		}
	}
	vu.env = env
	if err := vu.timerGlobals(); err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	for name, v := range map[string]any{
		"__ENV": env, "__VU": vu.ID, "console": console,
		"open": vu.open, requireGlobal: vu.builtin,
	} {
		if err := rt.Set(name, v); err != nil {
			return fmt.Errorf("global %s: %w", name, err)
		}
	}
	// __ITER is read when the script reads it rather than set before
	// every iteration: most scripts never read it.
	iter := rt.ToValue(func() int64 { return vu.iter })
	if err := rt.GlobalObject().DefineAccessorProperty("__ITER", iter, nil, sobek.FLAG_FALSE, sobek.FLAG_TRUE); err != nil {
		return fmt.Errorf("global __ITER: %w", err)
	}
	return nil
}

// Activate hands the VU to scenario sc before its first iteration there:
// its iterations call sc.Exec, __ENV gains sc.Env and its samples carry
// sc.Tags. Call it from the goroutine that owns the VU.
func (vu *VU) Activate(sc *Scenario) error {
	for k, v := range sc.Env {
		if err := vu.env.Set(k, v); err != nil {
			return fmt.Errorf("scenario %s: __ENV.%s: %w", sc.Name, k, err)
		}
	}
	fn, err := vu.export(sc.Exec)
	if err != nil {
		return fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	vu.scenario, vu.exec, vu.inScenario = sc, fn, 0
	vu.SetTags(sc.Tags)
	return nil
}

// SetTags replaces the VU's tags (exec.vu.tags): those of the samples it
// records from now on. Activate sets a scenario's; the runner gives the VU
// that runs setup and teardown options.tags.
func (vu *VU) SetTags(tags map[string]string) {
	vu.tags = make(map[string]string, len(tags))
	for k, v := range tags {
		vu.tags[k] = v
	}
	vu.retag()
}

// retag recomputes the tags the VU's samples carry: its tags, and the
// group in progress as k6's group tag.
func (vu *VU) retag() {
	vu.recTags = recordingTags(vu.tags)
	if vu.group != "" {
		vu.recTags = withTag(vu.recTags, "group", vu.group)
	}
}

// setTag sets (or with del deletes) one of the VU's tags.
func (vu *VU) setTag(k, v string, del bool) {
	if del {
		delete(vu.tags, k)
	} else {
		vu.tags[k] = v
	}
	vu.retag()
}

// withTags is the VU's tags with the non-empty fields of t on top, and
// t's extra tags over the VU's: the tags of a sample the script records
// with tags t.
func (vu *VU) withTags(t recording.Tags) recording.Tags {
	return mergeTags(vu.recTags, t)
}

// mergeTags is base with the non-empty fields of t on top, and t's extra
// tags over base's.
func mergeTags(base, t recording.Tags) recording.Tags {
	out := base
	if t.Phase != "" {
		out.Phase = t.Phase
	}
	if t.Fault != "" {
		out.Fault = t.Fault
	}
	if t.Class != "" {
		out.Class = t.Class
	}
	if t.Endpoint != "" {
		out.Endpoint = t.Endpoint
	}
	if t.Scenario != "" {
		out.Scenario = t.Scenario
	}
	switch {
	case t.Extra == "":
	case out.Extra == "":
		out.Extra = t.Extra
	default:
		m := recording.ExtraMap(out.Extra)
		for k, v := range recording.ExtraPairs(t.Extra) {
			m[k] = v
		}
		out.Extra = recording.ExtraTags(m)
	}
	return out
}

// withTag is t with the extra tag key set to value.
func withTag(t recording.Tags, key, value string) recording.Tags {
	t.Extra = recording.ExtraWith(t.Extra, key, value)
	return t
}

// recordingTags is a tag map as the recorder keeps it: class (also given
// as k6's name), phase, fault, endpoint and scenario in their fields, any
// other tag (k6's method, status, group, check, a script's own) in Extra.
func recordingTags(m map[string]string) recording.Tags {
	t := recording.Tags{
		Phase: m["phase"], Fault: m["fault"], Class: cmpOr(m["class"], m["name"]),
		Endpoint: m["endpoint"], Scenario: m["scenario"],
	}
	var extra map[string]string
	for k, v := range m {
		switch k {
		case "phase", "fault", "class", "name", "endpoint", "scenario":
			continue
		}
		if extra == nil {
			extra = make(map[string]string, len(m))
		}
		extra[k] = v
	}
	t.Extra = recording.ExtraTags(extra)
	return t
}

// builtin returns the VU's object of the built-in module name, made once.
func (vu *VU) builtin(name string) *sobek.Object {
	if o, ok := vu.objects[name]; ok {
		return o
	}
	mod, ok := vu.prog.modules[name]
	if !ok {
		panic(vu.rt.NewTypeError("unknown module %q", name))
	}
	if mod.removed != "" {
		panic(vu.rt.NewGoError(removedModuleError(mod.removed)))
	}
	o := mod.new(vu)
	vu.objects[name] = o
	return o
}

// consoleFunc prints a console line at its level, as k6's console does
// (Shared.consoleLine); a debug line only when the run shows them (k6
// shows them with --verbose).
func (vu *VU) consoleFunc(level string) func(sobek.FunctionCall) sobek.Value {
	return func(call sobek.FunctionCall) sobek.Value {
		if level == "debug" && !vu.shared.consoleDebug {
			return sobek.Undefined()
		}
		s := ""
		for i, a := range call.Arguments {
			if i > 0 {
				s += " "
			}
			s += vu.format(a)
		}
		vu.shared.consoleLine(level, s)
		return sobek.Undefined()
	}
}

// format renders a console argument: objects as JSON, others as strings.
func (vu *VU) format(v sobek.Value) string {
	if o, ok := v.(*sobek.Object); ok && o.ClassName() != "Function" && o.ClassName() != "Error" {
		if b, err := o.MarshalJSON(); err == nil {
			return string(b)
		}
	}
	return v.String()
}

// open reads a file relative to the script's directory; only in the init
// context, as in k6.
func (vu *VU) open(name string, mode ...string) sobek.Value {
	if !vu.inInit {
		panic(vu.rt.NewGoError(errors.New("open() can only be called in the init context (outside functions)")))
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(vu.prog.Dir, name)
	}
	b, err := readBounded(path, vu.shared.maxOpen)
	if err != nil {
		panic(vu.rt.NewGoError(fmt.Errorf("open %s: %w", name, err)))
	}
	if len(mode) > 0 && mode[0] == "b" {
		return vu.rt.ToValue(vu.rt.NewArrayBuffer(b))
	}
	return vu.rt.ToValue(string(b))
}

// Options returns the script's `export const options` as JSON ("" when it
// exports none).
func (vu *VU) Options() (string, error) {
	v := vu.exports.Get("options")
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return "", nil
	}
	b, err := v.ToObject(vu.rt).MarshalJSON()
	if err != nil {
		return "", &ScriptError{Pos: vu.prog.Path, Msg: "options: " + err.Error()}
	}
	return string(b), nil
}

// HasExport reports whether the script exports a function called name.
func (vu *VU) HasExport(name string) bool {
	_, ok := sobek.AssertFunction(vu.exports.Get(name))
	return ok
}

// Setup runs the script's setup() (when it exports one) and returns its
// data as JSON ("" when none). An exception is a *ScriptError.
func (vu *VU) Setup(ctx context.Context) (string, error) {
	if !vu.HasExport("setup") {
		return "", nil
	}
	v, err := vu.call(ctx, "setup")
	if err != nil {
		return "", scriptError("setup", err)
	}
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return "", nil
	}
	b, err := v.ToObject(vu.rt).MarshalJSON()
	if err != nil {
		return "", &ScriptError{Pos: vu.prog.Path, Msg: "setup: its data must be JSON: " + err.Error()}
	}
	return string(b), nil
}

// Teardown runs the script's teardown(data) when it exports one.
func (vu *VU) Teardown(ctx context.Context, data string) error {
	if !vu.HasExport("teardown") {
		return nil
	}
	if err := vu.SetData(data); err != nil {
		return err
	}
	if _, err := vu.call(ctx, "teardown", vu.data); err != nil {
		return scriptError("teardown", err)
	}
	return nil
}

// SetData gives the VU setup's data (JSON, "" for none), parsed once.
func (vu *VU) SetData(data string) error {
	if data == vu.dataJSON && vu.data != nil {
		return nil
	}
	vu.dataJSON, vu.data = data, sobek.Undefined()
	if data == "" {
		return nil
	}
	v, err := vu.parseJSON(data)
	if err != nil {
		return fmt.Errorf("setup data: %w", err)
	}
	vu.data = v
	return nil
}

// Iteration is how one iteration ended.
type Iteration struct {
	Duration    time.Duration
	Err         *ScriptError // the exception that failed it (nil: it passed)
	Interrupted bool         // cut short because its context ended
}

// Run runs one iteration of the scenario the VU was activated for (its
// Exec function, with setup's data). An exception fails the iteration
// only; when ctx ends the runtime is interrupted and the iteration counts
// as interrupted. Run records iterations, iteration_duration and
// iterations_failed, or iterations_interrupted, under the VU's tags.
func (vu *VU) Run(ctx context.Context) Iteration {
	sc := vu.scenario
	if sc == nil {
		return Iteration{Err: &ScriptError{Pos: vu.prog.Path, Msg: "internal: the VU was not activated for a scenario"}}
	}
	if ctx.Err() != nil {
		vu.interrupted()
		return Iteration{Interrupted: true}
	}
	vu.scIter = sc.iterations.Add(1) - 1
	vu.resetJar()
	defer func() {
		vu.iter++
		vu.inScenario++
		if vu.ownHTTP != nil {
			vu.ownHTTP.close()
		}
	}()
	start := vu.shared.Clock.Now()
	_, err := vu.invoke(ctx, vu.exec, vu.data)
	it := Iteration{Duration: vu.shared.Clock.Now() - start}
	if _, ok := errors.AsType[*sobek.InterruptedError](err); ok || ctx.Err() != nil {
		it.Interrupted = true
		vu.interrupted()
		return it
	}
	tags := vu.recTags
	if err != nil {
		it.Err = scriptError("iteration", err)
		_ = vu.shared.AddSample(MetricIterationsFailed, tags, 1)
	}
	vu.shared.Exec.completed.Add(1)
	_ = vu.shared.AddSample(MetricIterations, tags, 1)
	_ = vu.shared.AddSample(MetricIterationDuration, tags, float64(it.Duration)/float64(time.Millisecond))
	if rest := vu.shared.minIter - it.Duration; rest > 0 {
		// k6's minIterationDuration: the VU waits out the rest after the
		// iteration's samples (iteration_duration is the script's time).
		t := time.NewTimer(rest)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return it
}

// interrupted counts an interrupted iteration.
func (vu *VU) interrupted() {
	vu.shared.Exec.interrupted.Add(1)
	_ = vu.shared.AddSample(MetricIterationsInterrupted, vu.recTags, 1)
}

// call calls the exported function name with args, interrupting the
// runtime when ctx ends.
func (vu *VU) call(ctx context.Context, name string, args ...sobek.Value) (sobek.Value, error) {
	fn, err := vu.export(name)
	if err != nil {
		return nil, err
	}
	return vu.invoke(ctx, fn, args...)
}

// export is the exported function name.
func (vu *VU) export(name string) (sobek.Callable, error) {
	fn, ok := sobek.AssertFunction(vu.exports.Get(name))
	if !ok {
		return nil, &ScriptError{Pos: vu.prog.Path, Msg: "the script exports no function " + strconv.Quote(name)}
	}
	return fn, nil
}

// invoke calls fn with args on the VU's event loop and waits for what
// the call started (timers, asynchronous work) as k6 does; a promise fn
// returns is settled: its value is the call's, its rejection the call's
// error (a *promiseRejection), as is a rejection no handler caught. The
// runtime is interrupted when ctx ends. A call whose ctx ended before or
// while it ran returns an error (the runtime's interruption, or
// errIterationInterrupted). Whatever the call left (timers, callbacks)
// is dropped when it returns.
func (vu *VU) invoke(ctx context.Context, fn sobek.Callable, args ...sobek.Value) (sobek.Value, error) {
	vu.watch(ctx)
	vu.intMu.Lock()
	if ctx.Err() != nil {
		vu.intMu.Unlock()
		return nil, errIterationInterrupted
	}
	vu.inCall = true
	vu.intMu.Unlock()
	vu.ctx = ctx
	defer func() {
		vu.loop.end()
		vu.endAsync()
		vu.ctx = nil
		vu.intMu.Lock()
		vu.inCall = false
		// Whatever interrupted the call (its context, exec.test.abort())
		// has done so: the runtime is usable again.
		vu.rt.ClearInterrupt()
		vu.intMu.Unlock()
	}()
	v, err := fn(sobek.Undefined(), args...)
	if err == nil {
		err = vu.loop.drain(ctx)
	}
	if pr, ok := errors.AsType[*promiseRejection](err); ok && pr.promise == promiseOf(v) {
		err = nil // the call's own promise: settled says how it ended
	}
	if err == nil {
		v, err = settled(v)
	}
	if err == nil && ctx.Err() != nil {
		// ctx ended while the call ran (a sleep cut short, say) and the
		// call returned before its interruption took effect: it did not
		// complete either.
		err = errIterationInterrupted
	}
	return v, err
}

// promiseType is the type a promise exports as.
var promiseType = reflect.TypeFor[*sobek.Promise]()

// promiseOf is the promise v is, nil when it is none. It tells by the
// export type, which converts nothing (an object's Export would copy it).
func promiseOf(v sobek.Value) *sobek.Promise {
	o, ok := v.(*sobek.Object)
	if !ok || o.ExportType() != promiseType {
		return nil
	}
	p, _ := o.Export().(*sobek.Promise)
	return p
}

// settled is v, or the value of the promise v once its call's loop ran
// out: a rejected promise is an error, a pending one (that nothing is left
// to settle) is undefined.
func settled(v sobek.Value) (sobek.Value, error) {
	p := promiseOf(v)
	if p == nil {
		return v, nil
	}
	switch p.State() {
	case sobek.PromiseStateFulfilled:
		return p.Result(), nil
	case sobek.PromiseStateRejected:
		return nil, &promiseRejection{promise: p, value: p.Result(), own: true}
	}
	return sobek.Undefined(), nil
}

// watch makes ctx's end interrupt the calls made under it, keeping the
// registration for the next call with the same context.
func (vu *VU) watch(ctx context.Context) {
	done := ctx.Done()
	if done == vu.watchedDone {
		return
	}
	if vu.stopWatch != nil {
		vu.stopWatch()
		vu.stopWatch = nil
	}
	vu.intMu.Lock()
	vu.watchGen++
	gen := vu.watchGen
	vu.intMu.Unlock()
	vu.watchedDone = done
	if done == nil {
		return // ctx never ends
	}
	vu.stopWatch = context.AfterFunc(ctx, func() {
		vu.intMu.Lock()
		defer vu.intMu.Unlock()
		if vu.watchGen == gen && vu.inCall {
			vu.rt.Interrupt(errIterationInterrupted)
		}
	})
}

// stopIfCut reports whether the call in progress was cut (its context
// ended: the end of gracefulStop or gracefulRampDown, an abort, Ctrl-C)
// and, when it was, interrupts the runtime at once. A Go function that
// waited (a sleep, a request, a stream) calls it before it returns, so
// that not one more instruction of the script runs after the cut: the
// watch of the context interrupts the runtime from another goroutine, and
// would be late. Call it on the VU's goroutine.
func (vu *VU) stopIfCut() bool {
	ctx := vu.ctx
	if ctx == nil || ctx.Err() == nil {
		return false
	}
	vu.rt.Interrupt(errIterationInterrupted)
	return true
}

// addSample records a sample the script made (a check, a custom metric,
// an SSE event) under the VU's call, unless the call was cut: nothing an
// iteration does after its cut is recorded.
func (vu *VU) addSample(name string, tags recording.Tags, v float64) error {
	if vu.stopIfCut() {
		return nil
	}
	return vu.shared.AddSample(name, tags, v)
}

// asyncWork is how a module starts asynchronous work in the call in
// progress (a promise it settles later, as k6's RegisterCallback): ctx is
// the work's context, which ends when the call does (so a request it makes
// is cut with the iteration, and not recorded), and enqueue hands the loop
// the callback that settles it, exactly once, from any goroutine. The call
// waits for that callback.
func (vu *VU) asyncWork() (ctx context.Context, enqueue func(func() error)) {
	if vu.asyncCtx == nil {
		vu.asyncCtx, vu.asyncCancel = context.WithCancel(vu.context())
	}
	return vu.asyncCtx, vu.loop.register()
}

// endAsync ends the context of the call's asynchronous work, if any.
func (vu *VU) endAsync() {
	if vu.asyncCancel != nil {
		vu.asyncCancel()
		vu.asyncCtx, vu.asyncCancel = nil, nil
	}
}

// context is the context of the call in progress.
func (vu *VU) context() context.Context {
	if vu.ctx == nil {
		return context.Background()
	}
	return vu.ctx
}

// SummaryOutput is one output handleSummary asked for: Key is "stdout",
// "stderr" or a file path; Content what to write there.
type SummaryOutput struct {
	Key     string
	Content []byte
}

// HandleSummary calls the script's handleSummary(data) when it exports
// one (ok is false otherwise) and returns the outputs its result names, in
// its key order: a string is written as it is, an ArrayBuffer as its
// bytes, any other value as JSON. An async handleSummary's promise is
// awaited. An exception is a *ScriptError.
func (vu *VU) HandleSummary(ctx context.Context, data SummaryData) (outs []SummaryOutput, ok bool, err error) {
	if !vu.HasExport("handleSummary") {
		return nil, false, nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, true, fmt.Errorf("handleSummary: encode its data: %w", err)
	}
	parse, _ := sobek.AssertFunction(vu.rt.Get("JSON").ToObject(vu.rt).Get("parse"))
	arg, err := parse(sobek.Undefined(), vu.rt.ToValue(string(b)))
	if err != nil {
		return nil, true, scriptError("handleSummary", err)
	}
	v, err := vu.call(ctx, "handleSummary", arg)
	if err != nil {
		return nil, true, scriptError("handleSummary", err)
	}
	o, isObj := v.(*sobek.Object)
	if !isObj {
		if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
			return nil, true, nil
		}
		return nil, true, &ScriptError{Pos: vu.prog.Path, Msg: "handleSummary: it must return an object of outputs (stdout, stderr or a file path → content), not " + describe(v)}
	}
	for _, k := range o.Keys() {
		c := o.Get(k)
		var content []byte
		switch x := c.Export().(type) {
		case string:
			content = []byte(x)
		case sobek.ArrayBuffer:
			content = x.Bytes()
		default:
			if sobek.IsUndefined(c) {
				continue
			}
			j, err := c.ToObject(vu.rt).MarshalJSON()
			if err != nil {
				return nil, true, &ScriptError{Pos: vu.prog.Path, Msg: fmt.Sprintf("handleSummary: output %q: %v", k, err)}
			}
			content = j
		}
		outs = append(outs, SummaryOutput{Key: k, Content: content})
	}
	return outs, true, nil
}

// readBounded reads the regular file at path for open(), refusing a
// device, a pipe or a directory (which could be endless or block) and a
// file over limit bytes, before reading it, and again if it grows while
// being read.
func readBounded(path string, limit int64) ([]byte, error) {
	return readRegular(path, limit, "open() reads files only", func(n int64) error {
		return fmt.Errorf("%d bytes is over open()'s limit of %d bytes (raise it with --max-open-size)", n, limit)
	})
}

// readRegular reads the regular file at path, refusing anything else
// (only says what is read instead, for the error) and a file over limit
// bytes (tooBig makes that error from the size), before reading it, and
// again if it grows while being read. A missing file's error is
// os.Open's (errors.Is(err, os.ErrNotExist)).
func readRegular(path string, limit int64, only string, tooBig func(n int64) error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		kind := "a special file"
		switch m := st.Mode(); {
		case m.IsDir():
			kind = "a directory"
		case m&os.ModeDevice != 0:
			kind = "a device"
		case m&os.ModeNamedPipe != 0:
			kind = "a named pipe"
		case m&os.ModeSocket != 0:
			kind = "a socket"
		}
		return nil, fmt.Errorf("not a regular file but %s: %s", kind, only)
	}
	if st.Size() > limit {
		return nil, tooBig(st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooBig(int64(len(b)))
	}
	return b, nil
}
