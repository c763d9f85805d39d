package kube

import (
	"fmt"
	"os"

	"github.com/llmchaos/llmchaos/internal/kube/dynamic"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// InClusterEnv is the variable Kubernetes sets in every container; when it
// is set and no kubeconfig or context is named, Connect uses the pod's
// service account.
const InClusterEnv = "KUBERNETES_SERVICE_HOST"

// Client limits: a run lists and watches a few kinds of object and creates,
// deletes or patches a few; client-go's default (5 requests per second,
// bursts of 10) would make a fault wait on the client rather than on the
// cluster.
const (
	clientQPS   = 50
	clientBurst = 100
)

// Access says how to reach a cluster: a kubeconfig file and context, or,
// when both are empty, as Connect finds one (in a pod its service account,
// else $KUBECONFIG or ~/.kube/config). Fault params embed it, so that the
// journal can reach the cluster again after a crash.
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

// Connect returns the cluster a names (Connect of its kubeconfig and
// context).
func (a Access) Connect() (*Cluster, error) { return Connect(a.Kubeconfig, a.Context) }

// Cluster is a connection to a cluster: its clients and the namespace a
// target that names none is in.
type Cluster struct {
	// Client is the typed clientset (pods, jobs, namespaces, ...).
	Client *Clientset
	// Dynamic reaches custom resources (Chaos Mesh's objects).
	Dynamic *dynamic.Client
	// Config is their configuration.
	Config *rest.Config
	// Namespace is the default namespace: the kubeconfig context's, in a
	// pod the pod's own, else "default".
	Namespace string
	// Source says where the configuration came from, for messages:
	// "in-cluster service account", "kubeconfig /path (context c)".
	Source string
}

// Connect returns the cluster that kubeconfig and kubeContext name. Both
// empty: in a pod (InClusterEnv set) the pod's service account, else
// $KUBECONFIG (a list of files, as kubectl reads it) or ~/.kube/config and
// its current context. It only builds the clients: nothing is sent to the
// cluster yet.
func Connect(kubeconfig, kubeContext string) (*Cluster, error) {
	if kubeconfig == "" && kubeContext == "" && os.Getenv(InClusterEnv) != "" {
		cfg, err := rest.InClusterConfig("")
		if err != nil {
			return nil, fmt.Errorf("kubernetes: in-cluster configuration (%s is set): %w", InClusterEnv, err)
		}
		ns := "default"
		if b, err := os.ReadFile(rest.ServiceAccountDir + "/namespace"); err == nil && len(b) > 0 {
			ns = string(b)
		}
		if v := os.Getenv("POD_NAMESPACE"); v != "" {
			ns = v
		}
		return newCluster(cfg, ns, "in-cluster service account")
	}
	source := "kubeconfig"
	switch {
	case kubeconfig != "":
		source += " " + kubeconfig
	case os.Getenv(rest.KubeconfigEnv) != "":
		source += " $" + rest.KubeconfigEnv
	default:
		source += " " + rest.DefaultKubeconfig()
	}
	if kubeContext != "" {
		source += " (context " + kubeContext + ")"
	}
	cfg, ns, err := rest.LoadKubeconfig(kubeconfig, kubeContext)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: %w (give kubeconfig and context, or run in a pod with a service account)", source, err)
	}
	return newCluster(cfg, ns, source)
}

// NewCluster returns the cluster of cfg (a test's control plane), its
// default namespace "default".
func NewCluster(cfg *rest.Config) (*Cluster, error) {
	return newCluster(cfg, "default", "given configuration")
}

func newCluster(cfg *rest.Config, ns, source string) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	cfg.UserAgent = "llmchaos"
	client, err := NewClientset(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: %w", source, err)
	}
	return &Cluster{Client: client, Dynamic: dynamic.New(client.REST()), Config: cfg, Namespace: ns, Source: source}, nil
}

// NamespaceOr returns ns, or the cluster's default namespace when ns is "".
func (c *Cluster) NamespaceOr(ns string) string {
	if ns != "" {
		return ns
	}
	return c.Namespace
}
