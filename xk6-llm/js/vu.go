package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	prog    *Program
	shared  *Shared
	exports *sobek.Object
	objects map[string]*sobek.Object // built-in module objects, by name
	inInit  bool
	iter    int64
	group   string // path of the group() in progress, "" outside any

	// ctx is the context of the call in progress (init, setup, an
	// iteration, teardown): Go functions called from JavaScript (sleep,
	// requests) have no other way to reach it. Set and cleared by call.
	ctx context.Context

	data     sobek.Value // setup's data as this VU's value
	dataJSON string
}

// NewVU makes VU id and evaluates the script's init code in it, with
// __ENV, __VU, console and open(). An exception in the init code is a
// *ScriptError with its position and stack.
func NewVU(ctx context.Context, id int, prog *Program, shared *Shared) (*VU, error) {
	rt := sobek.New()
	rt.SetFieldNameMapper(sobek.TagFieldNameMapper("js", true))
	vu := &VU{ID: id, rt: rt, prog: prog, shared: shared, objects: map[string]*sobek.Object{}, inInit: true, ctx: ctx}
	if err := vu.globals(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { rt.Interrupt(context.Cause(ctx)) })
	defer stop()
	var promise *sobek.Promise
	if err := catch(func() { promise = prog.main.Evaluate(rt) }); err != nil {
		return nil, scriptError("init", err)
	}
	switch promise.State() {
	case sobek.PromiseStateRejected:
		return nil, rejection("init", promise.Result())
	case sobek.PromiseStatePending:
		return nil, &ScriptError{Pos: prog.Path, Msg: "init: top-level await is not supported"}
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
	for name, v := range map[string]any{
		"__ENV": env, "__VU": vu.ID, "__ITER": 0, "console": console,
		"open": vu.open, requireGlobal: vu.builtin,
	} {
		if err := rt.Set(name, v); err != nil {
			return fmt.Errorf("global %s: %w", name, err)
		}
	}
	return nil
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
	o := mod.new(vu)
	vu.objects[name] = o
	return o
}

// consoleFunc prints a console line tagged with the VU and level.
func (vu *VU) consoleFunc(level string) func(sobek.FunctionCall) sobek.Value {
	return func(call sobek.FunctionCall) sobek.Value {
		s := ""
		for i, a := range call.Arguments {
			if i > 0 {
				s += " "
			}
			s += vu.format(a)
		}
		vu.shared.logf("%s [vu %d] %s", level, vu.ID, s)
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
	b, err := os.ReadFile(path)
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
	parse, _ := sobek.AssertFunction(vu.rt.Get("JSON").ToObject(vu.rt).Get("parse"))
	v, err := parse(sobek.Undefined(), vu.rt.ToValue(data))
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

// Run runs one iteration of the exported function fn ("default" for the
// default function) with setup's data. An exception fails the iteration
// only; when ctx ends the runtime is interrupted. Run records iterations,
// iteration_duration and iterations_failed.
func (vu *VU) Run(ctx context.Context, fn string, tags recording.Tags) Iteration {
	if err := vu.rt.Set("__ITER", vu.iter); err != nil {
		return Iteration{Err: &ScriptError{Msg: err.Error()}}
	}
	vu.iter++
	start := vu.shared.Clock.Now()
	_, err := vu.call(ctx, fn, vu.data)
	it := Iteration{Duration: vu.shared.Clock.Now() - start}
	if _, ok := errors.AsType[*sobek.InterruptedError](err); ok || (err != nil && ctx.Err() != nil) {
		it.Interrupted = true
		return it
	}
	if err != nil {
		it.Err = scriptError("iteration", err)
		_ = vu.shared.AddSample(MetricIterationsFailed, tags, 1)
	}
	_ = vu.shared.AddSample(MetricIterations, tags, 1)
	_ = vu.shared.AddSample(MetricIterationDuration, tags, float64(it.Duration)/float64(time.Millisecond))
	return it
}

// call calls the exported function name with args, interrupting the
// runtime when ctx ends.
func (vu *VU) call(ctx context.Context, name string, args ...sobek.Value) (sobek.Value, error) {
	fn, ok := sobek.AssertFunction(vu.exports.Get(name))
	if !ok {
		return nil, &ScriptError{Pos: vu.prog.Path, Msg: "the script exports no function " + strconv.Quote(name)}
	}
	vu.ctx = ctx
	defer func() { vu.ctx = nil }()
	stop := context.AfterFunc(ctx, func() { vu.rt.Interrupt(errIterationInterrupted) })
	defer func() {
		if !stop() {
			vu.rt.ClearInterrupt()
		}
	}()
	return fn(sobek.Undefined(), args...)
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
	if p, isPromise := v.Export().(*sobek.Promise); isPromise { // an async handleSummary
		switch p.State() {
		case sobek.PromiseStateRejected:
			return nil, true, rejection("handleSummary", p.Result())
		case sobek.PromiseStatePending:
			return nil, true, &ScriptError{Pos: vu.prog.Path, Msg: "handleSummary: its promise did not settle (nothing runs after the test to settle it)"}
		}
		v = p.Result()
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
