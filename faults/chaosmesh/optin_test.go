package chaosmesh_test

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/chaosmesh/chaosmeshtest"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// TestRefusesPodsNotOptedIn: pods that are not labelled
// llmchaos.io/target=true, in a namespace that is not either, are refused
// with a message that names them and says how to opt in, and nothing is
// journaled or created; labelling the pods, or their namespace, lets the
// fault act.
func TestRefusesPodsNotOptedIn(t *testing.T) {
	e := newEnv(t, false)
	chaosmeshtest.Install(t, e.c.Config())
	e.pods(t, "plain", 2, nil)
	e.pods(t, "mixed", 1, map[string]string{kube.LabelTarget: "true"})
	e.pods(t, "opted", 2, map[string]string{kube.LabelTarget: "true"})

	inject := func(selector string) error {
		f := e.build(t, chaosmesh.TypePodFailure, "pf", map[string]any{"selector": selector}, faults.BuildEnv{Seed: 3})
		log := &checkingLog{t: t, dyn: e.dyn}
		undo, err := f.Inject(t.Context(), log)
		if err != nil {
			if len(log.specs) != 0 {
				t.Errorf("refused fault journaled %v", log.specs)
			}
			return err
		}
		if err := undo(t.Context()); err != nil {
			t.Fatal(err)
		}
		return nil
	}

	err := inject("app=plain")
	if !errorsIs(err, kube.ErrNotOptedIn) {
		t.Fatalf("pods not opted in: %v, want ErrNotOptedIn", err)
	}
	for _, want := range []string{"plain-0, plain-1", "namespace " + e.ns, "llmchaos.io/target=true", "kubectl label namespace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if n := len(e.objects(t, chaosmesh.PodChaos)); n != 0 {
		t.Errorf("a refused fault left %d objects", n)
	}
	// One pod of the selector opted in is not enough: every pod it
	// matches must be, so that no pick depends on the seed.
	if err := inject("app in (plain, opted)"); !errorsIs(err, kube.ErrNotOptedIn) {
		t.Errorf("some pods not opted in: %v, want ErrNotOptedIn", err)
	}
	if err := inject("app=opted"); err != nil {
		t.Errorf("pods opted in: %v", err)
	}
	e.labelNamespace(t, kube.LabelTarget, "true")
	if err := inject("app=plain"); err != nil {
		t.Errorf("namespace opted in: %v", err)
	}
}
