package spec

import (
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
	"github.com/llmchaos/llmchaos/internal/kube/api/validation"
)

// kubernetesTarget checks a target.kubernetes. It does not reach the
// cluster: whether the namespace, the Service and the pods exist is found
// out when the run starts.
func (v *validator) kubernetesTarget(t KubernetesTarget) {
	const p = "target.kubernetes"
	n := len(v.iss)
	defer func() { v.kubeBroken = v.kubeBroken || v.brokenAt(n, p+".selector", p+".namespace") }()
	switch sel := strings.TrimSpace(t.Selector); {
	case sel == "":
		v.iss.add(p+".selector", "missing: the label selector of the serving pods, e.g. app=vllm (the pods the replica faults act on and whose events the run records)")
	default:
		if s, err := labels.Parse(sel); err != nil {
			v.iss.add(p+".selector", "%q is not a label selector: %v", t.Selector, err)
		} else if s.Empty() {
			v.iss.add(p+".selector", "%q selects every pod of the namespace: name the serving pods' labels, e.g. app=vllm", t.Selector)
		}
	}
	if t.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(t.Namespace) {
			v.iss.add(p+".namespace", "%q is not a namespace name: %s", t.Namespace, m)
		}
	}
	if t.Service != "" {
		for _, m := range validation.IsDNS1035Label(t.Service) {
			v.iss.add(p+".service", "%q is not a Service name: %s", t.Service, m)
		}
	}
	switch {
	case t.Port < 0 || t.Port > 65535:
		v.iss.add(p+".port", "%d: want a port, 1 to 65535", t.Port)
	case t.Port == 0 && t.Service == "" && t.URL == "":
		v.iss.add(p+".port", "missing: without a service, the port on the pods that serves the API (e.g. 8000 for vLLM)")
	}
	if t.Path != "" && !strings.HasPrefix(t.Path, "/") {
		v.iss.add(p+".path", "%q: want a path starting with /, e.g. /v1", t.Path)
	}
	if t.URL != "" {
		v.checkURL(p+".url", t.URL)
		v.endpoints = 1
	}
	if t.Kubeconfig != "" {
		if _, err := os.Stat(t.Kubeconfig); errors.Is(err, os.ErrNotExist) {
			v.iss.warn(p+".kubeconfig", "%s does not exist here: the run will fail unless it exists where it runs", t.Kubeconfig)
		}
	}
	v.clientSettings(p, t.APIKeyEnv, t.Headers)
	if t.APIKeySecret != "" {
		if _, _, ok := t.SplitAPIKeySecret(); !ok {
			v.iss.add(p+".api_key_secret", "%q: want NAME/KEY, a Secret of the namespace and the key of its data that holds the API key", t.APIKeySecret)
		} else if t.APIKeyEnv == "" {
			v.iss.add(p+".api_key_secret", "needs api_key_env, the variable that holds the key for the runner (and, from the Secret, in the shard pods)")
		}
	}
}

// kubernetesProxyFault reports a proxy fault of an experiment whose target
// is Kubernetes pods reached directly: a fault proxy sits in front of a
// fixed address, and pods come and go.
func (v *validator) kubernetesProxyFault(p string, f Fault) {
	if t := v.s.Target.Kubernetes; t != nil && t.URL == "" {
		v.iss.add(p+".type", "%s acts through a fault proxy in front of a fixed endpoint, and this target's pods come and go: set target.kubernetes.url (the Service through an Ingress, a LoadBalancer or a port-forward) to put the proxy in front of it", f.Type)
	}
}

// brokenAt reports whether a problem added since the first n is at one of
// the paths.
func (v *validator) brokenAt(n int, paths ...string) bool {
	for _, is := range v.iss[n:] {
		if !is.warn && slices.Contains(paths, is.path) {
			return true
		}
	}
	return false
}
