// Package k8stest gives tests a real Kubernetes control plane: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake nodes
// (pods go Running and Ready with an IP, without containers), started by
// scripts/k8s-controlplane.sh on private 127.0.0.1 ports with certificates
// made at start-up.
//
// One control plane serves a whole test binary: the first Start starts it
// (about 20 s), later ones reuse it; give each test its own namespace with
// Cluster.Namespace. A test binary that uses it should have
//
//	func TestMain(m *testing.M) { k8stest.Main(m) }
//
// so that the control plane stops when the tests end; without it a watcher
// stops it when the test process exits.
//
// kwok pods run no container, so nothing listens on their IPs; a test that
// must reach them (a load sent to the pods) runs them on a LoopbackNode,
// whose pod network is on the loopback interface, and serves them itself
// on every address of it (LoopbackNode.Listen).
//
// What kwok cannot show (containers that really run, die and log) runs on
// a real node of scripts/k8s-node.sh (a kubelet and a containerd with a
// control plane of their own): StartNode returns it. The runner
// internal/k8stest/nodetests (make test, make test-node) starts one node
// for all the packages with such tests and points their test binaries at
// it (LLMCHAOS_K8S_NODE_DIR); a package run by hand with
// LLMCHAOS_REQUIRE_K8S_NODE=1 starts its own, which Run stops. Either
// checks after the stop that the host is as it was (hoststate).
//
// The binaries are built once per version into a cache outside the
// repository (scripts/k8s-controlplane.sh build, or make test-k8s). When they
// are not built, Start skips the test saying so, unless LLMCHAOS_REQUIRE_K8S=1
// (set by make test-k8s), where it fails it.
//
// llmchaos's informer (internal/kube/cache) never asks for watch-list
// streams, which the Debian etcd 3.4 under the apiserver cannot serve (its
// test checks the watches' query); client-go, which tests still use to set
// up clusters, does not ask for them either at v0.34 (set
// KUBE_FEATURE_WatchListClient=false if an upgrade turns them on).
package k8stest
