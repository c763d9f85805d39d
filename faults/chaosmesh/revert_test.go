package chaosmesh_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/chaosmesh/chaosmeshtest"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
)

// chaosFinalizer stands for the finalizer Chaos Mesh's controller puts on
// its objects until it has recovered the pods.
const chaosFinalizer = "chaos-mesh/records"

// TestUndoWaitsUntilChaosMeshHasRecovered: Undo deletes the object and
// returns only once it is gone: while a finalizer (Chaos Mesh recovering
// the pods) holds it, Undo waits; when the finalizer goes, Undo returns.
func TestUndoWaitsUntilChaosMeshHasRecovered(t *testing.T) {
	e := newEnv(t, true)
	chaosmeshtest.Install(t, e.c.Config())
	e.pods(t, "vllm", 1, nil)
	f := e.build(t, chaosmesh.TypeLoss, "loss", map[string]any{"selector": "app=vllm", "loss": 50}, faults.BuildEnv{})
	undo, err := f.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	objs := e.objects(t, chaosmesh.NetworkChaos)
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	name := objs[0].GetName()
	res := e.dyn.Resource(chaosmesh.NetworkChaos.GVR()).Namespace(e.ns)
	finalizers := `{"metadata":{"finalizers":["` + chaosFinalizer + `"]}}`
	if _, err := res.Patch(t.Context(), name, types.MergePatchType, []byte(finalizers), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done <- undo(ctx)
	}()
	// Wait until the delete has happened (the object is marked), then
	// check that Undo is still waiting.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if o, ok := ev.Object.(interface{ GetDeletionTimestamp() *metav1.Time }); ok && o.GetDeletionTimestamp() != nil {
			break
		}
	}
	w.Stop()
	if ctx.Err() != nil {
		t.Fatal("the object was never marked deleted")
	}
	select {
	case err := <-done:
		t.Fatalf("Undo returned (%v) while the finalizer still held the object", err)
	default:
	}
	if _, err := res.Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Undo: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Undo did not return within a minute of the finalizer's removal")
	}
	if n := len(e.objects(t, chaosmesh.NetworkChaos)); n != 0 {
		t.Errorf("%d objects left", n)
	}
}

// TestContainerKillRevertWaitsForTheOwner: chaosmesh.container_kill is
// instantaneous: its revert deletes the object and then waits until the
// pods' owner has as many Ready pods as before. Here the kill's effect is
// a pod deleted (what Chaos Mesh's kill of the only container does to a
// pod without restarts), and the revert returns once the ReplicaSet has
// brought a replacement to Ready.
func TestContainerKillRevertWaitsForTheOwner(t *testing.T) {
	e := newEnv(t, true)
	chaosmeshtest.Install(t, e.c.Config())
	e.deployment(t, "vllm", 2, nil)
	f := e.build(t, chaosmesh.TypeContainerKill, "kill", map[string]any{"selector": "app=vllm", "container_names": []any{"vllm"}, "back_timeout": "90s"}, faults.BuildEnv{Seed: 5})
	undo, err := f.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	objs := e.objects(t, chaosmesh.PodChaos)
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	victim := nested(t, objs[0].Object, "spec", "selector", "pods", e.ns).([]any)[0].(string)
	zero := int64(0)
	if err := e.core.CoreV1().Pods(e.ns).Delete(t.Context(), victim, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// Undo right away: the victim is gone or being deleted, and its
	// replacement not Ready yet, so Undo has to wait for the ReplicaSet.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := undo(ctx); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	list, err := e.core.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vllm"})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	ready := 0
	for i := range list.Items {
		p := &list.Items[i]
		pods = append(pods, p)
		if kube.PodReady(p) && p.Name != victim {
			ready++
		}
	}
	if ready != 2 {
		t.Errorf("Undo returned with %d Ready pods, want 2:%s", ready, k8stest.DescribePods(pods))
	}
	if n := len(e.objects(t, chaosmesh.PodChaos)); n != 0 {
		t.Errorf("%d objects left", n)
	}
}

// TestRecoverDeletesWhatACrashedRunLeft: a fault injected through a real
// journal by a run that then dies (the journal closed, no Undo) is
// reverted by faults.Recover with the family's reverters: the object is
// deleted and the journal shows nothing pending; a second Recover finds
// nothing to do.
func TestRecoverDeletesWhatACrashedRunLeft(t *testing.T) {
	e := newEnv(t, true)
	chaosmeshtest.Install(t, e.c.Config())
	e.pods(t, "vllm", 2, nil)
	dir := t.TempDir()
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := e.build(t, chaosmesh.TypeCPUStress, "cpu", map[string]any{"selector": "app=vllm", "select": map[string]any{"mode": "all"}}, faults.BuildEnv{})
	entry, err := j.Begin("cpu", chaosmesh.TypeCPUStress, "pods")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(t.Context(), entry); err != nil {
		t.Fatal(err)
	}
	if err := entry.Injected(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.objects(t, chaosmesh.StressChaos)); n != 1 {
		t.Fatalf("%d objects before recover, want 1", n)
	}
	rep, err := faults.Recover(t.Context(), dir, chaosmesh.Reverters())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(rep.Faults) != 1 || rep.Faults[0].Err != nil {
		t.Errorf("Recover report %+v, want one fault reverted", rep.Faults)
	}
	if n := len(e.objects(t, chaosmesh.StressChaos)); n != 0 {
		t.Errorf("%d objects after recover, want 0", n)
	}
	if left, err := faults.Pending(dir); err != nil || len(left) != 0 {
		t.Errorf("pending after recover: %+v (%v)", left, err)
	}
	rep, err = faults.Recover(t.Context(), dir, chaosmesh.Reverters())
	if err != nil || len(rep.Faults) != 0 {
		t.Errorf("second Recover: %+v, %v; want nothing to do", rep.Faults, err)
	}
}
