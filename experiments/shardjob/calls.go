package shardjob

import "github.com/llmchaos/llmchaos/internal/kube"

// DefaultPodServiceAccount is the service account deploy/kubernetes makes
// for the shard pods that follow a Kubernetes target's pods: it may make
// PodAPICalls and nothing else.
const DefaultPodServiceAccount = "llmchaos-load"

// APICalls returns every kind of Kubernetes API call this package makes,
// for the RBAC of deploy/kubernetes.
func APICalls() []kube.APICall {
	const why = "sharded load: "
	return []kube.APICall{
		{Verb: "create", Group: "batch", Resource: "jobs", Why: why + "create the Indexed Job"},
		{Verb: "watch", Group: "batch", Resource: "jobs", Why: why + "wait until the Job has finished, and until a deleted Job (its pods first) is gone"},
		{Verb: "get", Group: "batch", Resource: "jobs", Why: why + "look again when a watch ends; see whether a deleted Job is gone yet"},
		{Verb: "delete", Group: "batch", Resource: "jobs", Why: why + "delete the Job once its reports are read, or after a crash (the guard, llmchaos recover)"},
		{Verb: "list", Resource: "pods", Why: why + "find the Job's pods and their completion indexes"},
		{Verb: "watch", Resource: "pods", Why: why + "follow each shard's log once its pod has started"},
		{Verb: "get", Resource: "pods", Subresource: "log", Why: why + "read each shard's request lines and JSON report from its log, followed while it runs"},
		{Verb: "get", Resource: "serviceaccounts", Why: why + "check that the shard pods' service account exists (CheckServiceAccount)"},
	}
}

// PodAPICalls returns the API calls of a shard pod that follows the pods
// of a Kubernetes target (Config.FollowsPods: llmchaos load
// --kubernetes-selector or --kubernetes-service), those of kube.Router:
// the RBAC its service account needs.
func PodAPICalls() []kube.APICall {
	return kube.RouterAPICalls()
}
