package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Ready reports whether pod is Running, Ready and not being deleted: a
// replica that serves.
func Ready(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
func (t PodTarget) Problems() []error {
	var errs []error
	if t.Namespace == "" {
		errs = append(errs, errors.New("namespace: required: the namespace of the target pods"))
	}
	switch sel, err := labels.Parse(t.Selector); {
	case t.Selector == "":
		errs = append(errs, errors.New("selector: required: a label selector of the target pods, e.g. app=vllm (an empty one would match every pod)"))
	case err != nil:
		errs = append(errs, fmt.Errorf("selector: %q: %w", t.Selector, err))
	case sel.Empty():
		errs = append(errs, fmt.Errorf("selector: %q selects every pod; name the target's labels", t.Selector))
	}
	return errs
}

// Pods lists the pods of t, sorted by name. Pods llmchaos made itself
// (labelled app.kubernetes.io/managed-by=llmchaos: GPU balloons, load
// shards) are left out even when the selector matches them, so that no
// fault ever picks its own helpers.
func (t PodTarget) Pods(ctx context.Context, client kubernetes.Interface) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{LabelSelector: t.Selector})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t, err)
	}
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.Labels[LabelManagedBy] == ManagedBy })
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// ErrNotOptedIn is wrapped by the error of CheckOptIn when a pod is not
// opted in.
var ErrNotOptedIn = errors.New("not opted in")

// CheckOptIn returns nil when every pod of pods may be acted on: it, or
// namespace ns that holds it, is labelled llmchaos.io/target=true. It reads
// the namespace only when some pod is not labelled itself (a Role bound in
// the namespace may not read namespaces). The error names the pods refused
// and says how to opt them in.
func CheckOptIn(ctx context.Context, client kubernetes.Interface, ns string, pods []corev1.Pod) error {
	var out []string
	for _, p := range pods {
		if p.Labels[LabelTarget] != "true" {
			out = append(out, p.Name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	n, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil && n.Labels[LabelTarget] == "true":
		return nil
	case err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err):
		return fmt.Errorf("check that namespace %s opted in (label %s=true): %w", ns, LabelTarget, err)
	}
	return fmt.Errorf("refused: pod(s) %s in namespace %s: %w: llmchaos acts only on pods labelled %s=true or in a namespace labelled so (kubectl label namespace %s %s=true)",
		strings.Join(out, ", "), ns, ErrNotOptedIn, LabelTarget, ns, LabelTarget)
}
