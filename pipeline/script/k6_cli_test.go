package script

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

func TestParseStage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Stage
		wantErr bool
	}{
		{"30s:10", Stage{Duration: Duration(30 * time.Second), Target: 10}, false},
		{"1m30s:0", Stage{Duration: Duration(90 * time.Second)}, false},
		{"10s", Stage{Duration: Duration(10 * time.Second)}, false},
		{"10s:x", Stage{}, true},
		{"ten:5", Stage{}, true},
		{"10s:-1", Stage{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseStage(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseStage(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestProgressLineIsK6s(t *testing.T) {
	t.Parallel()
	var ex js.Execution
	ex.AddInitialized(10)
	ex.AddActive(2)
	for _, tc := range []struct {
		elapsed time.Duration
		want    string
	}{
		{5 * time.Second, "running (0m05.0s), 2/10 VUs, 0 complete and 0 interrupted iterations"},
		{61*time.Second + 250*time.Millisecond, "running (1m01.2s), 2/10 VUs, 0 complete and 0 interrupted iterations"},
	} {
		if got := progressLine(tc.elapsed, &ex); got != tc.want {
			t.Errorf("progressLine(%s) = %q, want %q", tc.elapsed, got, tc.want)
		}
	}
}

// TestStagesOverrideReplacesScenarios: --stage replaces the script's
// scenarios by a ramping-vus scenario from vus, as k6's --stage does.
func TestStagesOverrideReplacesScenarios(t *testing.T) {
	t.Parallel()
	opts, err := parseOptions(`{"scenarios":{"a":{"executor":"constant-vus","vus":3,"duration":"1m"}}}`,
		Overrides{Stages: []Stage{{Duration: Duration(10 * time.Second), Target: 5}, {Duration: Duration(5 * time.Second)}}})
	if err != nil {
		t.Fatal(err)
	}
	scs, ps := opts.scenarios()
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	d, ok := scs[DefaultScenario]
	if len(scs) != 1 || !ok || d.Executor != "ramping-vus" || len(d.Stages) != 2 || d.length() != 15*time.Second {
		t.Errorf("scenarios = %+v, want one ramping-vus of the two stages (15s)", scs)
	}
}

// TestSummaryExportIsK6sLegacyJSON: groups and checks by name, a rate's
// rate renamed value and placed last, thresholds as failure flags, a
// trend's statistics in summaryTrendStats order, four-space indents.
func TestSummaryExportIsK6sLegacyJSON(t *testing.T) {
	t.Parallel()
	d := js.SummaryData{
		RootGroup: js.SummaryGroup{Name: "", Path: "", ID: "r", Groups: []js.SummaryGroup{{Name: "login", Path: "::login", ID: "g",
			Checks: []js.SummaryCheck{{Name: "ok", Path: "::login::ok", ID: "c", Passes: 3, Fails: 1}}}}},
		Metrics: map[string]js.SummaryMetric{
			"checks":            {Type: "rate", Values: map[string]float64{"rate": 0.75, "passes": 3, "fails": 1}},
			"http_req_duration": {Type: "trend", Values: map[string]float64{"max": 9, "avg": 2, "p(95)": 8}, Thresholds: map[string]js.SummaryThreshold{"p(95)<5": {OK: false}}},
			"iterations":        {Type: "counter", Values: map[string]float64{"rate": 2, "count": 4}},
		},
	}
	b, err := summaryExport(d, []string{"avg", "max", "p(95)"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
    "root_group": {
        "name": "",
        "path": "",
        "id": "r",
        "groups": {
            "login": {
                "name": "login",
                "path": "::login",
                "id": "g",
                "groups": {},
                "checks": {
                    "ok": {
                        "name": "ok",
                        "path": "::login::ok",
                        "id": "c",
                        "passes": 3,
                        "fails": 1
                    }
                }
            }
        },
        "checks": {}
    },
    "metrics": {
        "checks": {
            "passes": 3,
            "fails": 1,
            "value": 0.75
        },
        "http_req_duration": {
            "avg": 2,
            "max": 9,
            "p(95)": 8,
            "thresholds": {
                "p(95)<5": true
            }
        },
        "iterations": {
            "count": 4,
            "rate": 2
        }
    }
}`
	if string(b) != want {
		t.Errorf("summary export:\n%s\nwant:\n%s", b, want)
	}
}
