package gpupod_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	nodev1 "k8s.io/api/node/v1"
	k8sapierrors "k8s.io/apimachinery/pkg/api/errors"
	k8smetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/gpupod"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/resource"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// env is one test's cluster, opted-in namespace and client.
type env struct {
	c    *k8stest.Cluster
	ns   string
	core *kube.Clientset
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := k8stest.Start(t)
	e := &env{c: c, ns: c.Namespace(t), core: c.Client(t)}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, kube.LabelTarget)
	if _, err := e.core.CoreV1().Namespaces().Patch(t.Context(), e.ns, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// servers creates n "vllm" pods that each ask for one GPU, in runtime
// class nvidia and tolerating the GPU taint, and waits until they run.
func (e *env) servers(t *testing.T, n int) []*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, err := e.c.Clientset(t).NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: k8smetav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"}, k8smetav1.CreateOptions{})
	if err != nil && !k8sapierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rc := "nvidia"
	for i := range n {
		_, err := e.core.CoreV1().Pods(e.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vllm-%d", i), Labels: map[string]string{"app": "vllm"}},
			Spec: corev1.PodSpec{
				NodeSelector:     map[string]string{"type": "kwok"},
				RuntimeClassName: &rc,
				Tolerations:      []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	pods, err := k8stest.WaitPods(ctx, e.core, e.ns, "app=vllm", func(pods []*corev1.Pod) bool {
		return len(pods) == n && !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return !kube.PodReady(p) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// build builds gpupod.memory_pressure from params as an experiment file
// gives them, with the cluster's kubeconfig and the namespace added.
func (e *env) build(t *testing.T, params map[string]any, benv faults.BuildEnv) faults.Fault {
	t.Helper()
	ft := spec.FaultTypes()[gpupod.TypeMemoryPressure]
	p := map[string]any{"kubeconfig": e.c.Kubeconfig, "namespace": e.ns, "selector": "app=vllm", "image": "llmchaos:cuda"}
	for k, v := range params {
		p[k] = v
	}
	v, err := spec.DecodeParams(0, spec.Fault{Name: "squeeze", Type: ft.Name, Params: p}, ft, nil)
	if err != nil {
		t.Fatal(err)
	}
	if benv.Name == "" {
		benv.Name = "squeeze"
	}
	f, err := ft.Build(benv, v)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// balloons lists the test namespace's balloon pods.
func (e *env) balloons(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := e.core.CoreV1().Pods(e.ns).List(t.Context(), metav1.ListOptions{LabelSelector: gpupod.LabelBalloonFor})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// aheadLog records specs and checks that the pod each names does not exist
// yet when it is recorded.
type aheadLog struct {
	core  *kube.Clientset
	mu    sync.Mutex
	refs  []gpupod.PodRef
	early []string
}

func (l *aheadLog) Will(s faults.RevertSpec) error {
	if s.Kind != gpupod.KindPod {
		return fmt.Errorf("spec kind %q, want %q", s.Kind, gpupod.KindPod)
	}
	var r gpupod.PodRef
	if err := json.Unmarshal(s.Data, &r); err != nil {
		return err
	}
	_, err := l.core.CoreV1().Pods(r.Namespace).Get(context.Background(), r.Name, metav1.GetOptions{})
	l.mu.Lock()
	defer l.mu.Unlock()
	if !apierrors.IsNotFound(err) {
		l.early = append(l.early, r.Name)
	}
	l.refs = append(l.refs, r)
	return nil
}

// TestBalloonPodsRunOnTheTargetsNodes: with the device plugin's resource,
// every picked target pod gets a balloon pod on its own node that asks for
// one nvidia.com/gpu (the kwok nodes report 8), runs gpu-balloon with the
// CUDA backend on the one GPU it sees, shares the target's runtime class
// and tolerations, runs as non-root with nothing writable, carries the
// run's labels and is not a target itself; its name is journaled before
// it exists; Undo deletes it.
func TestBalloonPodsRunOnTheTargetsNodes(t *testing.T) {
	e := newEnv(t)
	servers := e.servers(t, 2)
	var applied []string
	f := e.build(t, map[string]any{"select": map[string]any{"mode": "all"}, "leave_free_gib": 2},
		faults.BuildEnv{RunID: "r1", OnApplied: func(s string) { applied = append(applied, s) }})
	log := &aheadLog{core: e.core}
	undo, err := f.Inject(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.refs) != 2 || len(log.early) > 0 {
		t.Errorf("journal %+v (recorded after creation: %v), want 2 balloons recorded first", log.refs, log.early)
	}
	balloons := e.balloons(t)
	if len(balloons) != 2 {
		t.Fatalf("%d balloon pods, want 2", len(balloons))
	}
	nodeOf := map[string]string{}
	for _, s := range servers {
		nodeOf[s.Name] = s.Spec.NodeName
	}
	for _, b := range balloons {
		target := b.Labels[gpupod.LabelBalloonFor]
		if b.Spec.NodeName == "" || b.Spec.NodeName != nodeOf[target] {
			t.Errorf("balloon %s for %s is on node %q, want the target's %q", b.Name, target, b.Spec.NodeName, nodeOf[target])
		}
		c := b.Spec.Containers[0]
		if got := c.Resources.Limits["nvidia.com/gpu"]; got.String() != "1" {
			t.Errorf("balloon %s limits %v, want one nvidia.com/gpu", b.Name, c.Resources.Limits)
		}
		if want := []string{"gpu-balloon", "--backend", "cuda", "--gpu", "0", "--ready-file", "/run/llmchaos/holding", "--leave-free-gib", "2", "--grow"}; !slices.Equal(c.Args, want) {
			t.Errorf("balloon args %q, want %q", c.Args, want)
		}
		// Ready only while the memory is held: the probe checks the ready
		// file, in an emptyDir (the root file system is read-only).
		if p := c.ReadinessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"/llmchaos", "gpu-balloon", "is-holding", "/run/llmchaos/holding"}) {
			t.Errorf("readiness probe %+v, want gpu-balloon is-holding on the ready file", p)
		}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/run/llmchaos" || len(b.Spec.Volumes) != 1 ||
			b.Spec.Volumes[0].Name != c.VolumeMounts[0].Name || b.Spec.Volumes[0].EmptyDir == nil {
			t.Errorf("volumes %+v, mounts %+v: want an emptyDir at /run/llmchaos", b.Spec.Volumes, c.VolumeMounts)
		}
		if c.Image != "llmchaos:cuda" {
			t.Errorf("image %q", c.Image)
		}
		if b.Spec.RuntimeClassName == nil || *b.Spec.RuntimeClassName != "nvidia" {
			t.Errorf("runtime class %v, want the target's nvidia", b.Spec.RuntimeClassName)
		}
		if len(b.Spec.Tolerations) == 0 || b.Spec.Tolerations[0].Key != "nvidia.com/gpu" {
			t.Errorf("tolerations %+v, want the target's", b.Spec.Tolerations)
		}
		if sc := c.SecurityContext; sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
			t.Errorf("container security context %+v", sc)
		}
		if b.Labels[kube.LabelRun] != "r1" || b.Labels[kube.LabelFault] != "squeeze" || b.Labels[kube.LabelManagedBy] != kube.ManagedBy {
			t.Errorf("labels %v", b.Labels)
		}
		if b.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("restart policy %s: a balloon that failed must not come back by itself", b.Spec.RestartPolicy)
		}
	}
	if len(applied) != 2 || !strings.Contains(applied[0], "on node kwok-node-") {
		t.Errorf("OnApplied %q", applied)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.balloons(t)); n != 0 {
		t.Errorf("%d balloons left after Undo", n)
	}
	if err := undo(ctx); err != nil {
		t.Errorf("second Undo: %v", err)
	}
}

// TestBalloonPinnedByVisibleDevices: with visible_devices the balloon asks
// the device plugin for nothing and sees the named GPU through
// NVIDIA_VISIBLE_DEVICES; a runtime class given in params wins.
func TestBalloonPinnedByVisibleDevices(t *testing.T) {
	e := newEnv(t)
	e.servers(t, 1)
	_, err := e.c.Clientset(t).NodeV1().RuntimeClasses().Create(t.Context(), &nodev1.RuntimeClass{ObjectMeta: k8smetav1.ObjectMeta{Name: "nvidia-cdi"}, Handler: "nvidia-cdi"}, k8smetav1.CreateOptions{})
	if err != nil && !k8sapierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	uuid := "GPU-4f0b6a5e-0d5a-4c6b-8e2a-3b1f7c9d2e11"
	f := e.build(t, map[string]any{"gib": 8.5, "visible_devices": uuid, "runtime_class": "nvidia-cdi"}, faults.BuildEnv{})
	undo, err := f.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := undo(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	b := e.balloons(t)
	if len(b) != 1 {
		t.Fatalf("%d balloons, want 1", len(b))
	}
	c := b[0].Spec.Containers[0]
	if len(c.Resources.Limits) != 0 {
		t.Errorf("limits %v, want none: the GPU is named", c.Resources.Limits)
	}
	if !slices.ContainsFunc(c.Env, func(v corev1.EnvVar) bool { return v.Name == "NVIDIA_VISIBLE_DEVICES" && v.Value == uuid }) {
		t.Errorf("env %+v lacks NVIDIA_VISIBLE_DEVICES=%s", c.Env, uuid)
	}
	if want := []string{"gpu-balloon", "--backend", "cuda", "--gpu", "0", "--ready-file", "/run/llmchaos/holding", "--gib", "8.5"}; !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if rc := b[0].Spec.RuntimeClassName; rc == nil || *rc != "nvidia-cdi" {
		t.Errorf("runtime class %v, want nvidia-cdi", rc)
	}
}

// TestBalloonThatEndsIsReported: a balloon that ends while the fault holds
// (here it fails with gpu-balloon's exit 4, too little memory free) is
// reported to OnHelperExit with the reason; Undo still deletes it.
func TestBalloonThatEndsIsReported(t *testing.T) {
	e := newEnv(t)
	e.servers(t, 1)
	exited := make(chan error, 1)
	f := e.build(t, map[string]any{"gib": 4}, faults.BuildEnv{OnHelperExit: func(err error) { exited <- err }})
	undo, err := f.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	b := e.balloons(t)
	if len(b) != 1 {
		t.Fatalf("%d balloons, want 1", len(b))
	}
	status := corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "balloon", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 4, Reason: "Error", Message: "gpu-balloon: 3.2 GiB free, 4 GiB asked"},
	}}}}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.core.CoreV1().Pods(e.ns).Patch(t.Context(), b[0].Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		for _, want := range []string{"ended: Failed", "exit 4: too little GPU memory free", "3.2 GiB free"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("OnHelperExit(%v): lacks %q", err, want)
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("OnHelperExit not called within a minute of the balloon's failure")
	}
	if err := undo(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.balloons(t)); n != 0 {
		t.Errorf("%d balloons left", n)
	}
}

// TestBalloonsAreNeverTargets: a selector that also matches llmchaos's
// own balloon pods does not pick them: a second fault over such a
// selector gets a balloon only for the server.
func TestBalloonsAreNeverTargets(t *testing.T) {
	e := newEnv(t)
	e.servers(t, 1)
	first := e.build(t, map[string]any{"gib": 1}, faults.BuildEnv{Name: "first"})
	undo1, err := first.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	defer undo1(context.Background())
	second := e.build(t, map[string]any{"gib": 1, "selector": "app in (vllm)", "select": map[string]any{"mode": "all"}}, faults.BuildEnv{Name: "second"})
	// Balloons carry no app label; make the selector match them too.
	all := e.build(t, map[string]any{"gib": 1, "selector": "!no-such-label", "select": map[string]any{"mode": "all"}}, faults.BuildEnv{Name: "all"})
	undo2, err := second.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	defer undo2(context.Background())
	undo3, err := all.Inject(t.Context(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	defer undo3(context.Background())
	for _, b := range e.balloons(t) {
		if !strings.HasPrefix(b.Labels[gpupod.LabelBalloonFor], "vllm-") {
			t.Errorf("balloon %s presses on %s, not on a server", b.Name, b.Labels[gpupod.LabelBalloonFor])
		}
	}
	if n := len(e.balloons(t)); n != 3 {
		t.Errorf("%d balloons, want 3 (one per fault)", n)
	}
}

// TestRecoverDeletesBalloons: a balloon left by a run that died is deleted
// by faults.Recover with the family's reverters.
func TestRecoverDeletesBalloons(t *testing.T) {
	e := newEnv(t)
	e.servers(t, 1)
	dir := t.TempDir()
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := j.Begin("squeeze", gpupod.TypeMemoryPressure, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(t, map[string]any{"gib": 1}, faults.BuildEnv{}).Inject(t.Context(), entry); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.balloons(t)); n != 1 {
		t.Fatalf("%d balloons, want 1", n)
	}
	rep, err := faults.Recover(t.Context(), dir, gpupod.Reverters())
	if err != nil || len(rep.Faults) != 1 {
		t.Fatalf("Recover: %+v, %v", rep.Faults, err)
	}
	if n := len(e.balloons(t)); n != 0 {
		t.Errorf("%d balloons after recover", n)
	}
}

// TestParamsReportEveryProblem checks the params' validation.
func TestParamsReportEveryProblem(t *testing.T) {
	ft := spec.FaultTypes()[gpupod.TypeMemoryPressure]
	p, err := spec.DecodeParams(0, spec.Fault{Name: "x", Type: ft.Name, Params: map[string]any{
		"namespace": "n", "selector": "a=b", "gib": 1, "leave_free_gib": 1, "start_timeout": "-1s",
	}}, ft, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = ft.Check(p).Err()
	want := []string{"image: required", "gib and leave_free_gib: give one", "start_timeout: -1s"}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, w) }) {
			t.Errorf("problems %q lack %q", got, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %q, want %d", got, len(want))
	}
}
