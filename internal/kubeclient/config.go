package kubeclient

import (
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// InClusterEnv is the variable Kubernetes sets in every container; when it
// is set and no kubeconfig or context is named, Config uses the pod's
// service account.
const InClusterEnv = "KUBERNETES_SERVICE_HOST"

// Client limits: a run lists and watches a few kinds of object and deletes
// or patches a few; client-go's default (5 requests per second) would make
// a fault wait on the client rather than on the cluster.
const (
	clientQPS   = 50
	clientBurst = 100
)

// Cluster is a connection to a cluster: a clientset and the namespace a
// target that names none is in.
type Cluster struct {
	// Client is the clientset.
	Client kubernetes.Interface
	// Config is its configuration.
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
// its current context. It only builds the client: nothing is sent to the
// cluster yet.
func Connect(kubeconfig, kubeContext string) (*Cluster, error) {
	if kubeconfig == "" && kubeContext == "" && os.Getenv(InClusterEnv) != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes: in-cluster configuration (%s is set): %w", InClusterEnv, err)
		}
		ns := "default"
		if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
			ns = string(b)
		}
		if v := os.Getenv("POD_NAMESPACE"); v != "" {
			ns = v
		}
		return newCluster(cfg, ns, "in-cluster service account")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	source := "kubeconfig"
	switch {
	case kubeconfig != "":
		source += " " + kubeconfig
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		source += " $" + clientcmd.RecommendedConfigPathEnvVar
	default:
		source += " " + clientcmd.RecommendedHomeFile
	}
	if kubeContext != "" {
		source += " (context " + kubeContext + ")"
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: %w", source, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: namespace: %w", source, err)
	}
	return newCluster(cfg, ns, source)
}

func newCluster(cfg *rest.Config, ns, source string) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	cfg.UserAgent = "llmchaos"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: %w", source, err)
	}
	return &Cluster{Client: client, Config: cfg, Namespace: ns, Source: source}, nil
}

// NamespaceOr returns ns, or the cluster's default namespace when ns is "".
func (c *Cluster) NamespaceOr(ns string) string {
	if ns != "" {
		return ns
	}
	return c.Namespace
}
