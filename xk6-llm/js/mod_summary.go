package js

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/sobek"
)

// summaryJSLib is the URL prefix of the k6-summary jslib, which scripts
// written for k6 import from the network
// ("https://jslib.k6.io/k6-summary/0.0.2/index.js"): any version of it
// resolves to the built-in k6/x/summary, so such scripts run unmodified
// and offline.
const summaryJSLib = "https://jslib.k6.io/k6-summary/"

// newSummaryModule is `k6/x/summary`: textSummary(data, options),
// jUnit(data, options) and humanizeValue(value, metric, timeUnit) over
// handleSummary's data, as the k6-summary jslib's.
func newSummaryModule(vu *VU) *sobek.Object {
	rt := vu.rt
	o := rt.NewObject()
	set(o, "textSummary", func(call sobek.FunctionCall) sobek.Value {
		d := vu.summaryArg("textSummary", call.Argument(0))
		var opts TextSummaryOptions
		vu.jsonArg("textSummary", call.Argument(1), &opts)
		return rt.ToValue(TextSummary(d, opts))
	})
	set(o, "jUnit", func(call sobek.FunctionCall) sobek.Value {
		d := vu.summaryArg("jUnit", call.Argument(0))
		var opts JUnitSummaryOptions
		vu.jsonArg("jUnit", call.Argument(1), &opts)
		return rt.ToValue(JUnitSummary(d, opts))
	})
	set(o, "humanizeValue", func(call sobek.FunctionCall) sobek.Value {
		var m SummaryMetric
		vu.jsonArg("humanizeValue", call.Argument(1), &m)
		unit := ""
		if u := call.Argument(2); !sobek.IsUndefined(u) && !sobek.IsNull(u) {
			unit = u.String()
		}
		return rt.ToValue(HumanizeValue(call.Argument(0).ToFloat(), m, unit))
	})
	return o
}

// summaryArg reads handleSummary's data (or an object of its shape).
func (vu *VU) summaryArg(fn string, v sobek.Value) SummaryData {
	if _, ok := v.(*sobek.Object); !ok {
		panic(vu.rt.NewTypeError("%s: the first argument must be handleSummary's data", fn))
	}
	var d SummaryData
	vu.jsonArg(fn, v, &d)
	return d
}

// jsonArg decodes a JavaScript value into out through JSON; undefined and
// null leave out as it is.
func (vu *VU) jsonArg(fn string, v sobek.Value, out any) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return
	}
	b, err := v.ToObject(vu.rt).MarshalJSON()
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		panic(vu.rt.NewGoError(fmt.Errorf("%s: %w", fn, err)))
	}
}
