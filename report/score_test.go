package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/assertions"
)

func f64(v float64) *float64 { return &v }

// scoreDoc is a document of an experiment that went well: 4 thresholds
// held, one fault recovered in 10 s against a 20 s bound, 1000 requests
// answered, two probes held after the load.
func scoreDoc() *Document {
	inj, rev := 10.0, 20.0
	return &Document{
		Verdict: VerdictPass,
		Thresholds: []ThresholdResult{
			{Metric: "ttft", Tags: assertions.Tags{Phase: "baseline"}, Expr: "p(99)<500ms", OK: true},
			{Metric: "error_rate", Expr: "rate<0.01", OK: true},
			{Metric: "requests_lost", Expr: "count==0", OK: true},
			{Metric: "recovery_time", Tags: assertions.Tags{Fault: "slow"}, Expr: "max<20s", OK: true},
		},
		Faults:      []FaultRecord{{Name: "slow", Type: "network.latency", InjectedAtS: &inj, RevertedAtS: &rev, RevertOK: true}},
		Recovery:    []RecoveryRecord{{Fault: "slow", Recovered: true, RecoveryTimeS: f64(10)}},
		Requests:    Requests{Sent: 1000, OK: 1000},
		SteadyState: &SteadyState{After: []ProbeRecord{{Probe: "health", OK: true}, {Probe: "error_rate", OK: true}}},
	}
}

func TestComputeScore(t *testing.T) {
	tests := []struct {
		name         string
		edit         func(d *Document)
		revertFailed bool
		want         *float64 // nil: no score
		zeroed       string
		unscored     string
		components   []string
	}{
		{"everything held", func(*Document) {}, false, f64(100), "", "", []string{ScoreThresholds, ScoreRecovery, ScoreRequests, ScoreSteadyAfter}},
		{"one of four thresholds failed", func(d *Document) { d.Thresholds[1].OK = false; d.Verdict = VerdictFail },
			// 50×0.75 + 25 + 15 + 10 = 87.5
			false, f64(87.5), "", "", nil},
		{"recovery at 1.5 times its bound", func(d *Document) { d.Recovery[0].RecoveryTimeS = f64(30) },
			// 50 + 25×0.5 + 15 + 10 = 87.5
			false, f64(87.5), "", "", nil},
		{"recovery past twice its bound", func(d *Document) { d.Recovery[0].RecoveryTimeS = f64(45) }, false, f64(75), "", "", nil},
		{"no recovery", func(d *Document) { d.Recovery[0].Recovered, d.Recovery[0].RecoveryTimeS = false, nil }, false, f64(75), "", "", nil},
		{"recovery without a bound counts when it came", func(d *Document) {
			d.Thresholds = d.Thresholds[:3]
			d.Recovery[0].RecoveryTimeS = f64(400)
		}, false, f64(100), "", "", nil},
		{"the tightest bound wins", func(d *Document) {
			d.Thresholds = append(d.Thresholds, ThresholdResult{Metric: "recovery_time", Tags: assertions.Tags{Fault: "slow"}, Expr: "p(99)<5s", OK: false})
			d.Verdict = VerdictFail
			// thresholds 4/5 → 40; recovery 10 s against 5 s → 0 → 0; 15 + 10
		}, false, f64(65), "", "", nil},
		{"insufficient traffic is not judged", func(d *Document) { d.Recovery[0] = RecoveryRecord{Fault: "slow", InsufficientTraffic: true} },
			false, f64(100), "", "", []string{ScoreThresholds, ScoreRequests, ScoreSteadyAfter}},
		{"a tenth of the requests failed", func(d *Document) { d.Requests.OK, d.Requests.Failed = 900, 100 }, false, f64(98.5), "", "", nil},
		{"lost requests count as not answered", func(d *Document) { d.Requests.OK, d.Requests.Lost = 500, 500 }, false, f64(92.5), "", "", nil},
		{"cancelled and dropped are left out", func(d *Document) { d.Requests.Cancelled, d.Requests.Dropped = 300, 50 }, false, f64(100), "", "", nil},
		{"steady state not restored", func(d *Document) { d.SteadyState.After[0].OK = false }, false, f64(95), "", "", nil},
		{"stop condition abort zeroes the thresholds share", func(d *Document) {
			d.SetAbort(&Abort{Cause: AbortStopCondition, Name: "error_rate: rate<0.5"})
			d.SteadyState.After = nil
			d.Recovery[0].Recovered, d.Recovery[0].RecoveryTimeS = false, nil
			d.Requests.OK, d.Requests.Failed = 400, 600
			// (0×50 + 0×25 + 0.4×15) / 90
		}, false, f64(6.7), "", "", []string{ScoreThresholds, ScoreRecovery, ScoreRequests}},
		{"revert failed (runner's error)", func(*Document) {}, true, f64(0), ScoreZeroRevertFailed, "", nil},
		{"revert failed (fault record)", func(d *Document) { d.Faults[0].RevertOK, d.Faults[0].RevertedAtS = false, nil }, false, f64(0), ScoreZeroRevertFailed, "", nil},
		{"a fault never injected left nothing to revert", func(d *Document) { d.Faults[0].InjectedAtS, d.Faults[0].RevertOK = nil, false }, false, f64(100), "", "", nil},
		{"not steady before", func(d *Document) { d.SetAbort(&Abort{Cause: AbortNotSteady, Detail: "health: 503"}) }, false, f64(0), ScoreZeroNotSteady, "", nil},
		{"signal", func(d *Document) { d.SetAbort(&Abort{Cause: AbortSignal, Name: "SIGINT"}) }, false, nil, "", AbortSignal, nil},
		{"signal with a revert failure is 0", func(d *Document) { d.SetAbort(&Abort{Cause: AbortSignal, Name: "SIGINT"}) }, true, f64(0), ScoreZeroRevertFailed, "", nil},
		{"runner error", func(d *Document) { d.SetAbort(&Abort{Cause: AbortError}) }, false, nil, "", AbortError, nil},
		{"nothing to score", func(d *Document) { *d = Document{Verdict: VerdictNone} }, false, nil, "", "no_data", nil},
		{"no thresholds: the other components", func(d *Document) {
			d.Thresholds = nil
			d.Verdict = VerdictNone
			d.Requests.OK, d.Requests.Failed = 500, 500
		},
			// (25 + 0.5×15 + 10) / 50
			false, f64(85), "", "", []string{ScoreRecovery, ScoreRequests, ScoreSteadyAfter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := scoreDoc()
			tt.edit(d)
			s := ComputeScore(d, tt.revertFailed)
			switch {
			case tt.want == nil && s.Value != nil:
				t.Errorf("score %v, want none", *s.Value)
			case tt.want != nil && s.Value == nil:
				t.Errorf("no score (%s), want %v", s.Unscored, *tt.want)
			case tt.want != nil && math.Abs(*s.Value-*tt.want) > 1e-9:
				t.Errorf("score %v, want %v (%s)", *s.Value, *tt.want, s)
			}
			if s.Zeroed != tt.zeroed || s.Unscored != tt.unscored {
				t.Errorf("zeroed %q unscored %q, want %q %q", s.Zeroed, s.Unscored, tt.zeroed, tt.unscored)
			}
			if tt.components != nil {
				var got []string
				for _, c := range s.Components {
					got = append(got, c.Name)
				}
				if strings.Join(got, ",") != strings.Join(tt.components, ",") {
					t.Errorf("components %v, want %v", got, tt.components)
				}
			}
			for _, c := range s.Components {
				if c.Value < 0 || c.Value > 1 || c.Detail == "" {
					t.Errorf("component %+v: want a share in [0, 1] with a detail", c)
				}
			}
		})
	}
}

