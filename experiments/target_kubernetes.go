package experiments

import (
	"context"
	"fmt"
	"net"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/report"
)

// kubeDiscoveryTimeout bounds the first list of a Kubernetes target's
// endpoints.
const kubeDiscoveryTimeout = kube.DefaultRouterTimeout

// kubeTarget is the target.kubernetes of a run: its cluster and, unless the
// load goes to the target's url, its endpoints, followed while the run goes
// on (kube.Router) so that each request goes to a pod that is ready at its
// send time.
type kubeTarget struct {
	t  spec.KubernetesTarget // defaults applied
	cl *kube.Cluster
	ns string

	router *kube.Router
}

// connectKube connects to the cluster of t (defaults applied). It sends
// nothing to the cluster yet.
func connectKube(t spec.KubernetesTarget) (*kubeTarget, error) {
	cl, err := kube.Connect(t.Kubeconfig, t.Context)
	if err != nil {
		return nil, fmt.Errorf("target.kubernetes: %w", err)
	}
	k := &kubeTarget{t: t, cl: cl, ns: cl.NamespaceOr(t.Namespace)}
	k.router = &kube.Router{Discovery: k.discovery(), Path: t.Path, Describe: k.describe(), Timeout: kubeDiscoveryTimeout}
	return k, nil
}

// discovery is where the target's endpoints are listed.
func (k *kubeTarget) discovery() kube.Discovery {
	return kube.Discovery{Client: k.cl.Client, Namespace: k.ns, Service: k.t.Service, Selector: k.t.Selector, Port: k.t.Port}
}

// describe says what the target is, for people.
func (k *kubeTarget) describe() string {
	return kube.DescribeTarget(k.discovery(), k.cl.Source)
}

// discover lists the ready endpoints and follows them until stopEndpoints
// (kube.Router.Start): event is told of each endpoint that joins or leaves,
// with its address. It returns once at least one endpoint is ready,
// failing when none is within kubeDiscoveryTimeout.
func (k *kubeTarget) discover(ctx context.Context, event func(kind, target, detail string)) error {
	err := k.router.Start(ctx, event)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("target.kubernetes: %w", err)
	}
	return err
}

// urls returns the base URLs of the endpoints ready now.
func (k *kubeTarget) urls() []string { return k.router.URLs() }

// route is the load's Route: the next ready endpoint, round-robin over
// those ready at the moment, tagged with its pod's name.
func (k *kubeTarget) route(endpoint int) (string, string, error) { return k.router.Route(endpoint) }

// stopEndpoints ends the discovery and waits for it.
func (k *kubeTarget) stopEndpoints() { k.router.Stop() }

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
