package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
	"github.com/llmchaos/llmchaos/internal/kube/api/validation"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// RestartedAtAnnotation is the pod template annotation a rollout restart
// sets, as `kubectl rollout restart` does: a new value is a new template,
// so the controller replaces every pod.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// Kubernetes is the kubernetes driver: replicas are the pods a label
// selector matches in a namespace, acted on through the Kubernetes API. A
// kill deletes a pod with grace 0 (its containers get SIGKILL), a stop
// deletes it with the action's grace (SIGTERM, the grace, SIGKILL), and in
// both cases its controller (a ReplicaSet, a StatefulSet) is what brings
// the replica back: Undo waits until as many pods of the selector are
// Ready as before, counting only others than the one deleted. A restart
// is a rollout restart of the pod's Deployment, StatefulSet or DaemonSet
// (all its pods are replaced, a few at a time, as its strategy says);
// Undo waits for the rollout to complete.
//
// Only pods that opt in are ever touched: the pod, or its namespace,
// carries the label llmchaos.io/target=true. A target that matches any
// other pod is refused as a whole, naming it; so is one that matches a pod
// no controller owns (nothing would bring it back).
//
// The cluster is the one of the target's kubeconfig and context
// (kube.Connect); a client is made for each call.
type Kubernetes struct {
	t TargetParams

	mu sync.Mutex
	// restarted holds the Undo of each controller this driver restarted,
	// so that two pods of one Deployment picked by one fault restart it
	// once.
	restarted map[string]faults.Undo
}

var (
	_ Driver  = (*Kubernetes)(nil)
	_ Watcher = (*Kubernetes)(nil)
)

// NewKubernetes returns the kubernetes driver of t, which must be valid and
// name the kubernetes driver. It connects to nothing yet.
func NewKubernetes(t TargetParams) (*Kubernetes, error) {
	t = t.WithDefaults()
	if t.Driver != DriverKubernetes {
		return nil, fmt.Errorf("kubernetes driver: target names driver %q", t.Driver)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes driver: %w", err)
	}
	return &Kubernetes{t: t, restarted: map[string]faults.Undo{}}, nil
}

// connect returns a client of the target's cluster and the pods' namespace.
func (k *Kubernetes) connect() (*kube.Cluster, string, error) {
	cl, err := kube.Connect(k.t.Kubeconfig, k.t.Context)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes driver: %w", err)
	}
	return cl, cl.NamespaceOr(k.t.Namespace), nil
}

// Targets lists the pods the selector matches in the namespace, by name,
// each up when it is Ready (kube.PodReady). It fails, naming them, if
// any of them has not opted in (the label llmchaos.io/target=true on the
// pod or on its namespace) or has no controller to bring it back.
func (k *Kubernetes) Targets(ctx context.Context) ([]Target, error) {
	cl, ns, err := k.connect()
	if err != nil {
		return nil, err
	}
	list, err := cl.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k.t.Selector})
	if err != nil {
		return nil, fmt.Errorf("kubernetes driver: list pods %q in %s (%s): %w", k.t.Selector, ns, cl.Source, err)
	}
	nsOptIn, nsNote := namespaceOptedIn(ctx, cl, ns)
	ready := 0
	for i := range list.Items {
		if kube.PodReady(&list.Items[i]) {
			ready++
		}
	}
	var (
		ts      []Target
		refused []error
	)
	for i := range list.Items {
		p := &list.Items[i]
		if !kube.OptedIn(p.Labels) && !nsOptIn {
			refused = append(refused, fmt.Errorf("pod %s/%s matches %q but neither it nor its namespace carries the label %s=%s%s: %w; label the pods (in their template) or the namespace to let llmchaos act on them",
				ns, p.Name, k.t.Selector, OptInLabel, OptInLabelValue, nsNote, ErrNotOptedIn))
			continue
		}
		owner := metav1.GetControllerOf(p)
		if owner == nil {
			refused = append(refused, fmt.Errorf("pod %s/%s has no controller (a ReplicaSet, StatefulSet, ...) that would bring it back: llmchaos acts only on pods that their owner replaces", ns, p.Name))
			continue
		}
		ts = append(ts, Target{
			ID:    p.Name,
			Up:    kube.PodReady(p),
			Index: -1,
			Pod: &PodRef{Namespace: ns, Name: p.Name, UID: string(p.UID),
				OwnerKind: owner.Kind, OwnerName: owner.Name, ReadyPods: ready},
			Detail: podDetail(p),
		})
	}
	if err := errors.Join(refused...); err != nil {
		return nil, fmt.Errorf("kubernetes driver: refused: %w", err)
	}
	slices.SortFunc(ts, func(a, b Target) int { return strings.Compare(a.ID, b.ID) })
	return ts, nil
}

