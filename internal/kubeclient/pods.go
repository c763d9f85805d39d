package kubeclient

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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

// PodsListWatch lists and watches the pods of namespace ns that match the
// label selector.
func PodsListWatch(client kubernetes.Interface, ns, selector string) cache.ListerWatcher {
	return cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "pods", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
}

// WaitPods watches the pods of namespace ns that match selector until cond
// holds for them (copies, sorted by name; cond sees every change and must
// not keep them) and returns them. When ctx ends first, the error says so
// with the last error of the watch, if any, and the pods last seen are
// returned with it.
func WaitPods(ctx context.Context, client kubernetes.Interface, ns, selector string, cond func([]*corev1.Pod) bool) ([]*corev1.Pod, error) {
	var last []*corev1.Pod
	out := watchLoop(ctx, PodsListWatch(client, ns, selector), &corev1.Pod{}, nil, func(pods []*corev1.Pod) bool {
		last = pods
		return cond(pods)
	})
	if out.done {
		return last, nil
	}
	err := fmt.Errorf("pods %q in %s: %w", selector, ns, context.Cause(ctx))
	if !out.synced {
		err = fmt.Errorf("pods %q in %s: no list before the deadline: %w", selector, ns, context.Cause(ctx))
	}
	if out.lastErr != nil {
		err = fmt.Errorf("%w (last error: %w)", err, out.lastErr)
	}
	return last, err
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
