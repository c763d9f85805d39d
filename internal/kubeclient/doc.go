// Package kubeclient connects llmchaos to a Kubernetes cluster and watches
// what it needs there: the client configuration (in a pod, its service
// account; else a kubeconfig file and context, as kubectl finds them), the
// ready endpoints of a Service or of a label selector's pods, re-listed as
// pods come and go (Discovery), and waits on the pods of a selector
// (WaitPods). It holds no state between calls.
package kubeclient
