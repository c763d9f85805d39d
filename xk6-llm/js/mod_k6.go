package js

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/grafana/sobek"
)

// newK6Module is the `k6` module: check, group, sleep, fail and
// randomSeed. Checks are counted by name in the group they ran in
// (handleSummary's root_group) besides the checks rate.
func newK6Module(vu *VU) *sobek.Object {
	rt := vu.rt
	if err := registerMetrics(vu.shared.Metrics, k6Metrics); err != nil {
		panic(rt.NewGoError(fmt.Errorf("k6: %w", err)))
	}
	o := rt.NewObject()
	set(o, "check", func(call sobek.FunctionCall) sobek.Value {
		if vu.stopIfCut() {
			return sobek.Undefined()
		}
		val := call.Argument(0)
		tags := vu.withTags(tagsArg(call.Argument(2)))
		all := true
		if sets, ok := call.Argument(1).(*sobek.Object); ok {
			for _, name := range sets.Keys() {
				c := sets.Get(name)
				pass := c.ToBoolean()
				if f, ok := sobek.AssertFunction(c); ok {
					r, err := f(sobek.Undefined(), val)
					if err != nil {
						panic(err)
					}
					pass = r.ToBoolean()
				}
				if vu.stopIfCut() {
					return sobek.Undefined()
				}
				if err := vu.shared.AddSample(MetricChecks, withTag(tags, "check", name), boolFloat(pass)); err != nil {
					panic(rt.NewGoError(err))
				}
				vu.shared.checks.add(vu.group, name, pass)
				all = all && pass
			}
		}
		return rt.ToValue(all)
	})
	set(o, "group", func(name string, fn sobek.Callable) sobek.Value {
		if strings.Contains(name, groupSeparator) {
			panic(rt.NewTypeError("group name %q: it must not contain %q", name, groupSeparator))
		}
		outer := vu.group
		vu.group = outer + groupSeparator + name
		vu.retag()
		defer func() {
			vu.group = outer
			vu.retag()
		}()
		vu.shared.checks.group(vu.group)
		start := time.Now()
		v, err := fn(sobek.Undefined())
		if err != nil {
			panic(err)
		}
		// k6's group_duration, tagged with this group's path; a group cut
		// with its iteration (err above) records none.
		if err := vu.addSample(MetricGroupDuration, vu.recTags, float64(time.Since(start))/float64(time.Millisecond)); err != nil {
			panic(rt.NewGoError(err))
		}
		return v
	})
	set(o, "sleep", func(secs float64) {
		if secs <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(secs * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-vu.context().Done():
			vu.stopIfCut()
		}
	})
	set(o, "fail", func(msg string) {
		panic(rt.NewGoError(errors.New(msg)))
	})
	// randomSeed makes this VU's Math.random repeatable: the same seed
	// gives the same sequence, in any VU, run after run.
	set(o, "randomSeed", func(seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		rt.SetRandSource(r.Float64)
	})
	return o
}

// set sets o[name] = v, which only fails for a frozen object.
func set(o *sobek.Object, name string, v any) {
	if err := o.Set(name, v); err != nil {
		panic(err)
	}
}

// boolFloat is 1 for true and 0 for false.
func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
