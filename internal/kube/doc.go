// Package kube holds what llmchaos's Kubernetes code shares: the
// connection to a cluster (Connect, Access: in a pod its service account,
// else a kubeconfig file and context, as kubectl finds them), the typed
// client of the four API groups llmchaos uses (Clientset) and, in its
// sub-packages, what client-go gave before: the API types with only the
// fields llmchaos uses (api/...), the REST client with kubeconfig,
// in-cluster and exec-plugin credentials (rest), API errors (apierrors),
// the informer (cache) and the dynamic client (dynamic); the labels
// llmchaos reads and writes (llmchaos.io/target opts a namespace or pod
// in; llmchaos.io/run marks what a run created), the opt-in check, pod
// readiness, object names, waits on pods and other objects (WaitPods,
// WaitList, WaitGone, Inform), the ready endpoints of a Service or of a
// label selector's pods, re-listed as pods come and go (Discovery), a
// load's routing over those ready at each send (Router), and
// APICall, the record of one API call a package makes, from which the
// deploy/kubernetes RBAC test proves the Role grants exactly what the tool
// uses. Apart from a started Router, it holds no state between calls.
package kube
