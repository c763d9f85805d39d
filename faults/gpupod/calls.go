package gpupod

import "github.com/llmchaos/llmchaos/internal/kube"

// APICalls returns every kind of Kubernetes API call this family makes,
// for the RBAC of deploy/kubernetes.
func APICalls() []kube.APICall {
	const why = "gpupod.memory_pressure: "
	return []kube.APICall{
		{Verb: "list", Resource: "pods", Why: why + "list the target's pods to pick some, and watch its balloons"},
		{Verb: "watch", Resource: "pods", Why: why + "wait for the balloon pods to run, and to be gone"},
		{Verb: "get", Resource: "pods", Why: why + "see whether a deleted balloon pod is gone"},
		{Verb: "create", Resource: "pods", Why: why + "start a balloon pod on a target's node"},
		{Verb: "delete", Resource: "pods", Why: why + "delete the balloon pod on revert"},
		{Verb: "get", Resource: "namespaces", ClusterScoped: true, Why: why + "read the opt-in label of the target's namespace"},
	}
}
