package experiments

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/report"
)

// kubeDiscoveryTimeout bounds the first list of a Kubernetes target's
// endpoints.
const kubeDiscoveryTimeout = 30 * time.Second

// kubeTarget is the target.kubernetes of a run: its cluster and, unless the
// load goes to the target's url, its endpoints, followed while the run goes
// on (kube.Discovery) so that each request goes to a pod that is
// ready at its send time.
type kubeTarget struct {
	t  spec.KubernetesTarget // defaults applied
	cl *kube.Cluster
	ns string

	// set holds the ready endpoints and their base URLs, replaced whole
	// on each change; next turns the round-robin over them.
	set  atomic.Pointer[kubeSet]
	next atomic.Uint64

	stop context.CancelFunc
	done chan struct{} // closed once discovery has returned
}

// kubeSet is the endpoints of a Kubernetes target at one moment.
type kubeSet struct {
	eps  []kube.Endpoint
	urls []string
}

// connectKube connects to the cluster of t (defaults applied). It sends
// nothing to the cluster yet.
func connectKube(t spec.KubernetesTarget) (*kubeTarget, error) {
	cl, err := kube.Connect(t.Kubeconfig, t.Context)
	if err != nil {
		return nil, fmt.Errorf("target.kubernetes: %w", err)
	}
	return &kubeTarget{t: t, cl: cl, ns: cl.NamespaceOr(t.Namespace)}, nil
}

// describe says what the target is, for people.
func (k *kubeTarget) describe() string {
	what := fmt.Sprintf("pods %q in namespace %s", k.t.Selector, k.ns)
	if k.t.Service != "" {
		what = fmt.Sprintf("Service %s/%s (pods %q)", k.ns, k.t.Service, k.t.Selector)
	}
	return what + " through " + k.cl.Source
}

// discover lists the ready endpoints and follows them until stopEndpoints:
// event is told of each endpoint that joins or leaves, with its address. It
// returns once at least one endpoint is ready, failing when none is within
// kubeDiscoveryTimeout (a Service whose EndpointSlices are still being
// written gets that long).
func (k *kubeTarget) discover(ctx context.Context, event func(kind, target, detail string)) error {
	d := kube.Discovery{Client: k.cl.Client, Namespace: k.ns, Service: k.t.Service, Selector: k.t.Selector, Port: k.t.Port}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	k.stop, k.done = stop, make(chan struct{})
	changed := make(chan struct{}, 1)
	errc := make(chan error, 1)
	var (
		mu      sync.Mutex
		problem string
	)
	go func() {
		defer close(k.done)
		errc <- d.Watch(runCtx, nil, func(eps []kube.Endpoint, err error) {
			prev := k.set.Load()
			k.set.Store(k.newSet(eps))
			if prev != nil && len(prev.eps) > 0 {
				for _, e := range prev.eps {
					if !slices.Contains(eps, e) {
						event("endpoint_removed", e.Name(), e.HostPort())
					}
				}
				for _, e := range eps {
					if !slices.Contains(prev.eps, e) {
						event("endpoint_added", e.Name(), e.HostPort())
					}
				}
			}
			if err != nil {
				mu.Lock()
				if problem != err.Error() {
					problem = err.Error()
					event("endpoint_problem", "", problem)
				}
				mu.Unlock()
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}()
	timer := time.NewTimer(kubeDiscoveryTimeout)
	defer timer.Stop()
	for {
		if s := k.set.Load(); s != nil && len(s.eps) > 0 {
			names := make([]string, len(s.eps))
			for i, e := range s.eps {
				names[i] = e.Name() + " " + e.HostPort()
			}
			event("endpoints", k.describe(), strings.Join(names, ", "))
			return nil
		}
		select {
		case <-changed:
		case err := <-errc:
			return fmt.Errorf("target.kubernetes: %w", err)
		case <-timer.C:
			stop()
			if err := <-errc; err != nil {
				return fmt.Errorf("target.kubernetes: no list of the endpoints of %s within %v: %w", k.describe(), kubeDiscoveryTimeout, err)
			}
			mu.Lock()
			why := problem
			mu.Unlock()
			if why == "" {
				why = "no pod is Ready"
			}
			return fmt.Errorf("target.kubernetes: %s has no ready endpoint after %v (%s): check the selector, the Service and the pods' readiness", k.describe(), kubeDiscoveryTimeout, why)
		case <-ctx.Done():
			stop()
			<-k.done
			return context.Cause(ctx)
		}
	}
}

// newSet returns the set of eps with their base URLs.
func (k *kubeTarget) newSet(eps []kube.Endpoint) *kubeSet {
	s := &kubeSet{eps: eps, urls: make([]string, len(eps))}
	for i, e := range eps {
		s.urls[i] = "http://" + e.HostPort() + k.t.Path
	}
	return s
}

// urls returns the base URLs of the endpoints ready now.
func (k *kubeTarget) urls() []string {
	if s := k.set.Load(); s != nil {
		return slices.Clone(s.urls)
	}
	return nil
}

// errNoEndpoint fails a request when the target has no ready endpoint.
var errNoEndpoint = errors.New("no ready endpoint: every pod of the target is gone or not Ready")

// route is the load's Route: the next ready endpoint, round-robin over
// those ready at the moment, tagged with its pod's name.
func (k *kubeTarget) route(int) (string, string, error) {
	s := k.set.Load()
	if s == nil || len(s.eps) == 0 {
		return "", "", errNoEndpoint
	}
	i := int((k.next.Add(1) - 1) % uint64(len(s.eps)))
	return s.urls[i], s.eps[i].Name(), nil
}

// stopEndpoints ends the discovery and waits for it.
func (k *kubeTarget) stopEndpoints() {
	if k.stop != nil {
		k.stop()
		<-k.done
	}
}

// podTarget is the replica target of the pods the target selects, as the
// run watches them.
func (k *kubeTarget) podTarget() replica.TargetParams {
	return replica.TargetParams{Driver: replica.DriverKubernetes, Namespace: k.ns, Selector: k.t.Selector,
		Kubeconfig: k.t.Kubeconfig, Context: k.t.Context}
}

// kubeEvent records what the discovery saw as a run event.
func (r *run) kubeEvent(kind, target, detail string) {
	r.obs.event(report.EventSourceKubernetes, kind, target, detail)
}

// dialer returns the run's dial function: the test hook's, else nil (the
// client's own).
func (r *run) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if h := r.opts.hooks; h != nil {
		return h.dial
	}
	return nil
}
