package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
)

// PodReady reports whether pod serves: Running, with condition Ready true
// and an IP, and not being deleted. It is what a Service's EndpointSlices
// count as a ready endpoint, and what min_available counts.
func PodReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CountReady returns how many of pods are PodReady.
func CountReady(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if PodReady(p) {
			n++
		}
	}
	return n
}

// DescribePods names pods with their state, for messages: "a (ready), b
// (Pending)".
func DescribePods(pods []*corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	parts := make([]string, len(pods))
	for i, p := range pods {
		state := string(p.Status.Phase)
		switch {
		case p.DeletionTimestamp != nil:
			state = "terminating"
		case PodReady(p):
			state = "ready"
		case p.Status.Phase == corev1.PodRunning:
			state = "running, not ready"
		}
		parts[i] = p.Name + " (" + state + ")"
	}
	return strings.Join(parts, ", ")
}

// PodsListWatch lists and watches the pods of namespace ns that match the
// label selector.
func PodsListWatch(client *Clientset, ns, selector string) cache.ListerWatcher {
	return client.CoreV1().Pods(ns).ListWatch(func(o *metav1.ListOptions) { o.LabelSelector = selector })
}

// PodTarget names the pods a fault acts on: those of Namespace that match
// the label Selector.
type PodTarget struct {
	// Namespace holds the pods.
	Namespace string `json:"namespace" yaml:"namespace" doc:"namespace of the target pods"`
	// Selector is a label selector, as kubectl's -l (app=vllm).
	Selector string `json:"selector" yaml:"selector" doc:"label selector of the target pods, e.g. app=vllm"`
}

// String describes t for errors and the run's record.
func (t PodTarget) String() string {
	return fmt.Sprintf("pods %s in namespace %s", t.Selector, t.Namespace)
}

// Problems reports what is wrong with t, each message starting with its key.
func (t PodTarget) Problems() field.Problems {
	var ps field.Problems
	if t.Namespace == "" {
		ps.AddNamed("namespace", ": required: the namespace of the target pods")
	}
	switch sel, err := labels.Parse(t.Selector); {
	case t.Selector == "":
		ps.AddNamed("selector", ": required: a label selector of the target pods, e.g. app=vllm (an empty one would match every pod)")
	case err != nil:
		ps.AddNamed("selector", ": %q: %w", t.Selector, err)
	case sel.Empty():
		ps.AddNamed("selector", ": %q selects every pod; name the target's labels", t.Selector)
	}
	return ps
}

// Pods lists the pods of t, sorted by name. Pods llmchaos made itself
// (labelled app.kubernetes.io/managed-by=llmchaos: GPU balloons, load
// shards) are left out even when the selector matches them, so that no
// fault ever picks its own helpers.
func (t PodTarget) Pods(ctx context.Context, client *Clientset) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{LabelSelector: t.Selector})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t, err)
	}
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return Managed(&p) })
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// Wait watches the pods of t (as Pods lists them: llmchaos's own left out)
// until cond holds for them, as WaitPods.
func (t PodTarget) Wait(ctx context.Context, client *Clientset, cond func([]*corev1.Pod) bool) ([]*corev1.Pod, error) {
	return WaitPods(ctx, client, t.Namespace, t.Selector, func(pods []*corev1.Pod) bool {
		return cond(slices.DeleteFunc(pods, Managed))
	})
}

// Managed reports whether llmchaos made pod (it is labelled
// app.kubernetes.io/managed-by=llmchaos).
func Managed(pod *corev1.Pod) bool { return pod.Labels[LabelManagedBy] == ManagedBy }

// ErrNotOptedIn is wrapped by the error of CheckOptIn when a pod is not
// opted in.
var ErrNotOptedIn = errors.New("not opted in")

// OptedIn reports whether an object's labels opt it in: LabelTarget=true.
func OptedIn(labels map[string]string) bool { return labels[LabelTarget] == "true" }

// NamespaceOptedIn reads namespace ns and reports whether it is labelled
// llmchaos.io/target=true.
func NamespaceOptedIn(ctx context.Context, client *Clientset, ns string) (bool, error) {
	n, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return OptedIn(n.Labels), nil
}

// CheckOptIn returns nil when every pod of pods may be acted on: it, or
// namespace ns that holds it, is labelled llmchaos.io/target=true. It reads
// the namespace only when some pod is not labelled itself (a Role bound in
// the namespace may not read namespaces). The error names the pods refused
// and says how to opt them in.
func CheckOptIn(ctx context.Context, client *Clientset, ns string, pods []corev1.Pod) error {
	var out []string
	for _, p := range pods {
		if !OptedIn(p.Labels) {
			out = append(out, p.Name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	switch ok, err := NamespaceOptedIn(ctx, client, ns); {
	case err == nil && ok:
		return nil
	case err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err):
		return fmt.Errorf("check that namespace %s opted in (label %s=true): %w", ns, LabelTarget, err)
	}
	return fmt.Errorf("refused: pod(s) %s in namespace %s: %w: llmchaos acts only on pods labelled %s=true or in a namespace labelled so (kubectl label namespace %s %s=true)",
		strings.Join(out, ", "), ns, ErrNotOptedIn, LabelTarget, ns, LabelTarget)
}
