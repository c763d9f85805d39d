package k8stest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/discoveryv1"
)

// WaitPods is kube.WaitPods for tests: when ctx ends first, the error
// lists the pods last seen with their phase, readiness, IP and node.
func WaitPods(ctx context.Context, client *kube.Clientset, ns, selector string, cond func([]*corev1.Pod) bool) ([]*corev1.Pod, error) {
	pods, err := kube.WaitPods(ctx, client, ns, selector, cond)
	if err != nil {
		return pods, fmt.Errorf("%w; last seen: %s", err, DescribePods(pods))
	}
	return pods, nil
}

// WaitEndpointSlices watches the EndpointSlices of Service service in
// namespace ns until cond holds for them, and returns them (copies, sorted by
// name). When ctx ends first the error lists the addresses last seen.
func WaitEndpointSlices(ctx context.Context, client *kube.Clientset, ns, service string, cond func([]*discoveryv1.EndpointSlice) bool) ([]*discoveryv1.EndpointSlice, error) {
	eps, err := kube.WaitList(ctx, kube.EndpointSlicesListWatch(client, ns, service), cond)
	if err != nil {
		return eps, fmt.Errorf("endpointslices of service %s/%s: %w; last seen ready addresses: %v",
			ns, service, err, ReadyAddresses(eps))
	}
	return eps, nil
}

// ReadyAddresses returns the sorted addresses of the ready endpoints of eps.
func ReadyAddresses(eps []*discoveryv1.EndpointSlice) []string {
	var addrs []string
	for _, s := range eps {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				addrs = append(addrs, e.Addresses...)
			}
		}
	}
	slices.Sort(addrs)
	return addrs
}

// DescribePods says in one line per pod its name, phase, readiness, IP and
// node, for failure messages.
func DescribePods(pods []*corev1.Pod) string {
	if len(pods) == 0 {
		return "no pods"
	}
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s phase=%s ready=%t ip=%q node=%q deleting=%t",
			p.Name, p.Status.Phase, kube.PodReady(p), p.Status.PodIP, p.Spec.NodeName, p.DeletionTimestamp != nil)
	}
	return b.String()
}
