package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/discoveryv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
)

// Endpoint is one address that serves: a ready pod's IP and port.
type Endpoint struct {
	// Pod is the pod's name ("" when an EndpointSlice names none).
	Pod string
	// IP and Port are where it listens.
	IP   string
	Port int
}

// HostPort returns the endpoint's address, host:port.
func (e Endpoint) HostPort() string { return net.JoinHostPort(e.IP, strconv.Itoa(e.Port)) }

// Name names the endpoint: its pod, else its address.
func (e Endpoint) Name() string {
	if e.Pod != "" {
		return e.Pod
	}
	return e.HostPort()
}

// Discovery finds the ready endpoints of a Service, from its
// EndpointSlices, or of the pods a label selector matches.
type Discovery struct {
	// Client is the cluster's clientset.
	Client *Clientset
	// Namespace is where the Service and the pods are.
	Namespace string
	// Service names the Service whose EndpointSlices list the endpoints;
	// "" : the Ready pods of Selector.
	Service string
	// Selector selects the pods when Service is "".
	Selector string
	// Port is the port on the pods. 0 (Service only): the EndpointSlices'
	// port, when they list one, or one named http.
	Port int
}

// ErrNoPort: the EndpointSlices list several ports, none named http, and
// the Discovery names none.
var ErrNoPort = errors.New("the Service's EndpointSlices list several ports, none named http: name the port")

// Watch lists the ready endpoints, then follows them: it calls update
// after the first list and after every change of the set (pods that become
// ready, are deleted or replaced), with the endpoints sorted by name, and
// an error when the EndpointSlices cannot say which port serves (ErrNoPort).
// ready, when not nil, is called once, after the first list and before the
// first update. Watch returns nil once ctx ends after the first list, and
// an error naming what could not be listed when ctx ends before it.
// Calls of update come from one goroutine, in order.
func (d Discovery) Watch(ctx context.Context, ready func(), update func([]Endpoint, error)) error {
	var (
		out  watchOutcome
		last []Endpoint
		sent bool
	)
	emit := func(eps []Endpoint, err error) {
		if sent && err == nil && slices.Equal(eps, last) {
			return
		}
		sent, last = true, eps
		update(eps, err)
	}
	what := fmt.Sprintf("pods %q in %s", d.Selector, d.Namespace)
	if d.Service != "" {
		what = fmt.Sprintf("EndpointSlices of Service %s/%s", d.Namespace, d.Service)
		out = watchLoop(ctx, EndpointSlicesListWatch(d.Client, d.Namespace, d.Service), ready, func(slices []*discoveryv1.EndpointSlice) bool {
			emit(SliceEndpoints(slices, d.Port))
			return false
		})
	} else {
		if d.Port <= 0 {
			return fmt.Errorf("discovery of %s: no port: without a Service, name the port the pods serve on", what)
		}
		out = watchLoop(ctx, PodsListWatch(d.Client, d.Namespace, d.Selector), ready, func(pods []*corev1.Pod) bool {
			emit(PodEndpoints(pods, d.Port), nil)
			return false
		})
	}
	if out.synced {
		return nil
	}
	err := fmt.Errorf("discovery of %s: no list: %w", what, context.Cause(ctx))
	if out.lastErr != nil {
		err = fmt.Errorf("%w (last error: %w)", err, out.lastErr)
	}
	return err
}

// EndpointSlicesListWatch lists and watches the EndpointSlices of Service
// service in namespace ns.
func EndpointSlicesListWatch(client *Clientset, ns, service string) cache.ListerWatcher {
	return client.DiscoveryV1().EndpointSlices(ns).ListWatch(func(o *metav1.ListOptions) {
		o.LabelSelector = discoveryv1.LabelServiceName + "=" + service
	})
}

// PodEndpoints returns the endpoints of the ready pods (PodReady) on port,
// sorted by name.
func PodEndpoints(pods []*corev1.Pod, port int) []Endpoint {
	var eps []Endpoint
	for _, p := range pods {
		if PodReady(p) {
			eps = append(eps, Endpoint{Pod: p.Name, IP: p.Status.PodIP, Port: port})
		}
	}
	sortEndpoints(eps)
	return eps
}

// SliceEndpoints returns the ready endpoints the EndpointSlices list,
// sorted by name: each pod once (IPv4 before IPv6), on port, or when port
// is 0 on the slice's port (the only one, or one named http; ErrNoPort
// when a slice lists several and none is named http).
func SliceEndpoints(eps []*discoveryv1.EndpointSlice, port int) ([]Endpoint, error) {
	ordered := slices.Clone(eps)
	slices.SortStableFunc(ordered, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Compare(addressRank(a.AddressType), addressRank(b.AddressType))
	})
	var (
		out  []Endpoint
		seen = map[string]bool{}
		errs []error
	)
	for _, s := range ordered {
		if addressRank(s.AddressType) > 1 {
			continue // FQDN
		}
		p := port
		if p == 0 {
			var err error
			if p, err = slicePort(s); err != nil {
				errs = append(errs, fmt.Errorf("EndpointSlice %s: %w", s.Name, err))
				continue
			}
			if p == 0 {
				continue // no port yet
			}
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
				continue
			}
			ep := Endpoint{IP: e.Addresses[0], Port: p}
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				ep.Pod = e.TargetRef.Name
			}
			key := ep.Name()
			if ep.Pod == "" {
				key = ep.IP
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, ep)
		}
	}
	sortEndpoints(out)
	return out, errors.Join(errs...)
}

// addressRank orders address types: IPv4, IPv6, then others.
func addressRank(t discoveryv1.AddressType) int {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return 0
	case discoveryv1.AddressTypeIPv6:
		return 1
	}
	return 2
}

// slicePort returns the port of s: its only one, or one named http.
func slicePort(s *discoveryv1.EndpointSlice) (int, error) {
	var (
		only  int
		count int
	)
	for _, p := range s.Ports {
		if p.Port == nil {
			continue
		}
		if p.Name != nil && strings.EqualFold(*p.Name, "http") {
			return int(*p.Port), nil
		}
		only = int(*p.Port)
		count++
	}
	if count > 1 {
		return 0, ErrNoPort
	}
	return only, nil
}

func sortEndpoints(eps []Endpoint) {
	slices.SortFunc(eps, func(a, b Endpoint) int {
		return cmp.Or(cmp.Compare(a.Name(), b.Name()), cmp.Compare(a.HostPort(), b.HostPort()))
	})
}
