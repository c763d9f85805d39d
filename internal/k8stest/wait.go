package k8stest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// WaitPods watches the pods of namespace ns that match the label selector
// ("" for all) until cond holds for them, and returns them (copies, sorted
// by name). cond sees every change; it must not keep or change the pods.
// When ctx ends first the error lists the pods last seen.
func WaitPods(ctx context.Context, client kubernetes.Interface, ns, selector string, cond func([]*corev1.Pod) bool) ([]*corev1.Pod, error) {
	lw := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "pods", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	pods, err := waitList(ctx, lw, &corev1.Pod{}, cond)
	if err != nil {
		return pods, fmt.Errorf("pods %q in %s: %w; last seen: %s", selector, ns, err, DescribePods(pods))
	}
	return pods, nil
}

// WaitEndpointSlices watches the EndpointSlices of Service service in
// namespace ns until cond holds for them, and returns them (copies, sorted by
// name). When ctx ends first the error lists the addresses last seen.
func WaitEndpointSlices(ctx context.Context, client kubernetes.Interface, ns, service string, cond func([]*discoveryv1.EndpointSlice) bool) ([]*discoveryv1.EndpointSlice, error) {
	lw := cache.NewFilteredListWatchFromClient(client.DiscoveryV1().RESTClient(), "endpointslices", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = discoveryv1.LabelServiceName + "=" + service })
	eps, err := waitList(ctx, lw, &discoveryv1.EndpointSlice{}, cond)
	if err != nil {
		return eps, fmt.Errorf("endpointslices of service %s/%s: %w; last seen ready addresses: %v",
			ns, service, err, ReadyAddresses(eps))
	}
	return eps, nil
}

// RunningReady reports whether pod is Running with condition Ready true and
// has an IP, and is not being deleted.
func RunningReady(pod *corev1.Pod) bool {
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
			p.Name, p.Status.Phase, RunningReady(p), p.Status.PodIP, p.Spec.NodeName, p.DeletionTimestamp != nil)
	}
	return b.String()
}

// waitList runs an informer over lw and evaluates cond on the informer's
// store after its first list and after every change, until cond holds or
// ctx ends. It returns copies of the objects, sorted by namespace/name.
func waitList[T runtime.Object](ctx context.Context, lw cache.ListerWatcher, example T, cond func([]T) bool) ([]T, error) {
	informer := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default: // a check is pending already; it will see this change too
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(runCtx) })
	defer func() {
		stop()
		wg.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("no list before the deadline: %w", context.Cause(ctx))
	}
	for {
		objs := snapshot[T](informer.GetStore())
		if cond(objs) {
			return objs, nil
		}
		select {
		case <-ctx.Done():
			return objs, fmt.Errorf("condition not met: %w", context.Cause(ctx))
		case <-changed:
		}
	}
}

// snapshot copies the store's objects, sorted by key.
func snapshot[T runtime.Object](store cache.Store) []T {
	keys := store.ListKeys()
	slices.Sort(keys)
	objs := make([]T, 0, len(keys))
	for _, k := range keys {
		obj, ok, err := store.GetByKey(k)
		if err != nil || !ok {
			continue // deleted since ListKeys; the next change triggers another check
		}
		objs = append(objs, obj.(T).DeepCopyObject().(T))
	}
	return objs
}
