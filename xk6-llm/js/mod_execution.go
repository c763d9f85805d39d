package js

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/grafana/sobek"
)

// newExecutionModule is `k6/execution`: the `vu`, `scenario`, `instance`
// and `test` objects with k6's documented fields. Their values are read
// when the script reads them; `vu.tags` (also `vu.metrics.tags`) is the
// one writable part.
func newExecutionModule(vu *VU) *sobek.Object {
	rt := vu.rt
	tags := rt.NewDynamicObject(&tagsObject{vu: vu})
	metricsObj := rt.NewObject()
	set(metricsObj, "tags", tags)
	set(metricsObj, "metadata", rt.NewObject())

	vuObj := readOnly(rt, "exec.vu", []field{
		{"idInInstance", func() any { return vu.ID }},
		{"idInTest", func() any { return vu.ID }},
		{"iterationInInstance", func() any { return vu.iter }},
		{"iterationInScenario", func() any { return vu.inScenario }},
		{"tags", func() any { return tags }},
		{"metrics", func() any { return metricsObj }},
	})
	sc := func(get func(s *Scenario) any) func() any {
		return func() any {
			if vu.scenario == nil {
				panic(rt.NewTypeError("exec.scenario is only available in an iteration, not in the init context, setup or teardown"))
			}
			return get(vu.scenario)
		}
	}
	scenarioObj := readOnly(rt, "exec.scenario", []field{
		{"name", sc(func(s *Scenario) any { return s.Name })},
		{"executor", sc(func(s *Scenario) any { return s.Executor })},
		{"startTime", sc(func(s *Scenario) any { return s.startMs.Load() })},
		{"progress", sc(func(s *Scenario) any { return s.progress() })},
		{"iterationInInstance", sc(func(*Scenario) any { return vu.scIter })},
		{"iterationInTest", sc(func(*Scenario) any { return vu.scIter })},
	})
	ex := &vu.shared.Exec
	instanceObj := readOnly(rt, "exec.instance", []field{
		{"iterationsCompleted", func() any { return ex.Completed() }},
		{"iterationsInterrupted", func() any { return ex.Interrupted() }},
		{"vusActive", func() any { return ex.Active() }},
		{"vusInitialized", func() any { return ex.Initialized() }},
		{"currentTestRunDuration", func() any { return float64(vu.shared.Clock.Now()) / float64(time.Millisecond) }},
	})

	var options sobek.Value
	testObj := rt.NewObject()
	set(testObj, "abort", func(call sobek.FunctionCall) sobek.Value {
		reason := ""
		if a := call.Argument(0); !sobek.IsUndefined(a) && !sobek.IsNull(a) {
			reason = a.String()
		}
		ex.abortRun(reason)
		// Stop this call at once: the interruption takes effect when the
		// runtime resumes, and the call's end clears it.
		vu.rt.Interrupt(&AbortError{Reason: reason})
		return sobek.Undefined()
	})
	// fail marks the run as failed and lets it go on, as k6's: the
	// iteration is not interrupted, and the run ends failed (exit 110).
	set(testObj, "fail", func(call sobek.FunctionCall) sobek.Value {
		if vu.inInit {
			panic(rt.NewTypeError("exec.test.fail() called outside of VU context (in the init code): call it in default(), setup() or teardown()"))
		}
		reason := ""
		if a := call.Argument(0); present(a) {
			reason = a.String()
		}
		msg := "test marked as failed"
		if reason != "" {
			msg += ": " + reason
		}
		vu.shared.logLine("error", msg)
		ex.markFailed(reason)
		return sobek.Undefined()
	})
	if err := testObj.DefineAccessorProperty("options", rt.ToValue(func() sobek.Value {
		if options != nil {
			return options
		}
		js := ex.optionsJSON()
		if vu.inInit || js == "" {
			panic(rt.NewTypeError("exec.test.options is not available in the init context: the options are read from it"))
		}
		v, err := vu.parseJSON(js)
		if err != nil {
			panic(rt.NewGoError(fmt.Errorf("exec.test.options: %w", err)))
		}
		options = v
		return v
	}), nil, sobek.FLAG_FALSE, sobek.FLAG_TRUE); err != nil {
		panic(err)
	}

	o := rt.NewObject()
	set(o, "vu", vuObj)
	set(o, "scenario", scenarioObj)
	set(o, "instance", instanceObj)
	set(o, "test", testObj)
	return o
}

// field is one read-only property of a readOnly object: its value is
// computed when read.
type field struct {
	name string
	get  func() any
}

// readOnly is an object whose properties are computed when read and
// cannot be set; name prefixes the error of an assignment.
func readOnly(rt *sobek.Runtime, name string, fields []field) *sobek.Object {
	return rt.NewDynamicObject(&roObject{rt: rt, name: name, fields: fields})
}

// roObject is the sobek.DynamicObject behind readOnly.
type roObject struct {
	rt     *sobek.Runtime
	name   string
	fields []field
}

var _ sobek.DynamicObject = (*roObject)(nil)

func (o *roObject) find(key string) *field {
	for i := range o.fields {
		if o.fields[i].name == key {
			return &o.fields[i]
		}
	}
	return nil
}

func (o *roObject) Get(key string) sobek.Value {
	if f := o.find(key); f != nil {
		return o.rt.ToValue(f.get())
	}
	return nil
}

func (o *roObject) Set(key string, _ sobek.Value) bool {
	panic(o.rt.NewTypeError("%s.%s is read-only", o.name, key))
}

func (o *roObject) Has(key string) bool { return o.find(key) != nil }

func (o *roObject) Delete(key string) bool { return o.find(key) == nil }

func (o *roObject) Keys() []string {
	keys := make([]string, len(o.fields))
	for i, f := range o.fields {
		keys[i] = f.name
	}
	return keys
}

// tagsObject is exec.vu.tags: the VU's tags, as k6 strings; setting one
// changes the tags of the samples the VU records from then on.
type tagsObject struct{ vu *VU }

var _ sobek.DynamicObject = (*tagsObject)(nil)

func (t *tagsObject) Get(key string) sobek.Value {
	if v, ok := t.vu.tags[key]; ok {
		return t.vu.rt.ToValue(v)
	}
	return nil
}

func (t *tagsObject) Set(key string, val sobek.Value) bool {
	switch val.Export().(type) {
	case string, int64, float64, bool:
		t.vu.setTag(key, val.String(), false)
		return true
	}
	panic(t.vu.rt.NewTypeError("exec.vu.tags.%s: a tag's value must be a string, a number or a boolean, not %s", key, val.String()))
}

func (t *tagsObject) Has(key string) bool {
	_, ok := t.vu.tags[key]
	return ok
}

func (t *tagsObject) Delete(key string) bool {
	t.vu.setTag(key, "", true)
	return true
}

func (t *tagsObject) Keys() []string {
	keys := make([]string, 0, len(t.vu.tags))
	for k := range t.vu.tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// parseJSON parses JSON text into a value of the VU's runtime.
func (vu *VU) parseJSON(text string) (sobek.Value, error) {
	parse, ok := sobek.AssertFunction(vu.rt.Get("JSON").ToObject(vu.rt).Get("parse"))
	if !ok {
		return nil, errors.New("JSON.parse is not a function")
	}
	return parse(sobek.Undefined(), vu.rt.ToValue(text))
}
