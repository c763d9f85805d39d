// Package kube holds what llmchaos's Kubernetes code shares: how a fault or
// a command reaches a cluster (Access: a kubeconfig and context, or the
// in-cluster service account), the labels llmchaos reads and writes
// (llmchaos.io/target opts a namespace or pod in; llmchaos.io/run marks
// what a run created), the opt-in check, pod readiness, object names, and
// APICall, the record of one API call a package makes, from which the
// deploy/kubernetes RBAC test proves the Role grants exactly what the tool
// uses.
package kube
