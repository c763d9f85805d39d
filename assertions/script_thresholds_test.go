package assertions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// scriptRegistry is a script run's table: the built-ins and k6's metrics
// a script records.
func scriptRegistry(t *testing.T) *metrics.Registry {
	t.Helper()
	reg := metrics.NewRegistry()
	for _, m := range []struct {
		name string
		kind metrics.Kind
		unit string
	}{
		{"http_req_duration", metrics.Trend, metrics.UnitMillis},
		{"http_req_failed", metrics.Rate, ""},
		{"checks", metrics.Rate, ""},
		{"iterations", metrics.Counter, ""},
		{"my_gauge", metrics.Gauge, ""},
		{"Waiting_Time", metrics.Trend, metrics.UnitMillis},
	} {
		if _, err := reg.Register(m.name, m.kind, m.unit); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestScriptThresholdsSelectAnyTag(t *testing.T) {
	reg := scriptRegistry(t)
	for _, c := range []struct {
		in, key string
	}{
		{"http_req_duration{kind:html}: p(95)<500", "http_req_duration{kind:html}"},
		{"http_req_duration{staticAsset:yes,scenario:s1}: avg<100", "http_req_duration{scenario:s1,staticAsset:yes}"},
		{"http_req_duration{expected_response:true}: p(90)<300", "http_req_duration{expected_response:true}"},
		{"checks{myTag:hola}: rate>0.9", "checks{myTag:hola}"},
		{"checks{group:::login::form}: rate>0.9", "checks{group:::login::form}"},
		{"http_req_duration{name:http://x/a?b=1,method:GET,status:200}: max<1s", "http_req_duration{class:http://x/a?b=1,method:GET,status:200}"},
		{"Waiting_Time{phase:fault}: p(99)<1s", "Waiting_Time{phase:fault}"},
	} {
		ths, err := assertions.ParseScript(reg, c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := ths[0].Key(); got != c.key {
			t.Errorf("%s: got key %s, want %s", c.in, got, c.key)
		}
		// The key parses back to the same selection, in JSON too.
		again, err := assertions.ParseScript(reg, ths[0].String())
		if err != nil || again[0].Tags != ths[0].Tags {
			t.Errorf("%s: %q parses back to %+v, %v; want %+v", c.in, ths[0].String(), again, err, ths[0].Tags)
		}
		b, err := json.Marshal(ths[0].Tags)
		if err != nil {
			t.Fatal(err)
		}
		var back assertions.Tags
		if err := json.Unmarshal(b, &back); err != nil || back != ths[0].Tags {
			t.Errorf("%s: JSON %s reads back as %+v, %v", c.in, b, back, err)
		}
	}
	// Outside a script a tag must be one the recorder keeps.
	if _, err := assertions.ParseIn(reg, "http_req_duration{kind:html}: p(95)<500"); err == nil || !strings.Contains(err.Error(), `unknown tag "kind"`) {
		t.Errorf("ParseIn: got %v, want an unknown tag", err)
	}
}

func TestScriptThresholdsJudgeMissingSamplesAsK6(t *testing.T) {
	reg := scriptRegistry(t)
	html := assertions.Tags{Extra: recording.ExtraTags(map[string]string{"kind": "html"})}
	src := &fakeSource{
		samples: []fakeSample{{"http_req_duration", html, 120}, {"http_req_duration", html, 80}},
		events:  []fakeEvent{{"checks", html, 3, 4}},
	}
	for _, c := range []struct {
		th     string
		ok     bool
		noData bool
	}{
		{"http_req_duration{kind:html}: avg<101", true, false},
		{"http_req_duration{kind:html}: avg<99", false, false},
		{"http_req_duration{kind:css}: p(95)<500", true, true}, // k6: an empty trend's p(95) is 0
		{"http_req_duration{kind:css}: avg>10", false, true},
		{"http_req_failed: rate<0.01", true, true}, // k6: an empty rate has no value and passes
		{"http_req_failed: rate>0.5", true, true},
		{"checks{kind:html}: rate>0.7", true, false},
		{"checks{kind:css}: rate>0.99", true, true},
		{"iterations: count>0", false, false}, // a counter's count is 0
		{"my_gauge: value>1", false, true},
		{"my_gauge: value<1", true, true},
	} {
		ths, err := assertions.ParseScript(reg, c.th)
		if err != nil {
			t.Fatal(err)
		}
		o := assertions.Evaluate(src, ths)[0]
		if o.OK != c.ok || o.NoData != c.noData {
			t.Errorf("%s: got ok %v, no data %v (value %v), want %v, %v", c.th, o.OK, o.NoData, o.Value, c.ok, c.noData)
		}
	}
	// The same thresholds outside a script fail without data.
	ths, err := assertions.ParseIn(reg, "http_req_failed: rate<0.01")
	if err != nil {
		t.Fatal(err)
	}
	if o := assertions.Evaluate(src, ths)[0]; o.OK || !o.NoData {
		t.Errorf("outside a script: got %+v, want a failure without data", o)
	}
}
