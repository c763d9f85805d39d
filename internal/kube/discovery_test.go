package kube_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

func TestMain(m *testing.M) { k8stest.Main(m) }

// discovered follows a Discovery's updates for a test.
type discovered struct {
	updates chan []kube.Endpoint
	errs    chan error
}

func startDiscovery(t *testing.T, d kube.Discovery) *discovered {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := &discovered{updates: make(chan []kube.Endpoint, 64), errs: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		got.errs <- d.Watch(ctx, func() { close(ready) }, func(eps []kube.Endpoint, err error) {
			if err != nil {
				t.Errorf("discovery update: %v", err)
			}
			got.updates <- eps
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-got.errs; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-got.errs:
		t.Fatalf("Watch ended before its first list: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no first list within a minute")
	}
	return got
}

// until waits for an update for which cond holds and returns it.
func (d *discovered) until(t *testing.T, what string, cond func([]kube.Endpoint) bool) []kube.Endpoint {
	t.Helper()
	timeout := time.After(time.Minute)
	var last []kube.Endpoint
	for {
		select {
		case eps := <-d.updates:
			last = eps
			if cond(eps) {
				return eps
			}
		case <-timeout:
			t.Fatalf("no update with %s within a minute; last: %v", what, last)
		}
	}
}

func podNames(pods []*corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

func endpointPods(eps []kube.Endpoint) []string {
	var names []string
	for _, e := range eps {
		names = append(names, e.Pod)
	}
	return names
}

// The endpoints follow the pods: a pod deleted leaves them, and the
// ReplicaSet's replacement joins them once Ready, by its own name and IP;
// through a Service's EndpointSlices and through the selector's pods alike.
func TestDiscoveryFollowsPodsReplaced(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 3, Labels: map[string]string{"app": "sim"}, Service: true}
	pods := c.CreateWorkload(t, ns, w)
	cl, err := kube.Connect(c.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cl.Source, c.Kubeconfig) {
		t.Errorf("source = %q, want it to name %s", cl.Source, c.Kubeconfig)
	}

	for _, tc := range []struct {
		name string
		d    kube.Discovery
	}{
		{"service", kube.Discovery{Client: cl.Client, Namespace: ns, Service: "sim"}},
		{"selector", kube.Discovery{Client: cl.Client, Namespace: ns, Selector: w.Selector(), Port: 8000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := startDiscovery(t, tc.d)
			want := podNames(pods)
			eps := got.until(t, "the 3 pods", func(eps []kube.Endpoint) bool { return slices.Equal(endpointPods(eps), want) })
			for i, e := range eps {
				if e.IP != pods[i].Status.PodIP || e.Port != 8000 {
					t.Errorf("endpoint %d = %+v, want pod %s at %s:8000", i, e, pods[i].Name, pods[i].Status.PodIP)
				}
			}

			victim := pods[0]
			grace := int64(0)
			if err := cl.Client.CoreV1().Pods(ns).Delete(t.Context(), victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
				t.Fatal(err)
			}
			got.until(t, "the victim gone", func(eps []kube.Endpoint) bool { return !slices.Contains(endpointPods(eps), victim.Name) })
			eps = got.until(t, "a replacement", func(eps []kube.Endpoint) bool {
				return len(eps) == 3 && !slices.Contains(endpointPods(eps), victim.Name)
			})
			now, err := kube.WaitPods(t.Context(), cl.Client, ns, w.Selector(), func(ps []*corev1.Pod) bool { return len(ps) == 3 })
			if err != nil {
				t.Fatal(err)
			}
			if names := podNames(now); !slices.Equal(endpointPods(eps), names) {
				t.Errorf("endpoints %v, want the pods now %v", endpointPods(eps), names)
			}
			pods = now
		})
	}
}

// Without a Service the port must be given; an unreadable source is an
// error once the caller's time is up, naming what was listed.
func TestDiscoveryErrors(t *testing.T) {
	if err := (kube.Discovery{Selector: "app=x"}).Watch(t.Context(), nil, nil); err == nil || !strings.Contains(err.Error(), "no port") {
		t.Errorf("no port: %v, want an error saying so", err)
	}
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	cfg := c.Config()
	cfg.BearerToken, cfg.BearerTokenFile = "", ""
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, cfg.TLSClientConfig.CertFile, cfg.TLSClientConfig.KeyFile = nil, nil, "", "" // anonymous: forbidden
	anon, err := kube.NewClusterFrom(cfg, ns, "anonymous")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	err = kube.Discovery{Client: anon.Client, Namespace: ns, Service: "sim"}.Watch(ctx, nil, func([]kube.Endpoint, error) {})
	if err == nil || !strings.Contains(err.Error(), "EndpointSlices of Service "+ns+"/sim") {
		t.Errorf("forbidden list: %v, want an error naming the Service", err)
	}
}

// In a pod (KUBERNETES_SERVICE_HOST set) without a kubeconfig, the service
// account is used; a kubeconfig named explicitly wins.
func TestConnectInClusterOrKubeconfig(t *testing.T) {
	t.Setenv(kube.InClusterEnv, "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	if _, err := kube.Connect("", ""); err == nil || !strings.Contains(err.Error(), "in-cluster") {
		t.Errorf("in a pod without its service account files: %v, want an in-cluster error", err)
	}
	c := k8stest.Start(t)
	cl, err := kube.Connect(c.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if cl.Namespace != "default" {
		t.Errorf("namespace = %q, want default (the kubeconfig's context names none)", cl.Namespace)
	}
	if _, err := kube.Connect(c.Kubeconfig, "no-such-context"); err == nil || !strings.Contains(err.Error(), "no-such-context") {
		t.Errorf("unknown context: %v, want an error naming it", err)
	}
}
