package replica

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// kubeFixture is a namespace of the test control plane with a Deployment
// of three kwok pods.
type kubeFixture struct {
	c    *k8stest.Cluster
	ns   string
	w    k8stest.Workload
	pods []*corev1.Pod
}

// newKubeFixture makes a namespace with a Deployment "sim" of three pods;
// optIn labels the pods (in their template) llmchaos.io/target=true.
func newKubeFixture(t *testing.T, optIn bool) *kubeFixture {
	t.Helper()
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 3, Labels: map[string]string{"app": "sim"}, Service: true}
	if optIn {
		w.PodLabels = map[string]string{OptInLabel: OptInLabelValue}
	}
	return &kubeFixture{c: c, ns: ns, w: w, pods: c.CreateWorkload(t, ns, w)}
}

func (f *kubeFixture) target() TargetParams {
	return TargetParams{Driver: DriverKubernetes, Namespace: f.ns, Selector: f.w.Selector(), Kubeconfig: f.c.Kubeconfig}
}

// waitPods waits until cond holds for the fixture's pods.
func (f *kubeFixture) waitPods(t *testing.T, what string, cond func([]*corev1.Pod) bool) []*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pods, err := kube.WaitPods(ctx, f.c.Client(t), f.ns, f.w.Selector(), cond)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return pods
}

func readyUIDs(pods []*corev1.Pod) []string {
	var uids []string
	for _, p := range pods {
		if kube.PodReady(p) {
			uids = append(uids, string(p.UID))
		}
	}
	return uids
}

