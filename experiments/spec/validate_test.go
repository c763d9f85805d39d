package spec

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/faults/gpupod"
	"github.com/llmchaos/llmchaos/faults/network"
	"github.com/llmchaos/llmchaos/faults/replica"
)

// validSpec returns a valid spec built in code.
func validSpec() *Spec {
	return &Spec{
		APIVersion: APIVersion,
		Kind:       KindExperiment,
		Metadata:   Metadata{Name: "code"},
		Target:     Target{LLM: &LLMTarget{URLs: []string{"http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"}}},
		Proxies:    []Proxy{{Name: "front", Upstream: "127.0.0.1:8001"}},
		Workload:   Workload{Preset: "chat", Rate: PerSecondRate(5), Duration: Duration(time.Minute)},
		SteadyState: []Probe{
			{HTTP: &HTTPProbe{URL: "{{target}}/health"}},
			{Threshold: "error_rate: rate<0.01"},
		},
		Faults: []Fault{
			{Name: "lat", Type: network.TypeProxyLatency, At: Duration(5 * time.Second), Duration: Duration(10 * time.Second),
				Target: &FaultTarget{Endpoints: []int{1}}, Params: map[string]any{"latency": "100ms"}},
			{Name: "err", Type: network.TypeHTTPError, At: Duration(30 * time.Second), Duration: Duration(5 * time.Second),
				Target: &FaultTarget{Proxy: "front"}, Params: map[string]any{"status": 429, "probability": 0.5}},
		},
		StopConditions: []StopCondition{{Threshold: "error_rate: rate<0.5"}},
		Thresholds:     Thresholds{"recovery_time{fault:lat}": {{Threshold: "max<20s"}}},
	}
}

// validateLines returns Validate's problems as strings.
func validateLines(s *Spec) []string {
	var out []string
	for _, p := range s.Validate() {
		out = append(out, p.Error())
	}
	return out
}

