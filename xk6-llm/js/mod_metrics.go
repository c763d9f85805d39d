package js

import (
	"errors"
	"fmt"
	"math"

	"github.com/grafana/sobek"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// newMetricsModule is `k6/metrics`: Trend, Rate, Counter and Gauge, each
// registered as a custom metric in the run's metric table, so thresholds
// and every report carry it.
func newMetricsModule(vu *VU) *sobek.Object {
	o := vu.rt.NewObject()
	for name, kind := range map[string]metrics.Kind{
		"Trend": metrics.Trend, "Rate": metrics.Rate, "Counter": metrics.Counter, "Gauge": metrics.Gauge,
	} {
		set(o, name, vu.metricConstructor(kind))
	}
	return o
}

// metricConstructor returns the JavaScript constructor of kind's metrics:
// new Kind(name, isTime).
func (vu *VU) metricConstructor(kind metrics.Kind) func(sobek.ConstructorCall) *sobek.Object {
	rt := vu.rt
	return func(call sobek.ConstructorCall) *sobek.Object {
		if !vu.inInit {
			panic(rt.NewGoError(errors.New("metrics must be created in the init context (outside functions)")))
		}
		name := call.Argument(0).String()
		unit := ""
		if kind == metrics.Trend && call.Argument(1).ToBoolean() {
			unit = metrics.UnitMillis
		}
		if _, err := vu.shared.Metrics.Register(name, kind, unit); err != nil {
			panic(rt.NewGoError(fmt.Errorf("new %s(%q): %w", kind, name, err)))
		}
		o := call.This
		set(o, "name", name)
		set(o, "add", func(c sobek.FunctionCall) sobek.Value {
			// As k6: a truthy value that is 0 as a number (true, "x")
			// counts 1; null or NaN is warned of and not added (false).
			v := c.Argument(0)
			f := v.ToFloat()
			if f == 0 && v.ToBoolean() {
				f = 1
			}
			if sobek.IsNull(v) || sobek.IsUndefined(v) || math.IsNaN(f) {
				vu.shared.logLine("warn", fmt.Sprintf("'%s' is an invalid value for metric '%s', a number or a boolean value is expected",
					v.String(), name))
				return rt.ToValue(false)
			}
			if err := vu.addSample(name, vu.withTags(tagsArg(c.Argument(1))), f); err != nil {
				panic(rt.NewGoError(err))
			}
			return rt.ToValue(true)
		})
		return nil
	}
}

// tagsArg reads a tags object as the recorder keeps it (see
// recordingTags: class wins over name, other keys are extra tags).
func tagsArg(v sobek.Value) recording.Tags {
	o, ok := v.(*sobek.Object)
	if !ok || v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return recording.Tags{}
	}
	m := make(map[string]string, len(o.Keys()))
	for _, k := range o.Keys() {
		m[k] = o.Get(k).String()
	}
	return recordingTags(m)
}
