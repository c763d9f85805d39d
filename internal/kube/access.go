package kube

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client rate limits: a fault or a shard job makes a handful of calls, but
// client-go's defaults (5 per second, bursts of 10) would make a wait on a
// watch and a few creates queue behind each other.
const (
	clientQPS   = 50
	clientBurst = 100
)

// Access says how to reach a cluster: a kubeconfig file and context, or,
// when both are empty, the usual places (KUBECONFIG, ~/.kube/config) and,
// inside a pod, the pod's service account. Fault params embed it, so
// that the journal can reach the cluster again after a crash.
type Access struct {
	// Kubeconfig is the kubeconfig file ("" for the default rules).
	Kubeconfig string `json:"kubeconfig,omitempty" yaml:"kubeconfig,omitempty" doc:"kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account in a cluster)"`
	// Context is the kubeconfig context ("" for its current one).
	Context string `json:"context,omitempty" yaml:"context,omitempty" doc:"kubeconfig context (default: its current context)"`
}

// String describes a for errors: the file and context it names.
func (a Access) String() string {
	file, ctx := a.Kubeconfig, a.Context
	if file == "" {
		file = "the default kubeconfig"
	}
	if ctx == "" {
		return file
	}
	return file + " context " + ctx
}

// Config returns the client configuration a names: its kubeconfig and
// context, else the default loading rules, else the in-cluster service
// account.
func (a Access) Config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = a.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: a.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration from %s: %w (give kubeconfig and context, or run in a pod with a service account)", a, err)
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.UserAgent = "llmchaos"
	return cfg, nil
}

// Clients are the clients of one cluster that llmchaos uses.
type Clients struct {
	// Config is the configuration they were made from.
	Config *rest.Config
	// Core is the typed clientset (pods, jobs, namespaces).
	Core kubernetes.Interface
	// Dynamic reaches custom resources (Chaos Mesh's objects).
	Dynamic dynamic.Interface
	// Discovery tells which APIs the cluster serves.
	Discovery discovery.DiscoveryInterface
}

// NewClients makes the clients of cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return &Clients{Config: cfg, Core: core, Dynamic: dyn, Discovery: core.Discovery()}, nil
}

// Clients returns the clients of the cluster a names.
func (a Access) Clients() (*Clients, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	return NewClients(cfg)
}
