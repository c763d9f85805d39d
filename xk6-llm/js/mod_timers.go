package js

import (
	"slices"

	"github.com/grafana/sobek"
)

// timerNames are the timer functions, global in every VU and the exports
// of `k6/timers`, as in k6.
var timerNames = []string{"setTimeout", "clearTimeout", "setInterval", "clearInterval"}

// newTimersModule is `k6/timers`: the global timer functions. Timers run
// on the VU's event loop (eventloop.go): the call that set them (an
// iteration, say) waits for them, and its end (the end of gracefulStop,
// an abort) drops them.
func newTimersModule(vu *VU) *sobek.Object {
	o := vu.rt.NewObject()
	g := vu.rt.GlobalObject()
	for _, name := range timerNames {
		set(o, name, g.Get(name))
	}
	return o
}

// timerGlobals makes setTimeout, clearTimeout, setInterval and
// clearInterval globals, and crypto, TextEncoder and TextDecoder (see
// lazyGlobal). They are made on first use: these objects would add a few
// KiB to every VU, most of whose scripts never set a timer nor use them. The global object's prototype is a dynamic object that makes a
// timer function when the script first reads it and sets it on the global
// object itself, where the next read finds it. A script replaces one with
// `globalThis.setTimeout = ...` (sobek refuses a bare assignment, in a
// module's strict mode, to a global the global object does not own).
func (vu *VU) timerGlobals() error {
	g := vu.rt.GlobalObject()
	lazy := vu.rt.NewDynamicObject(&lazyTimers{vu: vu})
	if err := lazy.SetPrototype(g.Prototype()); err != nil {
		return err
	}
	return g.SetPrototype(lazy)
}

// timerFunc makes the timer function name.
func (vu *VU) timerFunc(name string) func(sobek.FunctionCall) sobek.Value {
	rt := vu.rt
	setter := func(interval bool) func(sobek.FunctionCall) sobek.Value {
		return func(call sobek.FunctionCall) sobek.Value {
			fn, ok := sobek.AssertFunction(call.Argument(0))
			if !ok {
				panic(rt.NewTypeError("%s: its first argument must be a function", name))
			}
			delay := call.Argument(1).ToFloat()
			if delay != delay { // NaN, undefined
				delay = 0
			}
			var args []sobek.Value
			if len(call.Arguments) > 2 {
				args = append(args, call.Arguments[2:]...)
			}
			return rt.ToValue(vu.loop.setTimer(fn, delay, args, interval))
		}
	}
	switch name {
	case "setTimeout":
		return setter(false)
	case "setInterval":
		return setter(true)
	}
	return func(call sobek.FunctionCall) sobek.Value { // clearTimeout, clearInterval
		if id := call.Argument(0); present(id) {
			vu.loop.clearTimer(id.ToInteger())
		}
		return sobek.Undefined()
	}
}

// lazyTimers is the global object's prototype that makes the timer
// functions, and the other globals of lazyGlobal, on first use
// (timerGlobals).
type lazyTimers struct{ vu *VU }

var _ sobek.DynamicObject = (*lazyTimers)(nil)

// lazyGlobal is the maker of the global name that is made on first use:
// a timer function, crypto (webcrypto.go), TextEncoder and TextDecoder
// (textcoding.go); nil for any other name.
func lazyGlobal(name string) func(vu *VU) sobek.Value {
	switch name {
	case "crypto":
		return func(vu *VU) sobek.Value { return newWebCrypto(vu).object() }
	case "TextEncoder":
		return newTextEncoderClass
	case "TextDecoder":
		return newTextDecoderClass
	}
	if slices.Contains(timerNames, name) {
		return func(vu *VU) sobek.Value { return vu.rt.ToValue(vu.timerFunc(name)) }
	}
	return nil
}

func (l *lazyTimers) Get(key string) sobek.Value {
	mk := lazyGlobal(key)
	if mk == nil {
		return nil
	}
	v := mk(l.vu)
	if err := l.vu.rt.GlobalObject().Set(key, v); err != nil {
		panic(err)
	}
	return v
}

// Set refuses: an assignment to a timer name the script did not read yet
// lands on the global object (the prototype's Has says a property is
// there, and an ordinary set then makes the receiver's own).
func (l *lazyTimers) Set(string, sobek.Value) bool { return false }

func (l *lazyTimers) Has(key string) bool { return lazyGlobal(key) != nil }

func (l *lazyTimers) Delete(string) bool { return true }

func (l *lazyTimers) Keys() []string { return nil }