// Pods that have not opted in are refused, naming them, and nothing is
// deleted; a namespace label opts in every pod of it.
func TestKubernetesRefusesPodsNotOptedIn(t *testing.T) {
	f := newKubeFixture(t, false)
	k, err := NewKill("kill", KillParams{Params: Params{Target: f.target()}, Via: ViaEngine}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	_, err = k.Inject(t.Context(), log)
	if !errors.Is(err, ErrNotOptedIn) {
		t.Fatalf("inject on pods without the label: %v, want ErrNotOptedIn", err)
	}
	for _, p := range f.pods {
		if !strings.Contains(err.Error(), p.Name) {
			t.Errorf("refusal %q does not name pod %s", err, p.Name)
		}
	}
	if !strings.Contains(err.Error(), "llmchaos.io/target=true") {
		t.Errorf("refusal %q does not say which label opts in", err)
	}
	if len(log.all()) != 0 {
		t.Errorf("journal: %v, want nothing written for a refused fault", log.all())
	}
	if _, err := Preview(t.Context(), f.target()); !errors.Is(err, ErrNotOptedIn) {
		t.Errorf("preview (dry run): %v, want ErrNotOptedIn", err)
	}
	if got := f.waitPods(t, "pods", func(ps []*corev1.Pod) bool { return len(ps) == 3 }); !slices.Equal(readyUIDs(got), readyUIDs(f.pods)) {
		t.Errorf("pods after a refusal: %s, want them untouched", kube.DescribePods(got))
	}

	f.c.LabelNamespace(t, f.ns, OptInLabel, OptInLabelValue)
	ts, err := Preview(t.Context(), f.target())
	if err != nil {
		t.Fatalf("preview with the namespace opted in: %v", err)
	}
	if len(ts) != 3 || !ts[0].Up || ts[0].Pod == nil || ts[0].Pod.OwnerKind != "ReplicaSet" || ts[0].Pod.ReadyPods != 3 {
		t.Errorf("targets = %+v, want the 3 Ready pods of a ReplicaSet", ts)
	}
}

// replica.kill deletes one pod with grace 0; its Undo returns once the
// ReplicaSet has three Ready pods again, the victim not counted, and the
// journal's spec reverts the same way without the fault (llmchaos
// recover). The watch reports the victim's end and the replacement's
// life, and the control plane's Events of them.
func TestKubernetesKillWaitsForReplacement(t *testing.T) {
	f := newKubeFixture(t, true)
	w, err := NewKubernetes(f.target())
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		evs []Event
	)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchReady, watchDone := make(chan struct{}), make(chan error, 1)
	go func() {
		watchDone <- w.Watch(watchCtx, func() { close(watchReady) }, func(e Event) {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		})
	}()
	select {
	case <-watchReady:
	case err := <-watchDone:
		t.Fatalf("watch: %v", err)
	}

	var applied []string
	k, err := NewKill("kill", KillParams{Params: Params{Target: f.target(), Select: faults.Selection{Mode: faults.SelectOne, MinAvailable: 2}}, Via: ViaEngine},
		testRand(1), OnApplied(func(tg Target) { applied = append(applied, tg.ID) }))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := k.Inject(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 1 {
		t.Fatalf("applied to %v, want one pod", applied)
	}
	victim := applied[0]
	specs := log.all()
	if len(specs) != 1 || specs[0].Kind != KindPodAwaitReady {
		t.Fatalf("journal = %v, want one %s spec", specs, KindPodAwaitReady)
	}
	var ps PodSpec
	if err := json.Unmarshal(specs[0].Data, &ps); err != nil {
		t.Fatal(err)
	}
	if ps.Pod.Name != victim || ps.Pod.ReadyPods != 3 || ps.GraceSeconds != 0 || ps.Selector != f.w.Selector() || ps.Kubeconfig != f.c.Kubeconfig {
		t.Errorf("journal spec = %+v, want pod %s, 3 Ready before, grace 0, the selector and the kubeconfig", ps, victim)
	}
	f.waitPods(t, "the victim deleted", func(ps []*corev1.Pod) bool {
		return !slices.ContainsFunc(ps, func(p *corev1.Pod) bool { return p.Name == victim })
	})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := undo(ctx); err != nil {
		t.Fatalf("undo: %v", err)
	}
	t.Logf("replacement Ready %v after the undo began", time.Since(start).Round(time.Millisecond))
	now := f.waitPods(t, "pods", func([]*corev1.Pod) bool { return true })
	if got := readyUIDs(now); len(got) < 3 || slices.Contains(got, ps.Pod.UID) {
		t.Errorf("after undo: %s, want 3 Ready pods without the victim", kube.DescribePods(now))
	}
	if err := undo(ctx); err != nil {
		t.Errorf("second undo: %v, want nil (idempotent)", err)
	}
	if err := Reverters()[KindPodAwaitReady](ctx, specs[0].Data); err != nil {
		t.Errorf("the journal's reverter: %v, want nil once the pods are back", err)
	}

	// The replacement's life and the control plane's Events of it.
	var replacement string
	for _, p := range now {
		if !slices.ContainsFunc(f.pods, func(o *corev1.Pod) bool { return o.Name == p.Name }) {
			replacement = p.Name
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	want := func(evs []Event) []string {
		var missing []string
		has := func(pod string, kind EventKind) bool {
			return slices.ContainsFunc(evs, func(e Event) bool { return e.Replica == pod && e.Kind == kind })
		}
		for _, w := range []struct {
			pod  string
			kind EventKind
		}{{victim, EventDeleted}, {replacement, EventCreated}, {replacement, EventScheduled}, {replacement, EventStart}, {replacement, EventHealthy}} {
			if !has(w.pod, w.kind) {
				missing = append(missing, w.pod+" "+string(w.kind))
			}
		}
		if !slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == "SuccessfulCreate" && strings.Contains(e.Detail, replacement) }) {
			missing = append(missing, "the ReplicaSet's SuccessfulCreate Event of "+replacement)
		}
		return missing
	}
	for {
		mu.Lock()
		missing, got := want(evs), slices.Clone(evs)
		mu.Unlock()
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events lack %v; got:\n%s", missing, eventLines(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopWatch()
	if err := <-watchDone; err != nil {
		t.Errorf("watch: %v", err)
	}
	mu.Lock()
	t.Logf("events:\n%s", eventLines(evs))
	mu.Unlock()
}

func eventLines(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

// min_available counts the Ready pods of the selector: a kill that would
// leave fewer is refused before any pod is touched.
func TestKubernetesMinAvailableRefuses(t *testing.T) {
	f := newKubeFixture(t, true)
	k, err := NewKill("kill", KillParams{Params: Params{Target: f.target(),
		Select: faults.Selection{Mode: faults.SelectCount, Value: 2, MinAvailable: 2}}}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	_, err = k.Inject(t.Context(), log)
	var serr *faults.SelectionError
	if !errors.As(err, &serr) || !errors.Is(err, faults.ErrMinAvailable) || serr.Up != 3 {
		t.Fatalf("inject: %v, want a min_available refusal counting 3 Ready pods", err)
	}
	if len(log.all()) != 0 {
		t.Errorf("journal: %v, want nothing", log.all())
	}
	got := f.waitPods(t, "pods", func(ps []*corev1.Pod) bool { return len(ps) == 3 })
	if !slices.Equal(readyUIDs(got), readyUIDs(f.pods)) {
		t.Errorf("pods after a refusal: %s, want them untouched", kube.DescribePods(got))
	}
}

// replica.stop deletes with the grace period; replica.restart rolls the
// Deployment out again (a new restartedAt in its template): every pod is
// replaced and Undo returns once the rollout completed.
func TestKubernetesStopAndRestart(t *testing.T) {
	f := newKubeFixture(t, true)
	s, err := NewStop("stop", StopParams{Params: Params{Target: f.target()}, Grace: 1500 * time.Millisecond}, testRand(2))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := s.Inject(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	var ps PodSpec
	if err := json.Unmarshal(log.all()[0].Data, &ps); err != nil {
		t.Fatal(err)
	}
	if ps.Action != string(ActionStop) || ps.GraceSeconds != 2 {
		t.Errorf("stop spec = %+v, want action stop with grace 2s (rounded up)", ps)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := undo(ctx); err != nil {
		t.Fatalf("stop undo: %v", err)
	}

	before := f.waitPods(t, "3 Ready", func(ps []*corev1.Pod) bool { return len(readyUIDs(ps)) == 3 && len(ps) == 3 })
	r, err := NewRestart("restart", RestartParams{Params: Params{Target: f.target(), Select: faults.Selection{Mode: faults.SelectAll}}}, testRand(3))
	if err != nil {
		t.Fatal(err)
	}
	log = &recLog{}
	undo, err = r.Inject(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	specs := log.all()
	if len(specs) != 1 || specs[0].Kind != KindRolloutAwait {
		t.Fatalf("journal = %v, want one %s spec for the Deployment of the 3 pods picked", specs, KindRolloutAwait)
	}
	d, err := f.c.Client(t).AppsV1().Deployments(f.ns).Get(ctx, "sim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Annotations[RestartedAtAnnotation] == "" {
		t.Errorf("deployment template annotations = %v, want %s", d.Spec.Template.Annotations, RestartedAtAnnotation)
	}
	if err := undo(ctx); err != nil {
		t.Fatalf("restart undo: %v", err)
	}
	after := f.waitPods(t, "pods", func([]*corev1.Pod) bool { return true })
	old := readyUIDs(before)
	if ready := readyUIDs(after); len(ready) != 3 || slices.ContainsFunc(ready, func(u string) bool { return slices.Contains(old, u) }) {
		t.Errorf("after the restart's undo: %s, want 3 Ready pods, all new", kube.DescribePods(after))
	}
	if err := Reverters()[KindRolloutAwait](ctx, specs[0].Data); err != nil {
		t.Errorf("the journal's reverter after the rollout: %v", err)
	}
}

// A kill whose pods do not come back fails its revert, saying what it
// waited for and what it saw; a controller that is gone counts as reverted.
func TestKubernetesAwaitReadyFailsWhenNotBack(t *testing.T) {
	f := newKubeFixture(t, true)
	client := f.c.Client(t)
	victim := f.pods[0]
	spec := PodSpec{Kubeconfig: f.c.Kubeconfig, Selector: f.w.Selector(), Action: "kill", Timeout: 2 * time.Second,
		Pod: PodRef{Namespace: f.ns, Name: victim.Name, UID: string(victim.UID), OwnerKind: "ReplicaSet",
			OwnerName: metav1.GetControllerOf(victim).Name, ReadyPods: 4}}
	data, _ := json.Marshal(spec)
	err := revertPodAwaitReady(t.Context(), data)
	if err == nil || !strings.Contains(err.Error(), "back to 4 within 2s") || !strings.Contains(err.Error(), "ReplicaSet "+spec.Pod.OwnerName) {
		t.Errorf("revert with 4 wanted and 3 Ready: %v, want an error saying what it waited for", err)
	}

	policy := metav1.DeletePropagationBackground
	if err := client.AppsV1().Deployments(f.ns).Delete(t.Context(), "sim", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	f.waitPods(t, "the pods gone with their Deployment", func(ps []*corev1.Pod) bool { return len(ps) == 0 })
	if err := revertPodAwaitReady(t.Context(), data); err != nil {
		t.Errorf("revert with the controller gone: %v, want nil", err)
	}
}