// namespaceOptedIn reports whether namespace ns carries the opt-in label;
// when it cannot be read, the note says so for the refusal's message.
func namespaceOptedIn(ctx context.Context, cl *kube.Cluster, ns string) (bool, string) {
	ok, err := kube.NamespaceOptedIn(ctx, cl.Client, ns)
	if err != nil {
		return false, fmt.Sprintf(" (the namespace's labels could not be read: %v)", err)
	}
	return ok, ""
}

// podDetail says where a pod runs and in what state.
func podDetail(p *corev1.Pod) string {
	state := string(p.Status.Phase)
	switch {
	case p.DeletionTimestamp != nil:
		state = "terminating"
	case kube.PodReady(p):
		state = "Running, Ready"
	case p.Status.Phase == corev1.PodRunning:
		state = "Running, not Ready"
	}
	parts := []string{}
	if p.Status.PodIP != "" {
		parts = append(parts, "ip "+p.Status.PodIP)
	}
	if p.Spec.NodeName != "" {
		parts = append(parts, "node "+p.Spec.NodeName)
	}
	if o := metav1.GetControllerOf(p); o != nil {
		parts = append(parts, strings.ToLower(o.Kind)+" "+o.Name)
	}
	return strings.Join(append(parts, state), ", ")
}

// PodSpec is the data of a KindPodAwaitReady spec: a pod that was deleted
// (killed or stopped), and how to see its controller bring the Ready pods
// back without the runner.
type PodSpec struct {
	// Kubeconfig and Context say which cluster ("" : as kube.Connect).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	// Selector selects the pods whose Ready count is awaited.
	Selector string `json:"selector"`
	// Pod is the pod deleted, with the Ready count before.
	Pod PodRef `json:"pod"`
	// Action is kill or stop; GraceSeconds the deletion's grace.
	Action       string `json:"action"`
	GraceSeconds int64  `json:"grace_seconds"`
	// InPlace is set for a kill of the pod's containers (not a deletion):
	// the pod itself may come back Ready, once its containers' restart
	// count is above RestartsBefore.
	InPlace        bool  `json:"in_place,omitempty"`
	RestartsBefore int32 `json:"restarts_before,omitempty"`
	// Timeout bounds the wait (DefaultBackTimeout when zero).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// RolloutSpec is the data of a KindRolloutAwait spec: a controller whose
// pods were restarted, and how to see its rollout complete.
type RolloutSpec struct {
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	// Namespace, Kind (Deployment, StatefulSet, DaemonSet) and Name name
	// the controller.
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// Pod is the pod picked, for messages.
	Pod string `json:"pod,omitempty"`
	// Timeout bounds the wait (DefaultBackTimeout when zero).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Apply acts on the pod t. A kill or stop is journaled as a
// KindPodAwaitReady spec first. A kill (via process, the default) sends
// SIGKILL to the processes of the pod's containers from a pod on its node
// (killContainers); the kubelet restarts them. A stop, or a kill via
// engine, deletes the pod (grace 0 for a kill, which the kubelet turns
// into SIGTERM and its minimum grace of 2 s; the action's grace rounded up
// to whole seconds for a stop) on the condition that it is still the pod
// listed (its uid); Undo waits until its controller has as many pods
// Ready as before. A restart is journaled as a
// KindRolloutAwait spec, then the pod's Deployment, StatefulSet or
// DaemonSet gets a new restartedAt annotation in its pod template; Undo
// waits for the rollout to complete. Pause is not possible: a pod cannot be
// frozen through the API.
func (k *Kubernetes) Apply(ctx context.Context, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	if t.Pod == nil {
		return nil, fmt.Errorf("kubernetes driver: target %s is not a pod", t.ID)
	}
	cl, _, err := k.connect()
	if err != nil {
		return nil, err
	}
	switch a.Kind {
	case ActionKill:
		if a.Via == ViaEngine {
			return k.deletePod(ctx, cl, log, t, a)
		}
		return k.killContainers(ctx, cl, log, t, a)
	case ActionStop:
		return k.deletePod(ctx, cl, log, t, a)
	case ActionRestart:
		return k.restart(ctx, cl, log, t, a)
	case ActionPause:
		return nil, errors.New("kubernetes driver: a pod cannot be paused through the Kubernetes API; use replica.stop, or Chaos Mesh's PodChaos")
	}
	return nil, fmt.Errorf("kubernetes driver: unknown action %q", a.Kind)
}

// deletePod kills or stops the pod t.
func (k *Kubernetes) deletePod(ctx context.Context, cl *kube.Cluster, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	spec := PodSpec{Kubeconfig: k.t.Kubeconfig, Context: k.t.Context, Selector: k.t.Selector, Pod: *t.Pod,
		Action: string(a.Kind), Timeout: a.Timeout}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultBackTimeout
	}
	if a.Kind == ActionStop {
		spec.GraceSeconds = int64(graceSeconds(a.Grace))
	}
	if _, err := journal(log, KindPodAwaitReady, spec, spec.Action, t.ID); err != nil {
		return nil, err
	}
	uid := types.UID(t.Pod.UID)
	err := cl.Client.CoreV1().Pods(t.Pod.Namespace).Delete(ctx, t.Pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &spec.GraceSeconds,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil, fmt.Errorf("pod %s/%s (uid %s) is gone: %w", t.Pod.Namespace, t.Pod.Name, t.Pod.UID, ErrGone)
	case err != nil:
		return nil, fmt.Errorf("delete pod %s/%s: %w", t.Pod.Namespace, t.Pod.Name, err)
	}
	return func(ctx context.Context) error { return awaitReady(ctx, cl, spec) }, nil
}

// restart rolls out the pod t's controller again, once per controller.
func (k *Kubernetes) restart(ctx context.Context, cl *kube.Cluster, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	kind, name, err := rolloutOwner(ctx, cl, t.Pod)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	key := t.Pod.Namespace + "/" + kind + "/" + name
	if undo, ok := k.restarted[key]; ok {
		return undo, nil
	}
	spec := RolloutSpec{Kubeconfig: k.t.Kubeconfig, Context: k.t.Context, Namespace: t.Pod.Namespace, Kind: kind, Name: name,
		Pod: t.Pod.Name, Timeout: a.Timeout}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultBackTimeout
	}
	if _, err := journal(log, KindRolloutAwait, spec, "restart", kind+" "+name); err != nil {
		return nil, err
	}
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`,
		RestartedAtAnnotation, time.Now().Format(time.RFC3339Nano))
	apps := cl.Client.AppsV1()
	opts := metav1.PatchOptions{FieldManager: "llmchaos"}
	switch kind {
	case "Deployment":
		_, err = apps.Deployments(spec.Namespace).Patch(ctx, name, types.MergePatchType, patch, opts)
	case "StatefulSet":
		_, err = apps.StatefulSets(spec.Namespace).Patch(ctx, name, types.MergePatchType, patch, opts)
	case "DaemonSet":
		_, err = apps.DaemonSets(spec.Namespace).Patch(ctx, name, types.MergePatchType, patch, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("rollout restart of %s %s/%s: %w", kind, spec.Namespace, name, err)
	}
	undo := faults.JoinUndos([]faults.Undo{func(ctx context.Context) error { return awaitRollout(ctx, cl, spec) }})
	k.restarted[key] = undo
	return undo, nil
}

// rolloutOwner returns the controller a rollout restart of pod acts on: its
// StatefulSet or DaemonSet, or the Deployment of its ReplicaSet.
func rolloutOwner(ctx context.Context, cl *kube.Cluster, pod *PodRef) (kind, name string, err error) {
	switch pod.OwnerKind {
	case "StatefulSet", "DaemonSet":
		return pod.OwnerKind, pod.OwnerName, nil
	case "ReplicaSet":
		rs, err := cl.Client.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, pod.OwnerName, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("pod %s: its ReplicaSet %s: %w", pod.Name, pod.OwnerName, err)
		}
		if o := metav1.GetControllerOf(rs); o != nil && o.Kind == "Deployment" {
			return o.Kind, o.Name, nil
		}
	}
	return "", "", fmt.Errorf("pod %s: a rollout restart needs a Deployment, StatefulSet or DaemonSet, and its controller is %s %s; use replica.kill or replica.stop",
		pod.Name, pod.OwnerKind, pod.OwnerName)
}

// kubernetesTargetProblems checks the kubernetes driver's fields of t.
func kubernetesTargetProblems(t TargetParams) field.Problems {
	var ps field.Problems
	switch sel := strings.TrimSpace(t.Selector); {
	case sel == "":
		ps.AddNamed("target", ": the kubernetes driver needs a selector, the pods' labels (e.g. app=vllm)")
	default:
		if s, err := labels.Parse(sel); err != nil {
			ps.AddNamed("target.selector", ": %q: %w", t.Selector, err)
		} else if s.Empty() {
			ps.AddNamed("target.selector", ": %q selects every pod of the namespace: name the serving pods' labels", t.Selector)
		}
	}
	if t.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(t.Namespace) {
			ps.AddNamed("target.namespace", ": %q: %s", t.Namespace, m)
		}
	}
	return ps
}

// PodRef names a pod the kubernetes driver found, and what it needs to act
// on it and to see it replaced.
type PodRef struct {
	// Namespace, Name and UID name the pod; UID guards against acting on
	// a pod that took the name of the one listed.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// OwnerKind and OwnerName are the controller that brings it back (a
	// ReplicaSet, StatefulSet, ...).
	OwnerKind string `json:"owner_kind,omitempty"`
	OwnerName string `json:"owner_name,omitempty"`
	// ReadyPods is how many pods of the target's selector were Ready when
	// the pod was listed: the count a kill's revert waits to see again.
	ReadyPods int `json:"ready_pods"`
}
