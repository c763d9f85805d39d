package chaosmesh_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/chaosmesh/chaosmeshtest"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// TestFaultsCreateTheirObjectAndDeleteItOnUndo: every type of the family
// records its object's name in the journal before the object exists,
// creates one object of its kind that names exactly the pods it picked
// (with the run's and fault's labels and the action's fields), tells the
// run which pods it acted on, and its Undo deletes the object, idempotently.
func TestFaultsCreateTheirObjectAndDeleteItOnUndo(t *testing.T) {
	e := newEnv(t, true)
	chaosmeshtest.Install(t, e.c.Config())
	e.pods(t, "vllm", 3, nil)
	e.pods(t, "gateway", 1, nil)

	tests := []struct {
		typ    string
		params map[string]any
		kind   chaosmesh.Kind
		picks  int
		want   map[string]any // fields of the object's spec
	}{
		{chaosmesh.TypeDelay, map[string]any{"selector": "app=vllm", "latency": "200ms", "jitter": "50ms", "correlation": 25},
			chaosmesh.NetworkChaos, 1, map[string]any{
				"action": "delay", "direction": "to",
				"delay": map[string]any{"latency": "200ms", "jitter": "50ms", "correlation": "25"},
			}},
		{chaosmesh.TypeLoss, map[string]any{"selector": "app=vllm", "loss": 20, "select": map[string]any{"mode": "count", "value": 2}, "external_targets": []any{"10.9.0.0/16"}},
			chaosmesh.NetworkChaos, 2, map[string]any{
				"action": "loss", "direction": "to", "externalTargets": []any{"10.9.0.0/16"},
				"loss": map[string]any{"loss": "20", "correlation": "0"},
			}},
		{chaosmesh.TypeBandwidth, map[string]any{"selector": "app=vllm", "rate": "1mbps", "select": map[string]any{"mode": "all"}},
			chaosmesh.NetworkChaos, 3, map[string]any{
				"action": "bandwidth", "direction": "to",
				"bandwidth": map[string]any{"rate": "1mbps", "limit": int64(20971520), "buffer": int64(10000)},
			}},
		{chaosmesh.TypePartition, map[string]any{"selector": "app=vllm", "direction": "both", "peer": map[string]any{"selector": "app in (gateway)"}},
			chaosmesh.NetworkChaos, 1, map[string]any{
				"action": "partition", "direction": "both",
				"target": map[string]any{"mode": "all", "selector": map[string]any{
					"namespaces":          []any{"NS"},
					"expressionSelectors": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"gateway"}}},
				}},
			}},
		{chaosmesh.TypePodFailure, map[string]any{"selector": "app=vllm", "select": map[string]any{"mode": "percent", "value": 50, "min_available": 1}, "max_duration": "5m"},
			chaosmesh.PodChaos, 1, map[string]any{"action": "pod-failure", "duration": "5m0s"}},
		{chaosmesh.TypeContainerKill, map[string]any{"selector": "app=vllm", "container_names": []any{"vllm"}},
			chaosmesh.PodChaos, 1, map[string]any{"action": "container-kill", "containerNames": []any{"vllm"}}},
		{chaosmesh.TypeMemoryStress, map[string]any{"selector": "app=vllm", "size": "2GiB", "oom_score_adj": -100},
			chaosmesh.StressChaos, 1, map[string]any{
				"stressors": map[string]any{"memory": map[string]any{"workers": int64(1), "size": "2GiB", "oomScoreAdj": int64(-100)}},
			}},
		{chaosmesh.TypeCPUStress, map[string]any{"selector": "app=vllm", "workers": 2, "load": 80, "container_names": []any{"vllm"}},
			chaosmesh.StressChaos, 1, map[string]any{
				"containerNames": []any{"vllm"},
				"stressors":      map[string]any{"cpu": map[string]any{"workers": int64(2), "load": int64(80)}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			name := strings.ReplaceAll(tt.typ, "_", "-")
			var applied []string
			f := e.build(t, tt.typ, name, tt.params, faults.BuildEnv{Seed: 7, RunID: "run/1", OnApplied: func(s string) { applied = append(applied, s) }})
			log := &checkingLog{t: t, dyn: e.dyn}
			undo, err := f.Inject(t.Context(), log)
			if err != nil {
				t.Fatal(err)
			}
			if len(log.specs) != 1 || log.specs[0].Kind != chaosmesh.KindObject {
				t.Fatalf("journal specs %+v, want one %s", log.specs, chaosmesh.KindObject)
			}
			if len(log.early) > 0 {
				t.Errorf("journal written after the object was created: %v", log.early)
			}
			var ref chaosmesh.ObjectRef
			if err := json.Unmarshal(log.specs[0].Data, &ref); err != nil {
				t.Fatal(err)
			}
			objs := e.objects(t, tt.kind)
			if len(objs) != 1 {
				t.Fatalf("%d %s objects, want 1", len(objs), tt.kind.Name)
			}
			obj := objs[0].Object
			if objs[0].GetName() != ref.Name || ref.Namespace != e.ns || ref.Kubeconfig != e.c.Kubeconfig {
				t.Errorf("journal names %+v, object is %s/%s", ref, objs[0].GetNamespace(), objs[0].GetName())
			}
			if got, want := objs[0].GetLabels(), kube.OwnedLabels("run/1", name); !deepEqual(got, want) {
				t.Errorf("labels %v, want %v", got, want)
			} else if got[kube.LabelRun] != "run-1" {
				t.Errorf("run label %q, want run-1", got[kube.LabelRun])
			}
			if m := nested(t, obj, "spec", "mode"); m != "all" {
				t.Errorf("spec.mode %v, want all (the pods are named)", m)
			}
			if ns := nested(t, obj, "spec", "selector", "namespaces"); !deepEqual(ns, []any{e.ns}) {
				t.Errorf("spec.selector.namespaces %v, want [%s]", ns, e.ns)
			}
			picked, _ := nested(t, obj, "spec", "selector", "pods", e.ns).([]any)
			if len(picked) != tt.picks {
				t.Errorf("picked pods %v, want %d", picked, tt.picks)
			}
			for _, p := range picked {
				if !strings.HasPrefix(p.(string), "vllm-") {
					t.Errorf("picked %v, not a pod of app=vllm", p)
				}
			}
			if len(applied) != tt.picks {
				t.Errorf("OnApplied told of %v, want %d pods", applied, tt.picks)
			}
			for k, want := range tt.want {
				if tgt, ok := want.(map[string]any); ok && k == "target" {
					sel := tgt["selector"].(map[string]any)
					sel["namespaces"] = []any{e.ns}
				}
				if got := nested(t, obj, "spec", k); !deepEqual(got, want) {
					t.Errorf("spec.%s = %#v, want %#v", k, got, want)
				}
			}

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := undo(ctx); err != nil {
				t.Fatal(err)
			}
			if objs := e.objects(t, tt.kind); len(objs) != 0 {
				t.Errorf("after Undo %d objects are left", len(objs))
			}
			if err := undo(ctx); err != nil {
				t.Errorf("second Undo: %v", err)
			}
		})
	}
}

