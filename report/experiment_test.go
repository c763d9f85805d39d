package report

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestWriteTextExperimentGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sampleExperiment(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "experiment.golden.txt", b.Bytes())
}

func TestExperimentFieldsRoundTrip(t *testing.T) {
	d := sampleExperiment(t)
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name      string
		got, want any
	}{
		{"experiment", back.Experiment, d.Experiment},
		{"phases", back.Phases, d.Phases},
		{"faults", back.Faults, d.Faults},
		{"recovery", back.Recovery, d.Recovery},
		{"events", back.Events, d.Events},
		{"steady_state", back.SteadyState, d.SteadyState},
		{"server", back.Server, d.Server},
		{"gpu", back.GPU, d.GPU},
	} {
		if !reflect.DeepEqual(x.got, x.want) {
			t.Errorf("%s read back as %+v, want %+v", x.name, x.got, x.want)
		}
	}
	if got, want := marshal(t, back), marshal(t, d); !bytes.Equal(got, want) {
		t.Errorf("read document differs from the written one:\n%s", diffLine(got, want))
	}
	js := string(marshal(t, d))
	for _, want := range []string{
		`"experiment": {`, `"spec": "apiVersion: llmchaos/v1\n`, `"phases": [`, `"name": "recovery"`,
		`"planned_at_s": 15`, `"injected_at_s": 15.012`, `"reverted_at_s": 30.004`, `"revert_ok": true`,
		`"recovery_time_s": 18.488`, `"oom_recovery_time_s": 9`, `"time_to_recover_s": 3.484`, `"held_last": "ttft p99"`, `"at_s": 40.5`, `"source": "replica"`,
		`"steady_state": {`, `"before": [`, `"probe": "error_rate: rate<0.01"`,
		`"server": [`, `"name": "vllm:kv_cache_usage_perc"`, `"gpu": [`, `"points": [`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("run.json lacks %s", want)
		}
	}
}

func TestExperimentFieldsOmittedForLoad(t *testing.T) {
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	js := string(marshal(t, d))
	for _, key := range []string{"experiment", "phases", "faults", "recovery", "events", "steady_state", "server", "gpu"} {
		if strings.Contains(js, `"`+key+`":`) {
			t.Errorf("a plain load's run.json has %q", key)
		}
	}
	// A fault never injected and never reverted writes both times as null,
	// not as 0 (a fault may well be injected at 0 s).
	d.Faults = []FaultRecord{{Name: "f", Type: "network.latency", PlannedAtS: 0, RevertOK: true}}
	js = string(marshal(t, d))
	if !strings.Contains(js, `"injected_at_s": null`) || !strings.Contains(js, `"reverted_at_s": null`) {
		t.Errorf("unset fault times are not null:\n%s", js[strings.Index(js, `"faults"`):][:300])
	}
}

