package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
	"github.com/llmchaos/llmchaos/internal/kube/api/validation"
	"github.com/llmchaos/llmchaos/report"
)

// loadKubeFlags are llmchaos load's flags of a Kubernetes target: the
// ready pods of a label selector, or the ready endpoints of a Service,
// followed while the load runs, as target.kubernetes of an experiment
// without url.
type loadKubeFlags struct {
	Namespace  string
	Selector   string
	Service    string
	Port       int
	Path       string
	Kubeconfig string
	Context    string
}

// loadKubeFlagNames are the flags of loadKubeFlags, for the messages about
// them.
var loadKubeFlagNames = []string{"kubernetes-selector", "kubernetes-service", "kubernetes-namespace", "kubernetes-port", "kubernetes-path", "kubeconfig", "kube-context"}

func (k *loadKubeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&k.Selector, "kubernetes-selector", "", "instead of --target: send to the Ready pods this label selector matches (e.g. app=vllm) on --kubernetes-port, followed while the load runs; each request goes to a pod ready at its send, and its result is tagged with the pod's name")
	fs.StringVar(&k.Service, "kubernetes-service", "", "instead of --target: send to the ready endpoints of this Service's EndpointSlices, followed while the load runs")
	fs.StringVar(&k.Namespace, "kubernetes-namespace", "", "namespace of the --kubernetes-selector pods or the --kubernetes-service (default: the kubeconfig context's; in a pod, its own)")
	fs.IntVar(&k.Port, "kubernetes-port", 0, "port on the pods that serves the API: required with --kubernetes-selector alone; with --kubernetes-service, default its EndpointSlices' port")
	fs.StringVar(&k.Path, "kubernetes-path", spec.DefaultKubernetesPath, "path of the OpenAI API on each pod")
	fs.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubeconfig file of the Kubernetes target (default: $KUBECONFIG, ~/.kube/config, or in a pod its service account, which must list and watch pods and EndpointSlices)")
	fs.StringVar(&k.Context, "kube-context", "", "kubeconfig context of the Kubernetes target (default: its current one)")
}

// loadKube is a checked Kubernetes target of a load.
type loadKube struct {
	Namespace  string // "" for the cluster's default
	Selector   string
	Service    string
	Port       int
	Path       string
	Kubeconfig string
	Context    string
}

// config checks the flags: given reports whether a Kubernetes target was
// asked for (--kubernetes-selector or --kubernetes-service), the target is
// nil when it was not or is wrong, and every problem is reported, each
// naming its flag. withTargets says --target was given too.
func (k loadKubeFlags) config(fs *pflag.FlagSet, withTargets bool) (t *loadKube, given bool, errs []error) {
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	given = k.Selector != "" || k.Service != ""
	if !given {
		for _, name := range loadKubeFlagNames {
			if fs.Changed(name) {
				bad("--%s applies to a Kubernetes target: give --kubernetes-selector or --kubernetes-service with it", name)
			}
		}
		return nil, false, errs
	}
	if withTargets {
		bad("--target and --kubernetes-selector/--kubernetes-service are both set: send to base URLs (--target) or to the pods of a Kubernetes target, not both")
	}
	if k.Selector != "" {
		if s, err := labels.Parse(k.Selector); err != nil {
			bad("--kubernetes-selector %q is not a label selector: %v", k.Selector, err)
		} else if s.Empty() {
			bad("--kubernetes-selector %q selects every pod of the namespace: name the serving pods' labels, e.g. app=vllm", k.Selector)
		}
	}
	if k.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(k.Namespace) {
			bad("--kubernetes-namespace %q is not a namespace name: %s", k.Namespace, m)
		}
	}
	if k.Service != "" {
		for _, m := range validation.IsDNS1035Label(k.Service) {
			bad("--kubernetes-service %q is not a Service name: %s", k.Service, m)
		}
	}
	switch {
	case k.Port < 0 || k.Port > 65535:
		bad("--kubernetes-port %d: want a port, 1 to 65535", k.Port)
	case k.Port == 0 && k.Service == "":
		bad("--kubernetes-port is required with --kubernetes-selector alone: the port on the pods that serves the API (e.g. 8000 for vLLM)")
	}
	if !strings.HasPrefix(k.Path, "/") {
		bad("--kubernetes-path %q: want a path starting with /, e.g. /v1", k.Path)
	}
	if len(errs) > 0 {
		return nil, true, errs
	}
	return &loadKube{Namespace: k.Namespace, Selector: k.Selector, Service: k.Service, Port: k.Port,
		Path: strings.TrimRight(k.Path, "/"), Kubeconfig: k.Kubeconfig, Context: k.Context}, true, nil
}