func TestSuiteScore(t *testing.T) {
	tests := []struct {
		name   string
		scores []WeightedScore
		want   *float64
	}{
		{"none", nil, nil},
		{"only unscored", []WeightedScore{{Value: nil, Weight: 1}}, nil},
		{"mean", []WeightedScore{{Value: f64(100)}, {Value: f64(50)}}, f64(75)},
		{"weighted", []WeightedScore{{Value: f64(100), Weight: 3}, {Value: f64(0), Weight: 1}}, f64(75)},
		{"unscored count for nothing", []WeightedScore{{Value: f64(90), Weight: 1}, {Value: nil, Weight: 5}}, f64(90)},
		{"rounded to a tenth", []WeightedScore{{Value: f64(100)}, {Value: f64(100)}, {Value: f64(0)}}, f64(66.7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SuiteScore(tt.scores)
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("SuiteScore = %v, want %v", scoreOf(got), scoreOf(tt.want))
			}
		})
	}
}

func scoreOf(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestRecoveryBound(t *testing.T) {
	ths := []ThresholdResult{
		{Metric: "recovery_time", Tags: assertions.Tags{Fault: "a"}, Expr: "max<30s"},
		{Metric: "recovery_time", Tags: assertions.Tags{Fault: "a"}, Expr: "p(99)<=20000ms"},
		{Metric: "recovery_time", Tags: assertions.Tags{Fault: "a"}, Expr: "min>1s"},
		{Metric: "recovery_time", Tags: assertions.Tags{Fault: "b"}, Expr: "max<5s"},
		{Metric: "ttft", Tags: assertions.Tags{Fault: "c"}, Expr: "max<1s"},
	}
	for _, tt := range []struct {
		fault string
		want  float64
		ok    bool
	}{{"a", 20, true}, {"b", 5, true}, {"c", 0, false}} {
		got, ok := RecoveryBound(ths, tt.fault)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RecoveryBound(%s) = %v, %v; want %v, %v", tt.fault, got, ok, tt.want, tt.ok)
		}
	}
}

// A document's score shows in the terminal summary, JUnit properties,
// HTML banner and JSON.
func TestScoreInReports(t *testing.T) {
	d := scoreDoc()
	d.Thresholds[1].OK = false
	d.Verdict = VerdictFail
	d.Score = ComputeScore(d, false)
	var text, junit, html, js bytes.Buffer
	if err := WriteText(&text, d); err != nil {
		t.Fatal(err)
	}
	if want := "resilience score: 87.5/100 (thresholds 0.75, recovery 1.00, requests 1.00, steady state after 1.00)\n"; !strings.Contains(text.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, text.String())
	}
	if err := WriteJUnit(&junit, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<property name="resilience_score" value="87.5">`, `<property name="resilience_score_thresholds" value="0.750">`} {
		if !strings.Contains(junit.String(), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, junit.String())
		}
	}
	if err := WriteHTML(&html, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "resilience score 87.5/100") {
		t.Errorf("HTML banner lacks the score")
	}
	if err := Write(&js, d); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Score Score `json:"score"`
	}
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Score.Value == nil || *m.Score.Value != 87.5 || len(m.Score.Components) != 4 {
		t.Errorf("JSON score %+v, want 87.5 with 4 components", m.Score)
	}
}
