package spec

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

func loadQuickstart(t *testing.T) *Spec {
	t.Helper()
	spec, _, err := Load(filepath.Join("testdata", "quickstart.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return spec
}

// Load → WithDefaults → marshal (YAML and JSON) → Parse gives the same
// spec, and it is valid.
func TestRoundTrip(t *testing.T) {
	for _, spec := range []*Spec{loadQuickstart(t), validSpec()} {
		d := spec.WithDefaults()
		if ps := d.Validate(); ps.Err() != nil {
			t.Fatalf("defaults make the spec invalid: %v", ps)
		}
		y, err := yaml.Marshal(d)
		if err != nil {
			t.Fatalf("yaml.Marshal: %v", err)
		}
		j, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		for _, enc := range []struct {
			name string
			data []byte
		}{{"yaml", y}, {"json", j}} {
			back, _, err := Parse("back."+enc.name, enc.data)
			if err != nil {
				t.Fatalf("%s: re-parse: %v\n%s", enc.name, err, enc.data)
			}
			if !reflect.DeepEqual(*back, d) {
				t.Errorf("%s round trip differs:\n got  %+v\n want %+v\n%s", enc.name, *back, d, enc.data)
			}
		}
	}
}

func TestWithDefaults(t *testing.T) {
	s := loadQuickstart(t)
	s.Proxies = []Proxy{{Name: "p", Upstream: "127.0.0.1:1"}}
	before := s.clone()
	d := s.WithDefaults()
	if !reflect.DeepEqual(*s, before) {
		t.Fatalf("WithDefaults changed its receiver")
	}
	if again := d.WithDefaults(); !reflect.DeepEqual(again, d) {
		t.Errorf("WithDefaults is not idempotent")
	}
	sd := sim.DefaultConfig()
	checks := []struct {
		name      string
		got, want any
	}{
		{"seed", *d.Seed, DefaultSeed},
		{"recovery window", d.Recovery.Window.D(), 5 * time.Second},
		{"recovery hold", d.Recovery.Hold.D(), 10 * time.Second},
		{"probe method", d.SteadyState[0].HTTP.Method, "GET"},
		{"probe status", d.SteadyState[0].HTTP.ExpectStatus, 200},
		{"probe timeout", d.SteadyState[0].HTTP.Timeout.D(), 5 * time.Second},
		{"proxy listen", d.Proxies[0].Listen, "127.0.0.1:0"},
		{"proxy mode", d.Proxies[0].Mode, ProxyHTTP},
		{"sim replicas kept", d.Target.Sim.Replicas, 3},
		{"sim model", d.Target.Sim.Model, sd.Model},
		{"sim latency", d.Target.Sim.Latency, sim.LatencyProfile},
		{"sim ttft left out for profile latency", d.Target.Sim.TTFT, Duration(0)},
		{"sim gpu memory", d.Target.Sim.GPUMemory, "141GiB"},
		{"sim utilization", d.Target.Sim.GPUMemoryUtilization, sd.GPUUtilization},
		{"sim startup", d.Target.Sim.StartupTime.D(), 5 * time.Second},
		{"sim restart delay", d.Target.Sim.RestartDelay.D(), 2 * time.Second},
		{"sim seed from the experiment", *d.Target.Sim.Seed, int64(1)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	cfg, err := d.Target.Sim.EngineConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg != sd {
		t.Errorf("engine config of the defaults %+v, want sim.DefaultConfig %+v", cfg, sd)
	}
}

func TestSimEngineConfig(t *testing.T) {
	seed := int64(7)
	st := SimTarget{Latency: sim.LatencyConstant, TTFT: Duration(20 * time.Millisecond), ITL: Duration(5 * time.Millisecond),
		MaxNumSeqs: 8, GPUMemory: "80GB", GPUMemoryUtilization: 0.5, Seed: &seed}
	c, err := st.EngineConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := sim.DefaultConfig()
	want.Latency, want.TTFT, want.ITL, want.MaxNumSeqs = sim.LatencyConstant, 20*time.Millisecond, 5*time.Millisecond, 8
	want.GPUMemory, want.GPUUtilization, want.Seed = 80e9, 0.5, 7
	if c != want {
		t.Errorf("EngineConfig\n got  %+v\n want %+v", c, want)
	}
}

func TestWorkloadConfigs(t *testing.T) {
	tests := []struct {
		name   string
		w      Workload
		check  func(wc workload.Config, ac workload.ArrivalConfig) bool
		errHas string
	}{
		{"preset with user rate", Workload{Preset: "chat", Rate: PerSecondRate(20), Duration: Duration(time.Minute)},
			func(wc workload.Config, ac workload.ArrivalConfig) bool {
				return wc.Name == "chat" && ac.Rate == 20 && ac.Arrival == workload.ArrivalPoisson && ac.Duration == time.Minute && !wc.InputTokens.IsZero()
			}, ""},
		{"user shape replaces the preset's", Workload{Preset: "batch", Rate: PerSecondRate(3), Duration: Duration(time.Minute)},
			func(wc workload.Config, ac workload.ArrivalConfig) bool {
				return ac.Concurrency == 0 && ac.Rate == 3 && wc.IgnoreEOS
			}, ""},
		{"no preset", Workload{Concurrency: 4, Requests: 10, InputTokens: Dist(workload.FixedDist(100)), ThinkTime: DurationDist(workload.FixedDuration(time.Second)),
			Stages: nil},
			func(wc workload.Config, ac workload.ArrivalConfig) bool {
				return wc.Name == "custom" && ac.Mode() == workload.ModeClosed && ac.ThinkTime.A == time.Second
			}, ""},
		{"stages and ramp", Workload{Preset: "chat", Stages: []Stage{{Duration: Duration(time.Second), Target: 3}}, Ramp: &Ramp{From: 1, To: 2}, Duration: Duration(time.Minute)},
			nil, "workload.ramp and workload.stages conflict: each sets a load shape; choose one"},
		{"unknown preset", Workload{Preset: "nope", Rate: PerSecondRate(1), Duration: Duration(time.Second)}, nil, `workload.preset "nope": unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wc, ac, err := tt.w.Configs()
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Configs: %v", err)
			}
			if !tt.check(wc, ac) {
				t.Errorf("resolved\n %+v\n %+v", wc, ac)
			}
		})
	}
}

func TestThresholdEntryForms(t *testing.T) {
	src := `ttft: ["p(99)<500ms", {threshold: "max<1s", abortOnFail: true, delayAbortEval: 10s}]`
	var iss issues
	var got map[string][]ThresholdEntry
	root := mustTree(t, src)
	newDecoder(&iss).decode("", root, reflect.ValueOf(&got).Elem())
	if len(iss) > 0 {
		t.Fatalf("decode: %+v", iss)
	}
	want := []ThresholdEntry{{Threshold: "p(99)<500ms"}, {Threshold: "max<1s", AbortOnFail: true, DelayAbortEval: Duration(10 * time.Second)}}
	if !reflect.DeepEqual(got["ttft"], want) {
		t.Fatalf("entries %+v, want %+v", got["ttft"], want)
	}
	b, err := json.Marshal(got["ttft"])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `["p(99)\u003c500ms",{"threshold":"max\u003c1s","abortOnFail":true,"delayAbortEval":"10s"}]`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
	ths, err := Thresholds(got).Config().Thresholds()
	if err != nil {
		t.Fatal(err)
	}
	if len(ths) != 2 || !ths[1].AbortOnFail || ths[1].DelayAbortEval != 10*time.Second || ths[0].AbortOnFail {
		t.Errorf("thresholds %+v", ths)
	}
}

func TestStopConditionThresholds(t *testing.T) {
	c := StopCondition{Threshold: "error_rate{phase:fault}: rate<0.5", DelayAbortEval: Duration(5 * time.Second)}
	ths, err := c.Thresholds()
	if err != nil {
		t.Fatal(err)
	}
	want := assertions.Tags{Phase: "fault"}
	if len(ths) != 1 || !ths[0].AbortOnFail || ths[0].DelayAbortEval != 5*time.Second || ths[0].Metric != "error_rate" || ths[0].Tags != want {
		t.Errorf("thresholds %+v", ths)
	}
}

func TestHTTPProbeExpand(t *testing.T) {
	h := HTTPProbe{URL: "{{target}}/health"}
	got, err := h.ExpandURL("http://127.0.0.1:8001/v1")
	if err != nil || got != "http://127.0.0.1:8001/health" {
		t.Errorf("ExpandURL = %q, %v", got, err)
	}
	if _, err := h.ExpandURL("::"); err == nil {
		t.Errorf("ExpandURL of a bad endpoint: no error")
	}
	fixed := HTTPProbe{URL: "http://127.0.0.1:9/x"}
	if got, _ := fixed.ExpandURL("http://other:1"); got != fixed.URL {
		t.Errorf("ExpandURL without placeholder = %q", got)
	}
}

// mustTree parses src into a node tree.
func mustTree(t *testing.T, src string) *node {
	t.Helper()
	f, err := parseYAML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b := &treeBuilder{anchors: map[string]*node{}, sizes: map[*node]int{}}
	n := b.build(f.Docs[0], "", 0)
	if len(b.iss) > 0 {
		t.Fatalf("tree: %+v", b.iss)
	}
	return n
}