func TestValidateCodeSpec(t *testing.T) {
	if got := validateLines(validSpec()); len(got) != 0 {
		t.Fatalf("valid spec has problems: %q", got)
	}
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *Spec)
		want   []string
	}{
		{"both url and urls", func(s *Spec) { s.Target.LLM.URL = "http://127.0.0.1:9/v1" },
			[]string{"target.llm.urls: url and urls are both set: keep one"}},
		{"no url", func(s *Spec) { s.Target.LLM.URLs = nil; s.Faults[0].Target = nil },
			[]string{"target.llm: missing: set url (the base URL, e.g. http://127.0.0.1:8000/v1) or urls"}},
		{"bad url", func(s *Spec) { s.Target.LLM.URLs[0] = "127.0.0.1:8001" },
			[]string{`target.llm.urls[0]: "127.0.0.1:8001": want an http:// or https:// URL`}},
		{"duplicate url", func(s *Spec) { s.Target.LLM.URLs[1] = s.Target.LLM.URLs[0] },
			[]string{`target.llm.urls[1]: "http://127.0.0.1:8001/v1" is already urls[0]`}},
		{"api key in api_key_env", func(s *Spec) { s.Target.LLM.APIKeyEnv = "sk-123" },
			[]string{`target.llm.api_key_env: "sk-123" is not an environment variable name: name the variable that holds the key, not the key`}},
		{"sim ttft without constant latency", func(s *Spec) {
			s.Target = Target{Sim: &SimTarget{TTFT: Duration(time.Millisecond)}}
			s.Faults[0].Target = nil
		}, []string{"target.sim.ttft: applies to latency: constant only (the profile model computes its own); add latency: constant"}},
		{"sim bad gpu memory", func(s *Spec) { s.Target = Target{Sim: &SimTarget{GPUMemory: "lots"}}; s.Faults[0].Target = nil },
			[]string{`target.sim.gpu_memory: size "lots": want a number with an optional unit such as 141GiB, 80GB or 512MiB`}},
		{"negative timeouts and grace", func(s *Spec) {
			s.Workload.Timeout, s.Workload.TTFTTimeout = Duration(-time.Second), Duration(-time.Second)
			s.Workload.IdleTimeout, s.Workload.Grace = Duration(-time.Second), Duration(-time.Second)
		}, []string{
			"workload.grace: -1s is negative: want a duration such as 30s",
			"workload.idle_timeout: -1s is negative: want a duration such as 30s",
			"workload.timeout: -1s is negative: want a duration such as 30s",
			"workload.ttft_timeout: -1s is negative: want a duration such as 30s",
		}},
		{"ttft timeout beyond the request timeout", func(s *Spec) {
			s.Workload.Timeout, s.Workload.TTFTTimeout = Duration(time.Second), Duration(2*time.Second)
		}, []string{"workload.ttft_timeout: 2s is longer than timeout 1s, which bounds the whole request: it would never fire"}},
		{"endpoint out of range", func(s *Spec) { s.Faults[0].Target.Endpoints = []int{2} },
			[]string{"faults[0].target.endpoints[0]: 2: the target has 2 endpoint(s), numbered from 0"}},
		{"count above the selection", func(s *Spec) { s.Faults[0].Target.Count = 2 },
			[]string{"faults[0].target.count: 2: only 1 endpoint(s) to choose from"}},
		{"count and percent", func(s *Spec) { s.Faults[0].Target = &FaultTarget{Count: 1, Percent: 50} },
			[]string{"faults[0].target.percent: count and percent are both set: keep one"}},
		{"undeclared proxy", func(s *Spec) { s.Faults[1].Target.Proxy = "frnt" },
			[]string{`faults[1].target.proxy: no proxy "frnt" is declared under proxies; did you mean "front"?`}},
		{"L7 fault on a tcp proxy", func(s *Spec) { s.Proxies[0].Mode = ProxyTCP },
			[]string{`faults[1].target.proxy: http.error is decided per HTTP request and needs a proxy in http mode; proxy "front" is in tcp mode`}},
		{"proxy and endpoints", func(s *Spec) { s.Faults[1].Target.Endpoints = []int{0} },
			[]string{"faults[1].target.proxy: proxy selects the declared proxy; endpoints, count and percent select automatic proxies: keep one or the other"}},
		{"target on a kernel fault", func(s *Spec) {
			s.Faults[0].Type = network.TypeNetnsLoss
			s.Faults[0].Params = map[string]any{"netns": "ns1", "percent": 20}
		}, []string{"faults[0].target: network.loss takes no target: its params say where it acts"}},
		{"kernel fault params", func(s *Spec) {
			s.Faults[0].Type = network.TypeNetnsLoss
			s.Faults[0].Target = nil
			s.Faults[0].Params = map[string]any{"percent": 200}
		}, []string{
			"faults[0].params.netns: netns: required; name the target's network namespace (set allow_root_namespace: true to act on the namespace llmchaos runs in)",
			"faults[0].params.percent: percent: must be in (0, 100], got 200",
		}},
		{"params of the wrong type", func(s *Spec) { s.Faults[0].Params["latency"] = 100 },
			[]string{"faults[0].params.latency: 100 has no unit: write 100s or 100ms"}},
		{"duplicate proxy name", func(s *Spec) { s.Proxies = append(s.Proxies, s.Proxies[0]) },
			[]string{`proxies[1].name: proxy name "front" is used twice`}},
		{"proxy upstream", func(s *Spec) { s.Proxies[0].Upstream = "127.0.0.1" },
			[]string{`proxies[0].upstream: "127.0.0.1": want host:port, e.g. 127.0.0.1:8000`}},
		{"probe with both checks", func(s *Spec) { s.SteadyState[0].Threshold = "error_rate: rate<0.1" },
			[]string{"steady_state[0].threshold: a probe is http or threshold, not both: make two probes"}},
		{"probe status", func(s *Spec) { s.SteadyState[0].HTTP.ExpectStatus = 42 },
			[]string{"steady_state[0].http.expect_status: 42 is not an HTTP status (100 to 599)"}},
		{"phase:fault without faults", func(s *Spec) {
			s.Faults = nil
			s.Thresholds = Thresholds{"ttft{phase:fault}": {{Threshold: "p(99)<1s"}}}
		}, []string{`thresholds["ttft{phase:fault}"]: phase:fault selects nothing: the experiment declares no faults`}},
		{"empty threshold list", func(s *Spec) { s.Thresholds["ttft"] = nil },
			[]string{`thresholds.ttft: no expressions: list at least one, such as ["p(99)<500ms"]`}},
		{"no load end with faults is a warning", func(s *Spec) { s.Workload.Duration = 0; s.Workload.Requests = 100 },
			[]string{"warning: workload: the load does not end at a set time (no duration), so fault times cannot be checked against it"}},
		{"stages end the load", func(s *Spec) {
			s.Workload.Rate = Rate{}
			s.Workload.Duration = 0
			s.Workload.Stages = []Stage{{Duration: Duration(20 * time.Second), Target: 5}, {Duration: Duration(10 * time.Second), Target: 5}}
		}, []string{"faults[1].at: the fault would start at 30s, when the load (30s) is over: start it earlier or lengthen the workload's duration"}},
		{"workload with two load shapes", func(s *Spec) { s.Workload.Concurrency = 4 },
			[]string{"workload.rate: rate and concurrency conflict: each sets a load shape; choose one"}},
		{"missing workload", func(s *Spec) { s.Workload = Workload{} },
			[]string{"workload: missing: set a preset and/or a load shape, e.g. {preset: chat, rate: 10, duration: 60s}",
				"warning: workload: the load does not end at a set time (no duration), so fault times cannot be checked against it"}},
		{"recovery hold shapes the warning", func(s *Spec) { s.Recovery.Hold = Duration(26 * time.Second) },
			[]string{"warning: faults[1].at: \"err\" starts 15s after \"lat\" is reverted, less than recovery.window + recovery.hold (5s + 26s): its effects count against \"lat\"'s recovery; start it at 46s or later",
				"warning: faults[1].duration: the fault is reverted at 35s, leaving 25s of load, less than the recovery hold (26s): its recovery cannot be seen and will report recovered: false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.change(s)
			got := validateLines(s)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

// Validate reports and never fills: the spec is unchanged afterwards.
func TestValidateFillsNothing(t *testing.T) {
	for _, s := range []*Spec{validSpec(), {Target: Target{Sim: &SimTarget{}}, Faults: []Fault{{Name: "x", Type: network.TypeStreamStall}}}} {
		before := s.clone()
		s.Validate()
		if !reflect.DeepEqual(*s, before) {
			t.Errorf("Validate changed the spec:\n before %+v\n after  %+v", before, *s)
		}
	}
}

// Every fault type faults/network, faults/replica, faults/gpu and
// faults/chaosmesh define is
// in FaultTypes, its params decode, and Check accepts good params and
// rejects bad ones.
func TestFaultTypes(t *testing.T) {
	types := FaultTypes()
	want := append(network.ProxyFaultTypes(), network.TypeNetnsLoss, network.TypeNetnsPartition, network.TypeNetnsBandwidth, network.TypeNetnsDelay,
		replica.TypeKill, replica.TypeStop, replica.TypePause, replica.TypeRestart)
	want = append(want, gpu.FaultTypes()...)
	want = append(want, gpupod.TypeMemoryPressure, chaosmesh.TypeDelay, chaosmesh.TypeLoss, chaosmesh.TypeBandwidth, chaosmesh.TypePartition,
		chaosmesh.TypePodFailure, chaosmesh.TypeContainerKill, chaosmesh.TypeMemoryStress, chaosmesh.TypeCPUStress)
	slices.Sort(want)
	if got := faultTypeNames(types); !slices.Equal(got, want) {
		t.Errorf("fault types %q, want %q", got, want)
	}
	for _, typ := range network.ProxyFaultTypes() {
		if _, isStruct := types[typ].NewParams().(*struct{}); isStruct {
			t.Errorf("%s: NewParams has no params type", typ)
		}
	}
	tests := []struct {
		typ     string
		good    map[string]any
		bad     map[string]any
		wantBad string
	}{
		{network.TypeProxyLatency, map[string]any{"latency": "200ms", "jitter": "50ms"}, map[string]any{"latency": "0s"}, "latency: 0s, want more than 0"},
		{network.TypeProxyThrottle, map[string]any{"rate": 1000}, map[string]any{"rate": 0}, "rate: 0 bytes/s, want more than 0"},
		{network.TypeStreamStall, map[string]any{"probability": 0.2, "after_tokens": 5, "stall": "2s"}, map[string]any{"stall": "2s", "after_tokens": -1}, "after_tokens: -1, want 0 or more"},
		{network.TypeHTTPError, map[string]any{"status": 429}, map[string]any{"probability": 1.5}, "probability: 1.5, want more than 0 and at most 1"},
		{network.TypeNetnsBandwidth, map[string]any{"netns": "n", "interface": "veth0", "rate": "1mbit"}, map[string]any{"netns": "n", "interface": "veth0", "rate": "1zbit"}, "rate"},
		{network.TypeNetnsPartition, map[string]any{"netns": "n"}, map[string]any{"netns": "a/b"}, "netns"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			ft := types[tt.typ]
			var iss issues
			d := newDecoder(&iss)
			p := ft.NewParams()
			d.decode("params", valueNode(tt.good), reflect.ValueOf(p).Elem())
			if len(iss) > 0 {
				t.Fatalf("good params do not decode: %+v", iss)
			}
			ft.Defaults(p) // checked as resolved, as the validator does
			if err := ft.Check(p).Err(); err != nil {
				t.Errorf("good params: %v", err)
			}
			p = ft.NewParams()
			d.decode("params", valueNode(tt.bad), reflect.ValueOf(p).Elem())
			var msgs []string
			for _, is := range iss {
				msgs = append(msgs, is.msg)
			}
			ft.Defaults(p)
			for _, q := range ft.Check(p) {
				msgs = append(msgs, q.Error())
			}
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, tt.wantBad) }) {
				t.Errorf("bad params: problems %q, want one starting %q", msgs, tt.wantBad)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"duration", "at", "type", "name", "params", "target"}
	tests := []struct{ in, want string }{
		{"duraton", "duration"},
		{"durtaion", "duration"},
		{"Duration", "duration"},
		{"tpye", "type"},
		{"a", ""},
		{"zzzz", ""},
		{"parameters", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, names); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParentPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"faults[1].params.latency", "faults[1].params"},
		{"faults[1].params", "faults[1]"},
		{"faults[1]", "faults"},
		{"faults", ""},
		{`thresholds["ttft{phase:fault}"][0].threshold`, `thresholds["ttft{phase:fault}"][0]`},
		{`thresholds["ttft{phase:fault}"][0]`, `thresholds["ttft{phase:fault}"]`},
		{`thresholds["ttft{phase:fault}"]`, "thresholds"},
		{`labels["a\"]b"]`, "labels"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := parentPath(tt.in); got != tt.want {
			t.Errorf("parentPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