func TestPhaseSpan(t *testing.T) {
	d := &Document{Phases: samplePhases}
	tests := []struct {
		name   string
		sel    assertions.Tags
		want   time.Duration
		wantOK bool
	}{
		{"whole run", assertions.Tags{}, 0, false},
		{"class only", assertions.Tags{Class: "chat"}, 0, false},
		{"baseline", assertions.Tags{Phase: "baseline"}, 15012 * time.Millisecond, true},
		{"both fault phases", assertions.Tags{Phase: "fault"}, (30004 - 15012 + 48010 - 40003) * time.Millisecond, true},
		{"one fault phase", assertions.Tags{Phase: "fault", Fault: "gpu-oom"}, 8007 * time.Millisecond, true},
		{"a fault's phases", assertions.Tags{Fault: "slow-net"}, (33500 - 15012) * time.Millisecond, true},
		{"after, twice", assertions.Tags{Phase: "after"}, (40003 - 33500 + 60000 - 52400) * time.Millisecond, true},
		{"unknown fault", assertions.Tags{Fault: "nope"}, 0, false},
		{"phase with class", assertions.Tags{Phase: "recovery", Class: "chat"}, (33500 - 30004 + 52400 - 48010) * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := d.PhaseSpan(tt.sel)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("PhaseSpan(%v) = %v, %v; want %v, %v", tt.sel, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestEvaluateWithPhaseSpan(t *testing.T) {
	d := sampleExperiment(t)
	// requests_per_s{phase:after} has data only because the phases say how
	// long "after" lasted: ok requests of the after phases / 14.103 s.
	var th *ThresholdResult
	for i := range d.Thresholds {
		if d.Thresholds[i].Key() == "requests_per_s{phase:after}" {
			th = &d.Thresholds[i]
		}
	}
	if th == nil || th.Value == nil {
		t.Fatalf("requests_per_s{phase:after} = %+v, want a value", th)
	}
	span, _ := d.PhaseSpan(assertions.Tags{Phase: "after"})
	c := d.Summary().Counts(recording.TagFilter{Phase: "after"})
	if want := float64(c.OK) / span.Seconds(); *th.Value != want {
		t.Errorf("requests_per_s{phase:after} = %v, want %v (%d ok / %v)", *th.Value, want, c.OK, span)
	}
	// Without spans the same threshold has no data.
	d.Evaluate([]assertions.Threshold{mustParse(t, "requests_per_s{phase:after}: value>15")}, false)
	if !d.Thresholds[0].NoData {
		t.Errorf("without WithSpan, requests_per_s{phase:after} = %+v, want no data", d.Thresholds[0])
	}
}

func mustParse(t *testing.T, s string) assertions.Threshold {
	t.Helper()
	ths, err := assertions.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return ths[0]
}

func TestTimelineEdges(t *testing.T) {
	base := func() *Document {
		return &Document{DurationS: 30, Verdict: VerdictAborted, Thresholds: []ThresholdResult{}}
	}
	tests := []struct {
		name string
		edit func(d *Document)
		want []string // lines (spaces squeezed) the summary must hold
		not  []string
	}{
		{
			name: "plain load has no experiment sections",
			edit: func(d *Document) {},
			not:  []string{"timeline", "faults", "recovery", "steady state"},
		},
		{
			name: "fault never reverted runs to the end",
			edit: func(d *Document) {
				d.Faults = []FaultRecord{{Name: "kill", Type: "replica.kill", PlannedAtS: 10, PlannedDurationS: 5,
					InjectedAtS: Seconds(10 * time.Second), Error: "undo: process 4242 not found", RevertOK: false}}
			},
			want: []string{
				"kill [" + strings.Repeat("#", 38) + ">", // 10 s of 30 s: columns 20 to 59
				"[###] injected … reverted > not reverted",
				"kill replica.kill - 10s → 15s 10s (0ms) - FAILED",
				"kill: undo: process 4242 not found",
			},
		},
		{
			name: "fault never injected",
			edit: func(d *Document) {
				d.Faults = []FaultRecord{{Name: "stall", Type: "stream.stall", PlannedAtS: 15, RevertOK: true, Error: "inject: proxy refused"}}
			},
			want: []string{"stall x", "x not injected", "stall stream.stall - 15s → - - not injected", "stall: inject: proxy refused"},
		},
		{
			name: "fault at zero, late and early",
			edit: func(d *Document) {
				d.Faults = []FaultRecord{{Name: "net", Type: "network.loss", PlannedAtS: 0, PlannedDurationS: 3,
					InjectedAtS: Seconds(1500 * time.Microsecond), RevertedAtS: Seconds(2999750 * time.Microsecond), RevertOK: true}}
			},
			want: []string{"net [####]", "net network.loss - 0s → 3s 0.002s (+2ms) 3s (-250µs) ok"},
		},
		{
			name: "recovery that never came, steady state that failed after",
			edit: func(d *Document) {
				d.Recovery = []RecoveryRecord{{Fault: "kill", Recovered: false}}
				d.SteadyState = &SteadyState{
					Before: []ProbeRecord{{Probe: "http GET /health → 200", OK: true}},
					After:  []ProbeRecord{{Probe: "http GET /health → 200", OK: false, Detail: "status 503"}},
				}
			},
			want: []string{"recovery recovered time", "kill no -", "steady state before: 1 of 1 held after: 0 of 1 held",
				"✗ after http GET /health → 200: status 503"},
			not: []string{"after OOM"},
		},
		{
			name: "instantaneous fault, and one that could not be judged",
			edit: func(d *Document) {
				d.Recovery = []RecoveryRecord{
					{Fault: "kill", Recovered: true, Instantaneous: true, RecoveryTimeS: Seconds(7200 * time.Millisecond), HeldLast: "e2e p99"},
					{Fault: "slow", InsufficientTraffic: true},
				}
			},
			want: []string{"recovery recovered time from revert held last", "kill yes 7.20s (instant) e2e p99",
				"slow insufficient traffic - - -"},
		},
		{
			name: "aborted before the after probes",
			edit: func(d *Document) {
				d.SteadyState = &SteadyState{Before: []ProbeRecord{{Probe: "p", OK: true}}}
			},
			want: []string{"steady state before: 1 of 1 held after: not checked"},
		},
		{
			name: "phases without fault records",
			edit: func(d *Document) {
				d.Phases = []PhaseRecord{{Name: PhaseBaseline, EndS: 10}, {Name: PhaseFault, Fault: "f", StartS: 10, EndS: 20}, {Name: PhaseAfter, StartS: 20, EndS: 30}}
			},
			want: []string{
				"phase --------------------####################====================",
				"f [##################]",
				"- baseline # fault = after [###] injected … reverted",
			},
			not: []string{"faults", "recovery"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base()
			tt.edit(d)
			var b bytes.Buffer
			if err := WriteText(&b, d); err != nil {
				t.Fatal(err)
			}
			got := squeeze(b.String())
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, "\n"+n) {
					t.Errorf("summary has a line starting %q:\n%s", n, b.String())
				}
			}
		})
	}
}

func TestRuler(t *testing.T) {
	tests := []struct {
		dur              float64
		w                int
		wantLab, wantRul string
	}{
		{60, 60, "0s        10s       20s       30s       40s       50s     60s",
			"|---------|---------|---------|---------|---------|---------|"},
		// The end's label wins over a tick label it would touch.
		{30, 30, "0s   5s   10s  15s  20s     30s", "|----|----|----|----|----|----|"},
		{7, 14, "0s  2s  4s   7s", "|---|---|---|-|"},
		{600, 20, "0s  2m  4m  6m    10m", "|---|---|---|---|---|"},
		{61, 60, "0s             15s            30s           45s           61s",
			"|--------------|--------------|-------------|--------------||"},
		{5400, 30, "0s   15m  30m  45m  1h    1h30m", "|----|----|----|----|----|----|"},
		{3, 60, "0s                  1s                  2s                 3s",
			"|-------------------|-------------------|-------------------|"},
		{100000, 60, "0s                        12h                       27h46m40s",
			"|-------------------------|-------------------------|-------|"},
	}
	for _, tt := range tests {
		lab, rul := ruler(tt.dur, tt.w)
		if lab != tt.wantLab || rul != tt.wantRul {
			t.Errorf("ruler(%v, %d) =\n%q\n%q\nwant\n%q\n%q", tt.dur, tt.w, lab, rul, tt.wantLab, tt.wantRul)
		}
	}
}

func TestFmtOffset(t *testing.T) {
	tests := []struct {
		s    float64
		want string
	}{
		{0, "0ms"}, {0.012, "+12ms"}, {15.012 - 15, "+12ms"}, {-0.003, "-3ms"}, {0.00025, "+250µs"},
		{1.2, "+1.20s"}, {-0.0000001, "0ms"},
	}
	for _, tt := range tests {
		if got := fmtOffset(tt.s); got != tt.want {
			t.Errorf("fmtOffset(%v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestAddPoint(t *testing.T) {
	var s []SeriesRecord
	s = AddPoint(s, "a", "up", 0, 1)
	s = AddPoint(s, "b", "up", 0, 1)
	s = AddPoint(s, "a", "up", 2*time.Second, 0)
	s = AddPoint(s, "a", "kv", 2500*time.Millisecond, 0.5)
	want := []SeriesRecord{
		{Endpoint: "a", Name: "up", Points: [][2]float64{{0, 1}, {2, 0}}},
		{Endpoint: "b", Name: "up", Points: [][2]float64{{0, 1}}},
		{Endpoint: "a", Name: "kv", Points: [][2]float64{{2.5, 0.5}}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v, want %+v", s, want)
	}
}