// record is the target in the report's config, as an experiment's
// target.kubernetes: the same on every shard of one load, whichever pods
// each found ready.
func (k *loadKube) record() map[string]any {
	m := map[string]any{"selector": k.Selector, "path": k.Path}
	for key, v := range map[string]string{"namespace": k.Namespace, "service": k.Service, "kubeconfig": k.Kubeconfig, "context": k.Context} {
		if v != "" {
			m[key] = v
		}
	}
	if k.Port != 0 {
		m["port"] = k.Port
	}
	return map[string]any{"kubernetes": m}
}

// kubeLoad is a load's Kubernetes target, started: its router and what it
// saw of the endpoints, for the report's events and the human output.
type kubeLoad struct {
	router *kube.Router

	mu      sync.Mutex
	events  []kubeLoadEvent
	printed int // events already printed
}

// kubeLoadEvent is something the discovery saw, at a wall-clock instant
// (with its monotonic reading: the run clock is placed on it at the end).
type kubeLoadEvent struct {
	at                   time.Time
	kind, target, detail string
}

// startKube connects to the cluster of k and follows its endpoints
// (kube.Router.Start): it returns once one is ready.
func startKube(ctx context.Context, k *loadKube) (*kubeLoad, error) {
	cl, err := kube.Connect(k.Kubeconfig, k.Context)
	if err != nil {
		return nil, usageError(fmt.Errorf("the Kubernetes target (--kubeconfig, --kube-context): %w", err))
	}
	d := kube.Discovery{Client: cl.Client, Namespace: cl.NamespaceOr(k.Namespace), Service: k.Service, Selector: k.Selector, Port: k.Port}
	kl := &kubeLoad{router: &kube.Router{Discovery: d, Path: k.Path, Describe: kube.DescribeTarget(d, cl.Source)}}
	if err := kl.router.Start(ctx, kl.event); err != nil {
		return nil, err
	}
	return kl, nil
}

func (kl *kubeLoad) event(kind, target, detail string) {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	kl.events = append(kl.events, kubeLoadEvent{at: time.Now(), kind: kind, target: target, detail: detail})
}

// pending returns the lines of the events not printed yet, and marks them
// printed.
func (kl *kubeLoad) pending() []string {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	var lines []string
	for _, e := range kl.events[kl.printed:] {
		line := "llmchaos load: kubernetes: "
		switch e.kind {
		case "endpoints":
			line += e.target + ": ready: " + e.detail
		case "endpoint_problem":
			line += "warning: " + e.detail
		default:
			line += e.kind + " " + e.target + " (" + e.detail + ")"
		}
		lines = append(lines, line)
	}
	kl.printed = len(kl.events)
	return lines
}

// records returns the events for the report, on the run clock that
// started at start (those before it at 0).
func (kl *kubeLoad) records(start time.Time) []report.EventRecord {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	out := make([]report.EventRecord, len(kl.events))
	for i, e := range kl.events {
		out[i] = report.EventRecord{AtS: max(e.at.Sub(start), 0).Seconds(), Source: report.EventSourceKubernetes, Kind: e.kind, Target: e.target, Detail: e.detail}
	}
	return out
}
