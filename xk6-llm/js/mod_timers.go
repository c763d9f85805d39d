package js

import (
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

// timerGlobals installs setTimeout, clearTimeout, setInterval and
// clearInterval as globals.
func (vu *VU) timerGlobals() error {
	rt := vu.rt
	setter := func(name string, interval bool) func(sobek.FunctionCall) sobek.Value {
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
	clearer := func(call sobek.FunctionCall) sobek.Value {
		if id := call.Argument(0); present(id) {
			vu.loop.clearTimer(id.ToInteger())
		}
		return sobek.Undefined()
	}
	for name, fn := range map[string]func(sobek.FunctionCall) sobek.Value{
		"setTimeout": setter("setTimeout", false), "setInterval": setter("setInterval", true),
		"clearTimeout": clearer, "clearInterval": clearer,
	} {
		if err := rt.Set(name, fn); err != nil {
			return err
		}
	}
	return nil
}
