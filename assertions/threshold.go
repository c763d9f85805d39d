package assertions

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Agg is a threshold's aggregation: how a metric's data under a tag
// selection is reduced to the one number compared with the bound.
type Agg uint8

// Aggregations, named as in k6.
const (
	AggAvg        Agg = iota + 1 // mean of a distribution
	AggMin                       // smallest sample
	AggMax                       // largest sample
	AggMed                       // median, p(50)
	AggPercentile                // p(N), N from 0 to 100, fractional allowed
	AggCount                     // number of samples or events
	AggRate                      // share for rate metrics; events per second for counters
	AggValue                     // the figure of a value metric
)

// String returns the aggregation's keyword ("p" for AggPercentile, whose
// full text needs the percentile: see Expr.String).
func (a Agg) String() string {
	switch a {
	case AggAvg:
		return "avg"
	case AggMin:
		return "min"
	case AggMax:
		return "max"
	case AggMed:
		return "med"
	case AggPercentile:
		return "p"
	case AggCount:
		return "count"
	case AggRate:
		return "rate"
	case AggValue:
		return "value"
	}
	return "?"
}

// Op is a threshold's comparison operator. A threshold holds when
// `observed Op bound` is true.
type Op uint8

// Operators. k6's `===` is accepted as a synonym of `==`.
const (
	OpLT Op = iota + 1 // <
	OpLE               // <=
	OpGT               // >
	OpGE               // >=
	OpEQ               // ==
	OpNE               // !=
)

// String returns the operator as written in thresholds.
func (o Op) String() string {
	switch o {
	case OpLT:
		return "<"
	case OpLE:
		return "<="
	case OpGT:
		return ">"
	case OpGE:
		return ">="
	case OpEQ:
		return "=="
	case OpNE:
		return "!="
	}
	return "?"
}

// Holds reports whether `observed o bound` is true. A NaN on either side
// holds for no operator but !=.
func (o Op) Holds(observed, bound float64) bool {
	switch o {
	case OpLT:
		return observed < bound
	case OpLE:
		return observed <= bound
	case OpGT:
		return observed > bound
	case OpGE:
		return observed >= bound
	case OpEQ:
		return observed == bound
	case OpNE:
		return observed != bound
	}
	return false
}

// Unit is the unit a threshold's bound was written in.
type Unit string

// Units. µs (U+00B5) and μs (U+03BC) are read as UnitMicro. Minutes are not
// accepted: "m" reads as milli to some and minutes to others; write 60s.
const (
	UnitNone    Unit = ""   // the metric's own unit
	UnitMicro   Unit = "us" // microseconds, durations only
	UnitMilli   Unit = "ms" // milliseconds, durations only
	UnitSecond  Unit = "s"  // seconds, durations only
	UnitPercent Unit = "%"  // percent, rate metrics' rate only
)

// scale converts a number written in u to the metric's base unit
// (milliseconds for durations, a fraction for rates).
func (u Unit) scale(n float64) float64 {
	switch u {
	case UnitMicro:
		return n / 1000
	case UnitSecond:
		return n * 1000
	case UnitPercent:
		return n / 100
	}
	return n
}

// Expr is one threshold expression, `agg op number[unit]`.
type Expr struct {
	Agg Agg
	// P is the percentile of AggPercentile, from 0 to 100; 0 otherwise.
	P  float64
	Op Op
	// Num is the bound as written, in Unit.
	Num  float64
	Unit Unit
}

// Bound returns the bound in the metric's base unit (see Metric.Unit):
// 0.5s gives 500, 1% gives 0.01.
func (e Expr) Bound() float64 { return e.Unit.scale(e.Num) }

// String returns the expression in canonical form, without spaces:
// "p(99.9)<500ms". It parses back to the same Expr.
func (e Expr) String() string {
	var b strings.Builder
	b.WriteString(e.Agg.String())
	if e.Agg == AggPercentile {
		b.WriteByte('(')
		b.WriteString(formatNum(e.P))
		b.WriteByte(')')
	}
	b.WriteString(e.Op.String())
	b.WriteString(formatNum(e.Num))
	b.WriteString(string(e.Unit))
	return b.String()
}

