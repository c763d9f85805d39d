package chaosmesh

import "github.com/llmchaos/llmchaos/internal/kube"

// APICalls returns every kind of Kubernetes API call this family makes
// (besides discovery, which every authenticated user may do), for the
// RBAC of deploy/kubernetes.
func APICalls() []kube.APICall {
	calls := []kube.APICall{
		{Verb: "list", Resource: "pods", Why: "chaosmesh faults: list the target's pods to pick some"},
		{Verb: "watch", Resource: "pods", Why: "chaosmesh.container_kill: wait for the pods to be Ready again"},
		{Verb: "get", Resource: "namespaces", ClusterScoped: true, Why: "chaosmesh faults: read the opt-in label of the target's namespace"},
	}
	for _, k := range Kinds() {
		for _, verb := range []string{"create", "get", "watch", "delete"} {
			calls = append(calls, kube.APICall{Verb: verb, Group: Group, Resource: k.Resource,
				Why: "chaosmesh faults: create the " + k.Name + " a fault is, delete it on revert and wait until it is gone"})
		}
	}
	return calls
}
