package spec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

var (
	_ encoding.TextMarshaler   = Duration(0)
	_ encoding.TextUnmarshaler = (*Duration)(nil)
	_ encoding.TextUnmarshaler = (*Dist)(nil)
	_ encoding.TextUnmarshaler = (*DurationDist)(nil)
	_ json.Marshaler           = ThresholdEntry{}
	_ json.Marshaler           = StopCondition{}
	_ stringForm               = (*ThresholdEntry)(nil)
	_ stringForm               = (*StopCondition)(nil)
)

// Duration is a time.Duration written as Go writes it ("15s", "1m30s",
// "200ms") in YAML and JSON. A bare 0 is also accepted when decoding.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String returns d in Go's syntax.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d in Go's syntax, so that YAML and JSON carry "15s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a Go duration such as "15s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration: write a number with a unit, such as 200ms, 15s or 1m30s", b)
	}
	*d = Duration(v)
	return nil
}

// Dist is a length distribution (tokens, turns) written in llmchaos load's
// flag syntax (workload.ParseDist): 512, "uniform:100:300",
// "lognormal:1020:0.8,max=6144". The zero Dist is unset.
type Dist workload.Dist

// String returns d in the flag syntax.
func (d Dist) String() string { return workload.Dist(d).String() }

// MarshalText writes d in the flag syntax.
func (d Dist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads the flag syntax; a plain integer is a fixed length.
func (d *Dist) UnmarshalText(b []byte) error {
	v, err := workload.ParseDist(string(b))
	if err != nil {
		return err
	}
	*d = Dist(v)
	return nil
}

// DurationDist is a distribution of durations (think time, cancel-after)
// in llmchaos load's flag syntax (workload.ParseDurationDist): "2s",
// "exponential:3s", "lognormal:2s:0.8,max=30s". The zero value is unset.
type DurationDist workload.DurationDist

// String returns d in the flag syntax.
func (d DurationDist) String() string { return workload.DurationDist(d).String() }

// MarshalText writes d in the flag syntax.
func (d DurationDist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads the flag syntax.
func (d *DurationDist) UnmarshalText(b []byte) error {
	v, err := workload.ParseDurationDist(string(b))
	if err != nil {
		return err
	}
	*d = DurationDist(v)
	return nil
}

// Thresholds is the thresholds section: each key, `metric{tag:value,...}`,
// maps to its list of entries (assertions' config form).
type Thresholds map[string][]ThresholdEntry

// Config returns t as assertions reads it (assertions.Config.Thresholds
// parses it).
func (t Thresholds) Config() assertions.Config {
	if t == nil {
		return nil
	}
	c := make(assertions.Config, len(t))
	for k, es := range t {
		list := make([]assertions.Entry, len(es))
		for i, e := range es {
			list[i] = e.Entry()
		}
		c[k] = list
	}
	return c
}

// ThresholdEntry is one element of a threshold key's list: an expression
// string ("p(99)<500ms"), or k6's object form {threshold, abortOnFail,
// delayAbortEval}. It marshals back to the string form when it has no
// options.
type ThresholdEntry struct {
	Threshold      string   `yaml:"threshold" json:"threshold" doc:"One expression, or several separated by commas, e.g. \"p(99)<500ms\"."`
	AbortOnFail    bool     `yaml:"abortOnFail,omitempty" json:"abortOnFail,omitempty" doc:"Abort the run as soon as the expression fails over the live window."`
	DelayAbortEval Duration `yaml:"delayAbortEval,omitempty" json:"delayAbortEval,omitempty" doc:"Run time before which a failing abortOnFail expression does not abort."`
}

// Entry returns e as assertions reads it.
func (e ThresholdEntry) Entry() assertions.Entry {
	return assertions.Entry{Threshold: e.Threshold, AbortOnFail: e.AbortOnFail, DelayAbortEval: e.DelayAbortEval.D()}
}

// thresholdEntryObject has ThresholdEntry's fields without its methods, for
// marshalling the object form.
type thresholdEntryObject ThresholdEntry

// MarshalYAML writes the string form when e has no options.
func (e ThresholdEntry) MarshalYAML() (any, error) {
	if !e.AbortOnFail && e.DelayAbortEval == 0 {
		return e.Threshold, nil
	}
	return thresholdEntryObject(e), nil
}

// MarshalJSON writes the string form when e has no options.
func (e ThresholdEntry) MarshalJSON() ([]byte, error) {
	if !e.AbortOnFail && e.DelayAbortEval == 0 {
		return json.Marshal(e.Threshold)
	}
	return json.Marshal(thresholdEntryObject(e))
}

// StopCondition is a threshold in the flag form, "metric{tags}: expr",
// that aborts the run as soon as it fails over the live rolling window
// (abortOnFail semantics), or the object form {threshold, delayAbortEval}
// to keep it from aborting in the first seconds, or the object form
// {promql, interval, delayAbortEval}: a PromQL query, run every interval
// while the load lasts, that aborts the run when its result does not
// satisfy expect (expect describes the safe state).
type StopCondition struct {
	Threshold      string   `yaml:"threshold,omitempty" json:"threshold,omitempty" doc:"A threshold in flag form, e.g. \"error_rate: rate<0.5\". Exactly one of threshold and promql."`
	DelayAbortEval Duration `yaml:"delayAbortEval,omitempty" json:"delayAbortEval,omitempty" doc:"Run time before which the condition does not abort."`
	// PromQL is a query against a Prometheus server instead of a
	// threshold over the load's own figures.
	PromQL *PromQLProbe `yaml:"promql,omitempty" json:"promql,omitempty" doc:"A PromQL instant query, run every interval while the load lasts; the run aborts when its result does not satisfy expect."`
	// Interval is the time between two queries of a promql condition
	// (0: DefaultPromQLInterval).
	Interval Duration `yaml:"interval,omitempty" json:"interval,omitempty" doc:"Time between two queries of a promql condition. Default 2s."`
}

// stopConditionObject has StopCondition's fields without its methods.
type stopConditionObject StopCondition

// MarshalYAML writes the string form when c has no delay.
func (c StopCondition) MarshalYAML() (any, error) {
	if c.DelayAbortEval == 0 && c.PromQL == nil && c.Interval == 0 {
		return c.Threshold, nil
	}
	return stopConditionObject(c), nil
}

// MarshalJSON writes the string form when c has no delay.
func (c StopCondition) MarshalJSON() ([]byte, error) {
	if c.DelayAbortEval == 0 && c.PromQL == nil && c.Interval == 0 {
		return json.Marshal(c.Threshold)
	}
	return json.Marshal(stopConditionObject(c))
}

// Thresholds parses the condition into thresholds with AbortOnFail set;
// a promql condition has none.
func (c StopCondition) Thresholds() ([]assertions.Threshold, error) { return c.ThresholdsIn(nil) }

// ThresholdsIn is Thresholds with the metrics of reg (a script workload's
// custom metrics; nil: the built-ins).
func (c StopCondition) ThresholdsIn(reg *metrics.Registry) ([]assertions.Threshold, error) {
	if c.PromQL != nil && c.Threshold == "" {
		return nil, nil
	}
	ths, err := assertions.ParseIn(reg, c.Threshold)
	if err != nil {
		return nil, err
	}
	for i := range ths {
		ths[i].AbortOnFail = true
		ths[i].DelayAbortEval = c.DelayAbortEval.D()
	}
	return ths, nil
}

func (e *ThresholdEntry) setString(s string) { *e = ThresholdEntry{Threshold: s} }

func (c *StopCondition) setString(s string) { *c = StopCondition{Threshold: s} }
