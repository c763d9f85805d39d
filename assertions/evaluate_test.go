package assertions_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

// recordedRun is a small synthetic run with phase and class tags.
func recordedRun() *fakeSource {
	base := assertions.Tags{Phase: "baseline", Class: "chat"}
	fault := assertions.Tags{Phase: "fault", Fault: "oom", Class: "chat"}
	faultCompl := assertions.Tags{Phase: "fault", Fault: "oom", Class: "completion"}
	return &fakeSource{
		samples: []fakeSample{
			{"ttft", base, 100}, {"ttft", base, 200}, {"ttft", base, 300}, {"ttft", base, 400},
			{"ttft", fault, 1000}, {"ttft", fault, 3000}, {"ttft", faultCompl, 500},
			{"output_tokens", base, 10}, {"output_tokens", base, 20},
		},
		events: []fakeEvent{
			{"error_rate", base, 1, 100},
			{"error_rate", fault, 30, 50},
		},
		counts: []fakeCount{
			{"requests_lost", base, 0}, {"requests_lost", fault, 2},
			{"requests", base, 100}, {"requests", fault, 50},
		},
		spans:  map[string]time.Duration{"baseline": 10 * time.Second, "fault": 20 * time.Second},
		values: map[fakeKey]float64{{"goodput", assertions.Tags{}}: 3.5},
	}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		in       string
		value    float64
		ok       bool
		noData   bool
		observed string
	}{
		// Baseline ttft is 100 200 300 400: mean 250, nearest-rank p(50) 200, p(75) 300.
		{"ttft{phase:baseline}: avg<=250", 250, true, false, "250ms"},
		{"ttft{phase:baseline}: med==200", 200, true, false, "200ms"},
		{"ttft{phase:baseline}: p(75)<300", 300, false, false, "300ms"},
		// All seven samples sorted: 100 200 300 400 500 1000 3000; p(99) is rank 7.
		{"ttft: p(99)<2s", 3000, false, false, "3.00s"},
		{"ttft{phase:fault,class:chat}: min>=1000", 1000, true, false, "1.00s"},
		{"ttft{phase:fault}: count==3", 3, true, false, "3"},
		{"ttft{class:completion}: max<0.5s", 500, false, false, "500ms"},
		// No data: count is 0 and holds; any other aggregation fails.
		{"ttft{phase:recovery}: count==0", 0, true, false, "0"},
		{"ttft{phase:recovery}: p(99)<1", 0, false, true, "no data"},
		{"ttft{class:chta}: avg<1000", 0, false, true, "no data"},
		// error_rate: baseline 1/100, fault 30/50, all 31/150.
		{"error_rate{phase:baseline}: rate<0.01", 0.01, false, false, "0.01"},
		{"error_rate{phase:baseline}: rate<=1%", 0.01, true, false, "0.01"},
		{"error_rate: rate<0.25", 31.0 / 150, true, false, "0.2067"},
		{"error_rate{phase:fault}: rate<20%", 0.6, false, false, "0.6"},
		{"error_rate{phase:recovery}: rate<0.01", 0, false, true, "no data"},
		// Counters: requests_lost 0 + 2; requests 100 in 10 s and 50 in 20 s.
		{"requests_lost: count==0", 2, false, false, "2"},
		{"requests_lost{phase:baseline}: count==0", 0, true, false, "0"},
		{"requests{phase:fault}: rate>=2", 2.5, true, false, "2.5/s"},
		{"requests: rate==5", 5, true, false, "5/s"},
		{"requests{phase:recovery}: rate>0", 0, false, true, "no data"},
		{"goodput: value>=3", 3.5, true, false, "3.5/s"},
		{"goodput{phase:fault}: value>0", 0, false, true, "no data"},
		{"output_tokens{class:chat}: avg>12", 15, true, false, "15"},
	}
	var ths []assertions.Threshold
	for _, tt := range tests {
		p, err := assertions.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, p...)
	}
	src := recordedRun()
	outs := assertions.Evaluate(src, ths)
	if len(outs) != len(tests) {
		t.Fatalf("got %d outcomes, want %d", len(outs), len(tests))
	}
	for i, tt := range tests {
		o := outs[i]
		t.Run(tt.in, func(t *testing.T) {
			if math.Abs(o.Value-tt.value) > 1e-12 || o.OK != tt.ok || o.NoData != tt.noData {
				t.Errorf("got value %v ok %v noData %v, want %v %v %v", o.Value, o.OK, o.NoData, tt.value, tt.ok, tt.noData)
			}
			if o.Metric != ths[i].Metric || o.Tags != ths[i].Tags || o.Expr != ths[i].Expr.String() || o.Threshold != ths[i] {
				t.Errorf("outcome does not describe its threshold: %+v", o)
			}
			if got := o.Observed(); got != tt.observed {
				t.Errorf("Observed: got %q, want %q", got, tt.observed)
			}
			// The Source was asked for exactly the threshold's metric and tags.
			if c := src.calls[i]; c.metric != ths[i].Metric || c.sel != ths[i].Tags {
				t.Errorf("Source asked for %q %+v, want %q %+v", c.metric, c.sel, ths[i].Metric, ths[i].Tags)
			}
		})
	}
	if outs.OK() {
		t.Error("OK: got true with failing thresholds")
	}
	wantFailed := 0
	for _, tt := range tests {
		if !tt.ok {
			wantFailed++
		}
	}
	if got := len(outs.Failed()); got != wantFailed {
		t.Errorf("Failed: got %d, want %d", got, wantFailed)
	}
}

func TestEvaluatePass(t *testing.T) {
	ths, err := assertions.ParseFlags([]string{
		"ttft{phase:baseline}: p(99)<500ms, avg<300",
		"error_rate{phase:baseline}: rate<5%",
		"requests_lost: count<=2",
	})
	if err != nil {
		t.Fatal(err)
	}
	outs := assertions.Evaluate(recordedRun(), ths)
	if !outs.OK() || len(outs.Failed()) != 0 || len(outs) != 4 {
		t.Errorf("got %+v, want 4 passing outcomes", outs)
	}
	if !assertions.Outcomes(nil).OK() {
		t.Error("no thresholds: want OK")
	}
}

func TestOutcomeJSON(t *testing.T) {
	ths, err := assertions.ParseFlags([]string{"ttft{phase:baseline}: avg<=250ms", "error_rate{phase:recovery}: rate<1%", "requests_lost: count==0"})
	if err != nil {
		t.Fatal(err)
	}
	outs := assertions.Evaluate(recordedRun(), ths)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<" readable, as report writers should
	if err := enc.Encode(outs); err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimSpace(buf.Bytes())
	want := `[{"metric":"ttft","tags":{"phase":"baseline"},"expr":"avg<=250ms","value":250,"ok":true},` +
		`{"metric":"error_rate","tags":{"phase":"recovery"},"expr":"rate<1%","value":0,"no_data":true,"ok":false},` +
		`{"metric":"requests_lost","expr":"count==0","value":2,"ok":false}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// A decoded outcome (a saved report) still prints its value.
	var back assertions.Outcomes
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"250ms", "no data", "2"} {
		if got := back[i].Observed(); got != want {
			t.Errorf("decoded outcome %d: got %q, want %q", i, got, want)
		}
	}
}
