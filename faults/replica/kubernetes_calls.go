package replica

import "github.com/llmchaos/llmchaos/internal/kube"

// APICalls returns every kind of Kubernetes API call the kubernetes driver
// makes itself (its waits on pods and the opt-in check of a namespace are
// kube's, in kube.APICalls), for the RBAC of deploy/kubernetes.
func APICalls() []kube.APICall {
	calls := []kube.APICall{
		{Verb: "list", Resource: "pods", Why: "replica faults: the pods of the selector"},
		{Verb: "watch", Resource: "pods", Why: "replica faults: wait for the owner to bring a pod back; pod status changes into run.json"},
		{Verb: "delete", Resource: "pods", Why: "replica.stop and replica.kill via engine (grace 0); replica.kill's signal pod when it has ended"},
		{Verb: "get", Resource: "pods", Why: "replica.kill: the pod's node and containers"},
		{Verb: "create", Resource: "pods", Why: "replica.kill: the signal pod on the target's node (hostPID, CAP_KILL) that sends the SIGKILL"},
		{Verb: "get", Resource: "pods/log", Why: "replica.kill: what the signal pod did, or why it failed"},
		{Verb: "get", Resource: "namespaces", ClusterScoped: true, Why: "replica faults: the opt-in label of the target's namespace"},
		{Verb: "list", Resource: "events", Why: "events of the targeted workload into run.json"},
		{Verb: "watch", Resource: "events", Why: "events of the targeted workload into run.json"},
		{Verb: "get", Group: "apps", Resource: "replicasets", Why: "replica.restart: a pod's owner's owner; a kill's revert: whether the owner is gone"},
	}
	for _, r := range []string{"deployments", "statefulsets", "daemonsets"} {
		calls = append(calls,
			kube.APICall{Verb: "get", Group: "apps", Resource: r, Why: "replica.restart: the rollout's progress; a kill's revert: whether the owner is gone"},
			kube.APICall{Verb: "patch", Group: "apps", Resource: r, Why: "replica.restart: rollout restart"})
	}
	return calls
}