// TestSelectionIsSeededAndBounded: the pods picked follow the fault's
// seed (the same seed picks the same pods), and a selection that would
// leave fewer Ready pods than min_available is refused before anything is
// created or journaled.
func TestSelectionIsSeededAndBounded(t *testing.T) {
	e := newEnv(t, true)
	chaosmeshtest.Install(t, e.c.Config())
	e.pods(t, "vllm", 4, nil)
	params := map[string]any{"selector": "app=vllm", "latency": "10ms", "select": map[string]any{"mode": "count", "value": 2}}

	pick := func(seed uint64) []any {
		f := e.build(t, chaosmesh.TypeDelay, "d", params, faults.BuildEnv{Seed: seed})
		undo, err := f.Inject(t.Context(), faults.NopLog{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := undo(t.Context()); err != nil {
				t.Error(err)
			}
		}()
		objs := e.objects(t, chaosmesh.NetworkChaos)
		if len(objs) != 1 {
			t.Fatalf("%d objects, want 1", len(objs))
		}
		return nested(t, objs[0].Object, "spec", "selector", "pods", e.ns).([]any)
	}
	a, b := pick(11), pick(11)
	if !deepEqual(a, b) {
		t.Errorf("seed 11 picked %v, then %v", a, b)
	}
	seen := map[string]bool{}
	for seed := range uint64(8) {
		seen[strings.Join(toStrings(pick(seed)), ",")] = true
	}
	if len(seen) < 2 {
		t.Errorf("8 seeds all picked the same pods %v", seen)
	}

	f := e.build(t, chaosmesh.TypeDelay, "too-many", map[string]any{"selector": "app=vllm", "latency": "10ms",
		"select": map[string]any{"mode": "count", "value": 2, "min_available": 3}}, faults.BuildEnv{Seed: 1})
	log := &checkingLog{t: t, dyn: e.dyn}
	_, err := f.Inject(t.Context(), log)
	if !errorsIs(err, faults.ErrMinAvailable) {
		t.Fatalf("Inject: %v, want ErrMinAvailable", err)
	}
	if len(log.specs) != 0 || len(e.objects(t, chaosmesh.NetworkChaos)) != 0 {
		t.Errorf("a refused selection journaled %v and left %d objects", log.specs, len(e.objects(t, chaosmesh.NetworkChaos)))
	}
	if !strings.Contains(err.Error(), "vllm-0 ready") {
		t.Errorf("error does not list the pods: %v", err)
	}

	f = e.build(t, chaosmesh.TypeDelay, "none", map[string]any{"selector": "app=nothing", "latency": "10ms"}, faults.BuildEnv{Seed: 1})
	if _, err := f.Inject(t.Context(), faults.NopLog{}); !errorsIs(err, faults.ErrNoTargets) {
		t.Errorf("no pods match: %v, want ErrNoTargets", err)
	}
}

func toStrings(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.(string)
	}
	slices.Sort(out)
	return out
}