// formatNum writes n as the shortest plain decimal that parses back to n
// (never an exponent, which the grammar does not accept).
func formatNum(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// Tags selects the part of a run a threshold looks at. An empty field
// selects everything; a set field selects results carrying that value.
type Tags struct {
	// Phase is baseline, fault, recovery or after.
	Phase string `json:"phase,omitempty"`
	// Fault is the name of a fault in the experiment.
	Fault string `json:"fault,omitempty"`
	// Class is the request class, such as a workload preset name.
	Class string `json:"class,omitempty"`
	// Endpoint is the base URL requests went to.
	Endpoint string `json:"endpoint,omitempty"`
	// Scenario is the script scenario that recorded the samples.
	Scenario string `json:"scenario,omitempty"`
	// Extra selects by any other tag a script's samples carry (k6's
	// method, status, group, check, a script's own), encoded by
	// recording.ExtraTags; only a script's thresholds (ParseScript) name
	// them. In JSON they are keys of the same object.
	Extra string `json:"-"`
}

// MarshalJSON writes t as one object: its fields, then its extra tags.
func (t Tags) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	add := func(k, v string) {
		if v == "" {
			return
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(v)
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	for _, k := range TagKeys() {
		add(k, *t.field(k))
	}
	for k, v := range recording.ExtraPairs(t.Extra) {
		add(k, v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes; a key other than the
// fields' is an extra tag.
func (t *Tags) UnmarshalJSON(data []byte) error {
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*t = Tags{}
	extra := map[string]string{}
	for k, v := range m {
		if f := t.field(k); f != nil && k != "name" {
			*f = v
		} else {
			extra[k] = v
		}
	}
	t.Extra = recording.ExtraTags(extra)
	return nil
}

// TagKeys lists the tag keys a threshold may use, in canonical order.
func TagKeys() []string { return []string{"phase", "fault", "class", "endpoint", "scenario"} }

// Phases lists the values of the phase tag.
func Phases() []string { return []string{"baseline", "fault", "recovery", "after"} }

// IsZero reports whether t selects everything.
func (t Tags) IsZero() bool { return t == Tags{} }

// Matches reports whether a result carrying the tags got is selected by t:
// every field set in t equals the one in got, and got carries each of t's
// extra tags. Sources use it to filter.
func (t Tags) Matches(got Tags) bool {
	return (t.Phase == "" || t.Phase == got.Phase) &&
		(t.Fault == "" || t.Fault == got.Fault) &&
		(t.Class == "" || t.Class == got.Class) &&
		(t.Endpoint == "" || t.Endpoint == got.Endpoint) &&
		(t.Scenario == "" || t.Scenario == got.Scenario) &&
		recording.ExtraIncludes(got.Extra, t.Extra)
}

// field returns a pointer to the field for key, or nil for an unknown key.
func (t *Tags) field(key string) *string {
	switch key {
	case "phase":
		return &t.Phase
	case "fault":
		return &t.Fault
	case "class", "name": // k6 scripts select a request by its name tag, recorded as the class
		return &t.Class
	case "endpoint":
		return &t.Endpoint
	case "scenario":
		return &t.Scenario
	}
	return nil
}

// String returns the selector as written after a metric name, "" when it
// selects everything: `{phase:fault,endpoint:"http://127.0.0.1:8000/v1"}`.
// Values that the bare syntax cannot carry are double-quoted.
func (t Tags) String() string {
	if t.IsZero() {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	pairs := make([][2]string, 0, len(TagKeys()))
	for _, k := range TagKeys() {
		pairs = append(pairs, [2]string{k, *t.field(k)})
	}
	for k, v := range recording.ExtraPairs(t.Extra) {
		pairs = append(pairs, [2]string{k, v})
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		if v == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k)
		b.WriteByte(':')
		if isBareValue(v) {
			b.WriteString(v)
		} else {
			b.WriteString(strconv.Quote(v))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// isBareValue reports whether v can be written unquoted as a tag value and
// read back unchanged.
func isBareValue(v string) bool {
	if v == "" || !utf8.ValidString(v) {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(v); isSpace(r) {
		return false
	}
	if r, _ := utf8.DecodeLastRuneInString(v); isSpace(r) {
		return false
	}
	for _, r := range v {
		if !unicode.IsPrint(r) || strings.ContainsRune(`,{}"'`, r) {
			return false
		}
	}
	return true
}

// Threshold is one expression on one metric under one tag selection. A
// config line with several expressions gives several Thresholds.
type Threshold struct {
	Metric string
	Tags   Tags
	Expr   Expr
	// AbortOnFail stops the run as soon as the threshold fails over the
	// live rolling window (see Live).
	AbortOnFail bool
	// DelayAbortEval is the run time before which a failing AbortOnFail
	// threshold does not abort the run.
	DelayAbortEval time.Duration

	// SourceKey and Source are the key and the expression as a k6
	// script's options wrote them (ParseConfigScript; k6's summary names
	// thresholds by them); Source is empty when its entry held several
	// expressions.
	SourceKey, Source string

	kind Kind // a custom metric's kind, set by ParseIn; 0 for built-ins
	// k6 says that a selection without samples is judged as k6 judges it
	// (a script's thresholds, ParseScript): see Evaluate.
	k6 bool
}

// Key returns the metric and its tag selection: "ttft{phase:fault}".
func (t Threshold) Key() string { return t.Metric + t.Tags.String() }

// String returns the threshold in the one-line flag form,
// "ttft{phase:fault}: p(99)<500ms"; Parse reads it back to the same metric,
// tags and expression. AbortOnFail and DelayAbortEval have no flag form and
// are left out.
func (t Threshold) String() string { return t.Key() + ": " + t.Expr.String() }
