package kube_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// routerEvent is one event a Router told of.
type routerEvent struct{ kind, target, detail string }

// routerEvents collects a Router's events and says when one came.
type routerEvents struct {
	mu     sync.Mutex
	list   []routerEvent
	notify chan struct{}
}

func newRouterEvents() *routerEvents { return &routerEvents{notify: make(chan struct{}, 1)} }

func (e *routerEvents) add(kind, target, detail string) {
	e.mu.Lock()
	e.list = append(e.list, routerEvent{kind, target, detail})
	e.mu.Unlock()
	select {
	case e.notify <- struct{}{}:
	default:
	}
}

// wait waits until an event of kind about target has come.
func (e *routerEvents) wait(t *testing.T, kind, target string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		e.mu.Lock()
		found := slices.ContainsFunc(e.list, func(ev routerEvent) bool { return ev.kind == kind && ev.target == target })
		all := slices.Clone(e.list)
		e.mu.Unlock()
		if found {
			return
		}
		select {
		case <-e.notify:
		case <-timeout:
			t.Fatalf("no %s event of %s within a minute; events: %v", kind, target, all)
		}
	}
}

// A Router starts once a pod is ready, telling of the endpoints; routes
// round-robin over the pods, each request tagged with its pod's name;
// and once a pod is deleted, tells of its removal and never routes to it
// again, and routes to its replacement once that joins.
func TestRouterFollowsPodsReplaced(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 3, Labels: map[string]string{"app": "sim"}}
	pods := c.CreateWorkload(t, ns, w)
	cl, err := kube.Connect(c.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	d := kube.Discovery{Client: cl.Client, Namespace: ns, Selector: w.Selector(), Port: 8000}
	r := &kube.Router{Discovery: d, Path: "/v1", Describe: kube.DescribeTarget(d, cl.Source)}
	evs := newRouterEvents()
	if err := r.Start(t.Context(), evs.add); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	evs.mu.Lock()
	first := slices.Clone(evs.list)
	evs.mu.Unlock()
	if len(first) == 0 || first[len(first)-1].kind != "endpoints" || first[len(first)-1].target != r.Describe {
		t.Fatalf("events at the start: %v, want the endpoints event of %s last", first, r.Describe)
	}
	// The first list may hold fewer pods than are Ready: wait for all.
	for _, p := range pods {
		if !strings.Contains(first[len(first)-1].detail, p.Name) {
			evs.wait(t, "endpoint_added", p.Name)
		}
	}
	urls := map[string]string{}
	for _, p := range pods {
		urls[p.Name] = "http://" + p.Status.PodIP + ":8000/v1"
	}
	seen := map[string]int{}
	for range 6 {
		u, name, err := r.Route(0)
		if err != nil || urls[name] != u {
			t.Fatalf("Route = %s %s %v, want a pod's URL and its name (%v)", u, name, err, urls)
		}
		seen[name]++
	}
	for _, p := range pods {
		if seen[p.Name] != 2 {
			t.Errorf("6 routes: %v, want each of the 3 pods twice", seen)
		}
	}
	if got := r.URLs(); len(got) != 3 {
		t.Errorf("URLs = %v, want the 3 pods'", got)
	}

	victim := pods[0]
	grace := int64(0)
	if err := cl.Client.CoreV1().Pods(ns).Delete(t.Context(), victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	evs.wait(t, "endpoint_removed", victim.Name)
	for range 30 {
		if _, name, err := r.Route(0); err != nil || name == victim.Name {
			t.Fatalf("after its removal: Route = %s %v, want another pod", name, err)
		}
	}
	now, err := kube.WaitPods(t.Context(), cl.Client, ns, w.Selector(), func(ps []*corev1.Pod) bool {
		return len(ps) == 3 && kube.CountReady(ps) == 3 && !slices.ContainsFunc(ps, func(p *corev1.Pod) bool { return p.Name == victim.Name })
	})
	if err != nil {
		t.Fatal(err)
	}
	var replacement string
	for _, p := range now {
		if !slices.ContainsFunc(pods, func(b *corev1.Pod) bool { return b.Name == p.Name }) {
			replacement = p.Name
		}
	}
	evs.wait(t, "endpoint_added", replacement)
	found := false
	for range 3 {
		_, name, _ := r.Route(0)
		found = found || name == replacement
	}
	if !found {
		t.Errorf("three routes after %s joined never went to it", replacement)
	}
}

// A target without a ready pod fails Start once its Timeout is up, saying
// so; a Start whose context ends returns its cause; an unstarted Router
// routes nothing.
func TestRouterNoReadyEndpoint(t *testing.T) {
	if _, _, err := (&kube.Router{}).Route(0); !errors.Is(err, kube.ErrNoEndpoint) {
		t.Errorf("unstarted Route: %v, want ErrNoEndpoint", err)
	}
	(&kube.Router{}).Stop() // does nothing
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	cl, err := kube.Connect(c.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	d := kube.Discovery{Client: cl.Client, Namespace: ns, Selector: "app=none", Port: 8000}
	r := &kube.Router{Discovery: d, Describe: kube.DescribeTarget(d, cl.Source), Timeout: time.Second}
	err = r.Start(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), `pods "app=none" in namespace `+ns) || !strings.Contains(err.Error(), "no ready endpoint after 1s (no pod is Ready)") {
		t.Errorf("Start = %v, want no ready endpoint of the pods", err)
	}
	r.Stop()

	cause := errors.New("interrupted")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	r = &kube.Router{Discovery: d, Describe: "x"}
	if err := r.Start(ctx, nil); !errors.Is(err, cause) {
		t.Errorf("Start with its context ended = %v, want its cause", err)
	}
	r.Stop()
}
