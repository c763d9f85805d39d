package spec

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/faults/network"
	"github.com/llmchaos/llmchaos/faults/replica"
)

// Every fault type is complete: a family, a summary, a lifetime, a target
// kind, an example, params, a check, a builder and its reverters; and its
// example params decode and pass its check.
func TestEveryFaultTypeIsComplete(t *testing.T) {
	if TargetProxy != faults.TargetProxy || TargetParams != faults.TargetParams {
		t.Fatalf("experiments' fault targets %q, %q differ from faults' %q, %q", TargetProxy, TargetParams, faults.TargetProxy, faults.TargetParams)
	}
	seen := map[string]bool{}
	for _, ft := range FaultTypeList() {
		t.Run(ft.Name, func(t *testing.T) {
			if seen[ft.Name] {
				t.Errorf("fault type %s is listed twice", ft.Name)
			}
			seen[ft.Name] = true
			if ft.Family == "" || !strings.HasPrefix(ft.Name, ft.Family+".") && ft.Family != network.Family {
				t.Errorf("family %q does not fit the name", ft.Family)
			}
			if ft.Summary == "" || ft.Example == "" {
				t.Errorf("summary %q, example %q: want both", ft.Summary, ft.Example)
			}
			if ft.Lifetime != faults.Instantaneous && ft.Lifetime != faults.Sustained {
				t.Errorf("lifetime %q", ft.Lifetime)
			}
			if ft.Target != TargetProxy && ft.Target != TargetParams {
				t.Errorf("target %q", ft.Target)
			}
			if ft.NewParams == nil || ft.Check == nil || ft.Defaults == nil || ft.Build == nil || ft.Reverters == nil {
				t.Fatalf("NewParams, Check, Defaults, Build or Reverters missing")
			}
			for _, p := range ft.Params() {
				if p.Doc == "" {
					t.Errorf("param %s has no doc tag", p.Name)
				}
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(ft.Example), &m); err != nil {
				t.Fatalf("example: %v", err)
			}
			params, err := DecodeParams(0, Fault{Name: "x", Type: ft.Name, Params: m}, ft, &SimEnv{StateFile: "/s", VGPUDir: "/v"})
			if err != nil {
				t.Fatalf("example does not decode: %v", err)
			}
			if err := ft.Check(params).Err(); err != nil {
				t.Errorf("example does not pass the check: %v", err)
			}
		})
	}
	for _, want := range []string{replica.TypeKill, replica.TypeStop, replica.TypePause, replica.TypeRestart, gpu.TypeMemoryPressure, gpu.TypeHang} {
		if _, ok := FaultTypes()[want]; !ok {
			t.Errorf("fault type %s is not registered", want)
		}
	}
}

// Every fault type keys the problems of its params by field: each
// problem of empty params names a documented key (or the params as a
// whole), and the message opens with that key as written, so that an
// experiment file places it at faults[i].params.KEY with no reading of
// the message.
func TestFaultParamProblemsNameTheirKeys(t *testing.T) {
	indexRE := regexp.MustCompile(`\[\d+\]`)
	for _, ft := range FaultTypeList() {
		keys := map[string]bool{}
		for _, p := range ft.Params() {
			keys[p.Name] = true
		}
		params := ft.NewParams()
		ft.Defaults(params)
		ps := ft.Check(params)
		if len(ps) == 0 {
			continue // empty params are valid (all optional)
		}
		for _, p := range ps {
			key := indexRE.ReplaceAllString(string(p.Path), "")
			if key != "" && !keys[key] {
				t.Errorf("%s: problem %q is keyed %q, which is no param of the type (%v)", ft.Name, p.Error(), p.Path, slices.Sorted(maps.Keys(keys)))
			}
			if key != "" && !strings.HasPrefix(p.Error(), string(p.Path)) {
				t.Errorf("%s: problem %q does not open with its key %q", ft.Name, p.Error(), p.Path)
			}
		}
	}
}

func TestReverters(t *testing.T) {
	got := Reverters()
	for _, kind := range []string{
		faults.KindProcess, network.KindProxyToxic, network.KindNFTTable, network.KindTCQdisc,
		replica.KindSignalCont, replica.KindDockerUnpause, replica.KindDone, gpu.KindBalloonToken,
		shardjob.KindJob, // not a fault's: the Job of workload.shards
	} {
		if got[kind] == nil {
			t.Errorf("no reverter for kind %s", kind)
		}
	}
}

// replicaSpec is a spec whose only fault is a replica.kill with params.
func replicaSpec(sim bool, params map[string]any) *Spec {
	s := &Spec{
		APIVersion: APIVersion, Kind: KindExperiment, Metadata: Metadata{Name: "r"},
		Workload: Workload{Preset: "chat", Duration: Duration(60e9)},
		Faults:   []Fault{{Name: "k", Type: replica.TypeKill, At: Duration(10e9), Duration: Duration(1e9), Params: params}},
	}
	if sim {
		s.Target.Sim = &SimTarget{Replicas: 2}
	} else {
		s.Target.LLM = &LLMTarget{URL: "http://127.0.0.1:8000/v1"}
	}
	return s
}

func TestReplicaFaultTargetFromSim(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sim     bool
		params  map[string]any
		wantErr string
	}{
		{"sim fills the target", true, map[string]any{"select": map[string]any{"mode": "one"}}, ""},
		{"llm needs a target", false, map[string]any{}, "exactly one of state_file"},
		{"llm with a pid file", false, map[string]any{"target": map[string]any{"pid_file": "/run/vllm.pid"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := replicaSpec(tc.sim, tc.params).Validate().Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
	// The runner fills the real state file in.
	s := replicaSpec(true, map[string]any{})
	types := FaultTypes()
	p, err := DecodeParams(0, s.Faults[0], types[replica.TypeKill], &SimEnv{StateFile: "/run/x/state.json"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*replica.KillParams).Target.StateFile; got != "/run/x/state.json" {
		t.Errorf("state file = %q, want the simulator's", got)
	}
	g, err := DecodeParams(0, Fault{Name: "g", Type: gpu.TypeMemoryPressure, Params: map[string]any{"gib": 10}}, types[gpu.TypeMemoryPressure], &SimEnv{VGPUDir: "/run/x/vgpu"})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.(*gpu.PressureParams).VGPUDir; got != "/run/x/vgpu" {
		t.Errorf("vgpu dir = %q, want the simulator's", got)
	}
}
