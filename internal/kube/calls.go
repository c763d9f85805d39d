package kube

import "fmt"

// APICall is one kind of Kubernetes API request llmchaos makes: a verb on
// a resource (and subresource) of an API group, in the target's namespace
// or cluster-wide. Every package that talks to a cluster lists its calls
// next to its clients (APICalls functions), and the RBAC test of
// deploy/kubernetes checks that the Role given there allows each of them
// and nothing it does not need.
type APICall struct {
	// Verb is the RBAC verb: get, list, watch, create, patch, delete.
	Verb string
	// Group is the API group ("" for the core group).
	Group string
	// Resource is the plural resource name; Subresource is set for
	// calls such as pods/log.
	Resource, Subresource string
	// ClusterScoped is set for resources outside namespaces (namespaces).
	ClusterScoped bool
	// Why says what the call is for.
	Why string
}

// String describes c as RBAC writes it: "get pods/log" or
// "create networkchaos.chaos-mesh.org".
func (c APICall) String() string {
	r := c.Resource
	if c.Subresource != "" {
		r += "/" + c.Subresource
	}
	if c.Group != "" {
		r += "." + c.Group
	}
	return fmt.Sprintf("%s %s", c.Verb, r)
}

// APICalls returns the kinds of API call this package makes itself, for
// the RBAC of deploy/kubernetes: target.kubernetes's endpoint discovery
// (Discovery, Router: RouterAPICalls), the waits on pods (WaitPods, PodTarget) and the opt-in
// check of a namespace. WaitGone's calls are on a resource its caller
// names, and listed by the caller.
func APICalls() []APICall {
	return append(RouterAPICalls(),
		APICall{Verb: "get", Resource: "namespaces", ClusterScoped: true, Why: "the opt-in label of the target's namespace"})
}

// RouterAPICalls returns the API calls of a Router (and its Discovery):
// what llmchaos load needs to follow a Kubernetes target's pods, in the
// runner or in a shard's pod.
func RouterAPICalls() []APICall {
	return []APICall{
		{Verb: "list", Resource: "pods", Why: "a Kubernetes target without a Service: the ready pods of the selector; waits on pods"},
		{Verb: "watch", Resource: "pods", Why: "a Kubernetes target without a Service: live re-discovery; waits on pods"},
		{Verb: "list", Group: "discovery.k8s.io", Resource: "endpointslices", Why: "a Kubernetes target with a Service: its endpoints"},
		{Verb: "watch", Group: "discovery.k8s.io", Resource: "endpointslices", Why: "a Kubernetes target with a Service: live re-discovery"},
	}
}
