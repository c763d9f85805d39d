package assertions_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/llmchaos/llmchaos/assertions"
)

// configWant is what both config documents below must give, in key order.
func configWant() []assertions.Threshold {
	errRate := th("error_rate", assertions.AggRate, 0, assertions.OpLT, 0.01, assertions.UnitNone)
	errRate.AbortOnFail = true
	p99 := withTags(th("ttft", assertions.AggPercentile, 99, assertions.OpLT, 500, assertions.UnitMilli), assertions.Tags{Phase: "baseline"})
	med := withTags(th("ttft", assertions.AggMed, 0, assertions.OpLT, 200, assertions.UnitMilli), assertions.Tags{Phase: "baseline"})
	med.AbortOnFail, med.DelayAbortEval = true, 10*time.Second
	return []assertions.Threshold{errRate, p99, med}
}

func TestConfigJSON(t *testing.T) {
	doc := `{
		"ttft{phase:baseline}": ["p(99)<500ms", {"threshold": "med<200ms", "abortOnFail": true, "delayAbortEval": "10s"}],
		"error_rate": [{"threshold": "rate<0.01", "abortOnFail": true}]
	}`
	var c assertions.Config
	if err := json.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	got, err := c.Thresholds()
	if err != nil {
		t.Fatal(err)
	}
	if want := configWant(); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestConfigYAML(t *testing.T) {
	doc := `
ttft{phase:baseline}:
  - p(99)<500ms
  - threshold: med<200ms
    abortOnFail: true
    delayAbortEval: 10s
error_rate: [{threshold: "rate<0.01", abortOnFail: true}]
`
	// Typed: Entry's UnmarshalYAML.
	var c assertions.Config
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	got, err := c.Thresholds()
	if err != nil {
		t.Fatal(err)
	}
	if want := configWant(); !reflect.DeepEqual(got, want) {
		t.Errorf("typed: got  %+v\nwant %+v", got, want)
	}
	// Untyped: a decoded map, as a spec loader holding map[string]any has it.
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	got, err = assertions.ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := configWant(); !reflect.DeepEqual(got, want) {
		t.Errorf("untyped: got  %+v\nwant %+v", got, want)
	}
}

func TestParseConfigForms(t *testing.T) {
	got, err := assertions.ParseConfig(map[string]any{
		"requests_lost": "count==0",                                                     // a single string
		"e2e":           []string{"max<30s, p(50)<2s"},                                  // a list of strings, one with two expressions
		"itl":           []any{map[any]any{"threshold": "avg<50", "abortOnFail": true}}, // yaml.v2 maps
	})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, th := range got {
		s = append(s, th.String())
	}
	want := []string{"e2e: max<30s", "e2e: p(50)<2s", "itl: avg<50", "requests_lost: count==0"}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %q, want %q", s, want)
	}
	if !got[2].AbortOnFail || got[0].AbortOnFail {
		t.Errorf("abortOnFail: got %v %v, want only itl's set", got[0].AbortOnFail, got[2].AbortOnFail)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want []string // substrings, one per problem, in order
	}{
		{"unknown object key", map[string]any{"ttft": []any{map[string]any{"threshold": "avg<1", "abortonfail": true}}},
			[]string{`threshold "ttft" entry 1: unknown key "abortonfail" (want threshold, abortOnFail or delayAbortEval)`}},
		{"bad delay", map[string]any{"ttft": []any{map[string]any{"threshold": "avg<1", "delayAbortEval": "10x"}}},
			[]string{`threshold "ttft" entry 1: delayAbortEval: time: unknown unit "x" in duration "10x"`}},
		{"negative delay", map[string]any{"ttft": []any{map[string]any{"threshold": "avg<1", "delayAbortEval": "-1s"}}},
			[]string{`delayAbortEval: "-1s" is negative`}},
		{"numeric delay", map[string]any{"ttft": []any{map[string]any{"threshold": "avg<1", "delayAbortEval": 10}}},
			[]string{`delayAbortEval: got 10, want a duration string such as "10s"`}},
		{"threshold not a string", map[string]any{"ttft": []any{map[string]any{"threshold": 5}}},
			[]string{`threshold: got 5, want a string such as "p(99)<500ms"`}},
		{"missing threshold", map[string]any{"ttft": []any{map[string]any{"abortOnFail": true}}},
			[]string{`missing key "threshold"`}},
		{"entry of the wrong type", map[string]any{"ttft": []any{5}},
			[]string{`threshold "ttft" entry 1: threshold entry 5: want a string or an object {threshold, abortOnFail, delayAbortEval}`}},
		{"expression problem points into key: expression", map[string]any{"ttft{phase:fault}": []any{"p(99)<5xs"}},
			[]string{"threshold \"ttft{phase:fault}: p(99)<5xs\": unknown unit \"xs\" (want ms, s or us)\n    ttft{phase:fault}: p(99)<5xs\n                              ^"}},
		{"key problem reported once for all entries", map[string]any{"ttft{phase:x}": []any{"avg<1", "avg<2"}},
			[]string{"threshold \"ttft{phase:x}\": unknown phase \"x\""}},
		{"empty list", map[string]any{"ttft": []any{}},
			[]string{`threshold "ttft": no expressions`}},
		{"problems in several keys", map[string]any{"e2e": "max<1m", "nope": "avg<1"},
			[]string{`unit "m" is not accepted`, `unknown metric "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := assertions.ParseConfig(tt.in)
			if err == nil {
				t.Fatal("want an error")
			}
			msg := err.Error()
			at := 0
			for _, w := range tt.want {
				if n := strings.Count(msg, w); n != 1 {
					t.Errorf("error\n%s\nholds %q %d times, want once", msg, w, n)
				}
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error\n%s\nlacks (in order) %q", msg, w)
				}
				at += i + len(w)
			}
		})
	}
}

func TestEntryUnmarshalJSONErrors(t *testing.T) {
	for _, doc := range []string{`5`, `{"threshold": "avg<1", "x": 1}`, `[`} {
		var e assertions.Entry
		if err := json.Unmarshal([]byte(doc), &e); err == nil {
			t.Errorf("%s: got %+v, want an error", doc, e)
		}
	}
}
