package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRouterTimeout is how long Router.Start waits for a first ready
// endpoint when Router.Timeout is 0: a Service whose EndpointSlices are
// still being written, or pods still starting, get that long.
const DefaultRouterTimeout = 30 * time.Second

// ErrNoEndpoint fails a request when the target has no ready endpoint.
var ErrNoEndpoint = errors.New("no ready endpoint: every pod of the target is gone or not Ready")

// Router sends a load to the ready endpoints of a Kubernetes target and
// follows them while the load runs (Discovery): each request goes to an
// endpoint ready at its send time, round-robin over those, tagged with its
// pod's name. The experiment runner's target.kubernetes and llmchaos
// load's --kubernetes-* flags use it when the load goes to the pods.
//
// Start it once, before the load; Route, URLs and BaseURL are then safe
// from any goroutine; Stop ends the discovery.
type Router struct {
	// Discovery says where the endpoints are.
	Discovery Discovery
	// Path is the OpenAI API's path on each endpoint (/v1): an endpoint's
	// base URL is http://IP:PORT followed by Path.
	Path string
	// Describe says what the target is, for messages and the endpoints
	// event (DescribeTarget's words, or the caller's).
	Describe string
	// Timeout bounds the wait for a first ready endpoint (0:
	// DefaultRouterTimeout).
	Timeout time.Duration

	// set holds the ready endpoints and their base URLs, replaced whole
	// on each change; next turns the round-robin over them.
	set  atomic.Pointer[routerSet]
	next atomic.Uint64

	stop context.CancelFunc
	done chan struct{} // closed once the discovery has returned
}

// routerSet is the endpoints of a target at one moment.
type routerSet struct {
	eps  []Endpoint
	urls []string
}

// DescribeTarget says what the endpoints of d are, for people: "pods
// "app=vllm" in namespace llm" or "Service llm/vllm (pods "app=vllm")",
// and the cluster's source when given.
func DescribeTarget(d Discovery, source string) string {
	what := fmt.Sprintf("pods %q in namespace %s", d.Selector, d.Namespace)
	if d.Service != "" {
		what = fmt.Sprintf("Service %s/%s", d.Namespace, d.Service)
		if d.Selector != "" {
			what += fmt.Sprintf(" (pods %q)", d.Selector)
		}
	}
	if source != "" {
		what += " through " + source
	}
	return what
}

// Start lists the ready endpoints and follows them until Stop, in the
// background: event, when not nil, is told of each endpoint that joins
// (kind endpoint_added) or leaves (endpoint_removed), with its name as
// target and its address as detail, of a problem with the endpoints'
// ports (endpoint_problem, once per message), and, once the first
// endpoint is ready, of the endpoints ready then ("endpoints", Describe,
// "name IP:PORT, ..."). It returns once at least one endpoint is ready,
// failing when none is within Timeout, and with ctx's cause when ctx ends
// first; the discovery itself then stops (but runs on past ctx once Start
// returned: only Stop ends it). event is called from one goroutine at a
// time.
func (r *Router) Start(ctx context.Context, event func(kind, target, detail string)) error {
	if event == nil {
		event = func(string, string, string) {}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultRouterTimeout
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = stop, make(chan struct{})
	changed := make(chan struct{}, 1)
	errc := make(chan error, 1)
	var (
		mu      sync.Mutex
		problem string
	)
	go func() {
		defer close(r.done)
		errc <- r.Discovery.Watch(runCtx, nil, func(eps []Endpoint, err error) {
			prev := r.set.Load()
			r.set.Store(r.newSet(eps))
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
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		if s := r.set.Load(); s != nil && len(s.eps) > 0 {
			names := make([]string, len(s.eps))
			for i, e := range s.eps {
				names[i] = e.Name() + " " + e.HostPort()
			}
			event("endpoints", r.Describe, strings.Join(names, ", "))
			return nil
		}
		select {
		case <-changed:
		case err := <-errc:
			if err == nil {
				err = errors.New("the discovery ended before an endpoint was ready")
			}
			return err
		case <-timer.C:
			stop()
			if err := <-errc; err != nil {
				return fmt.Errorf("no list of the endpoints of %s within %v: %w", r.Describe, timeout, err)
			}
			mu.Lock()
			why := problem
			mu.Unlock()
			if why == "" {
				why = "no pod is Ready"
			}
			return fmt.Errorf("%s has no ready endpoint after %v (%s): check the selector, the Service and the pods' readiness", r.Describe, timeout, why)
		case <-ctx.Done():
			stop()
			<-r.done
			return context.Cause(ctx)
		}
	}
}

// newSet returns the set of eps with their base URLs.
func (r *Router) newSet(eps []Endpoint) *routerSet {
	s := &routerSet{eps: eps, urls: make([]string, len(eps))}
	for i, e := range eps {
		s.urls[i] = r.BaseURL(e)
	}
	return s
}

// BaseURL returns the base URL of endpoint e: http://IP:PORT and Path.
func (r *Router) BaseURL(e Endpoint) string { return "http://" + e.HostPort() + r.Path }

// URLs returns the base URLs of the endpoints ready now.
func (r *Router) URLs() []string {
	if s := r.set.Load(); s != nil {
		return slices.Clone(s.urls)
	}
	return nil
}

// Route is a load's route (engine.Config.Route): the next ready endpoint,
// round-robin over those ready at the moment, tagged with its pod's name;
// ErrNoEndpoint when none is.
func (r *Router) Route(int) (url, endpoint string, err error) {
	s := r.set.Load()
	if s == nil || len(s.eps) == 0 {
		return "", "", ErrNoEndpoint
	}
	i := int((r.next.Add(1) - 1) % uint64(len(s.eps)))
	return s.urls[i], s.eps[i].Name(), nil
}

// Stop ends the discovery and waits for it. It does nothing when Start
// was not called.
func (r *Router) Stop() {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
}
