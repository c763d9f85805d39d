package spec

import (
	"maps"
	"strings"

	"github.com/llmchaos/llmchaos/faults"
)

// DefaultKubernetesPath is target.kubernetes.path when left out: the path
// of the OpenAI API on each pod (vLLM's).
const DefaultKubernetesPath = "/v1"

// KubernetesTarget is a service that runs as pods of a Kubernetes cluster:
//
//	target:
//	  kubernetes: {namespace: llm, selector: "app=vllm", service: vllm, port: 8000, path: /v1}
//
// Its endpoints are the ready addresses of Service's EndpointSlices (or,
// without a service, the IPs of the Ready pods Selector matches), on Port,
// each one's base URL http://IP:PORT/PATH. They are re-discovered while the
// run goes on: a pod killed and replaced shows as a new endpoint, and
// results carry the pod's name as their endpoint tag. With URL, every
// request goes to URL instead (an Ingress, a LoadBalancer, a port-forward:
// a runner outside the cluster that cannot reach pod IPs), while the
// replica faults and the recorded events still act on and watch the pods.
//
// The replica faults (replica.kill, replica.stop, replica.restart) that
// leave their target out act on the pods Selector matches in Namespace
// (Env); only pods that carry the label llmchaos.io/target=true, or whose
// namespace does, are ever touched.
//
// The cluster is the one of Kubeconfig and Context; both unset: the pod's
// service account when the runner runs in a pod (KUBERNETES_SERVICE_HOST
// is set), else $KUBECONFIG or ~/.kube/config and its current context.
type KubernetesTarget struct {
	Namespace  string            `yaml:"namespace,omitempty" json:"namespace,omitempty" doc:"Namespace of the pods and the Service. Default: the kubeconfig context's namespace (in a pod, the pod's own), else default."`
	Selector   string            `yaml:"selector" json:"selector" doc:"Label selector of the serving pods, e.g. app=vllm: the pods replica faults act on and whose status changes and events the run records."`
	Service    string            `yaml:"service,omitempty" json:"service,omitempty" doc:"Service whose EndpointSlices list the endpoints (their ready addresses). Unset: the IPs of the Ready pods the selector matches."`
	Port       int               `yaml:"port,omitempty" json:"port,omitempty" doc:"Port on the pods that serves the API (the Service's target port). Default: the EndpointSlices' port when they list one (or one named http); required without service."`
	Path       string            `yaml:"path,omitempty" json:"path,omitempty" doc:"Path of the OpenAI API on each endpoint. Default /v1."`
	URL        string            `yaml:"url,omitempty" json:"url,omitempty" doc:"Send every request to this base URL (an Ingress, a LoadBalancer, a port-forward, e.g. http://127.0.0.1:8000/v1) instead of the pods; faults and events still act on the pods."`
	Kubeconfig string            `yaml:"kubeconfig,omitempty" json:"kubeconfig,omitempty" doc:"Path of the kubeconfig file. Default: in a pod its service account, else $KUBECONFIG, else ~/.kube/config."`
	Context    string            `yaml:"context,omitempty" json:"context,omitempty" doc:"kubeconfig context. Default: the current context."`
	Model      string            `yaml:"model,omitempty" json:"model,omitempty" doc:"Model name sent in requests. Default: the first model /v1/models lists."`
	APIKeyEnv  string            `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty" doc:"Name of the environment variable that holds the API key (sent as a bearer token). Keys never go in the file."`
	Headers    map[string]string `yaml:"headers,omitempty" json:"headers,omitempty" doc:"Extra HTTP headers sent with every request (not Authorization: use api_key_env). With workload.shards they reach the shard pods as llmchaos load flags, so their values are in the Job's spec."`
	// APIKeySecret names the Secret (NAME/KEY, in Namespace) the shard
	// pods of workload.shards read the API key from: they cannot read
	// the runner's environment.
	APIKeySecret string `yaml:"api_key_secret,omitempty" json:"api_key_secret,omitempty" doc:"NAME/KEY of a Secret in the namespace holding the API key, for the shard pods of workload.shards (the runner itself reads api_key_env; the pods get the Secret's value in that variable). Required with api_key_env and shards above 1."`
}

// SplitAPIKeySecret returns the Secret's name and key of APIKeySecret
// (NAME/KEY), and whether it has that form.
func (t KubernetesTarget) SplitAPIKeySecret() (name, key string, ok bool) {
	name, key, ok = strings.Cut(t.APIKeySecret, "/")
	return name, key, ok && name != "" && key != "" && !strings.Contains(key, "/")
}

// WithDefaults returns t with its defaults filled in: path /v1.
// Spec.WithDefaults calls it.
func (t KubernetesTarget) WithDefaults() KubernetesTarget {
	if t.Path == "" {
		t.Path = DefaultKubernetesPath
	}
	t.Headers = maps.Clone(t.Headers)
	return t
}

// Env returns what the target gives replica faults that leave their
// target out (faults.Type.FromKubernetes): its pods and its cluster.
func (t KubernetesTarget) Env() faults.KubernetesEnv {
	return faults.KubernetesEnv{Namespace: t.Namespace, Selector: t.Selector, Kubeconfig: t.Kubeconfig, Context: t.Context}
}

// Client returns the target's client settings (model, key, headers) as an
// llm target, with URL as its url ("" when the load goes to the pods).
func (t KubernetesTarget) Client() LLMTarget {
	return LLMTarget{URL: t.URL, Model: t.Model, APIKeyEnv: t.APIKeyEnv, Headers: maps.Clone(t.Headers)}
}

// ModelKey is the key that names the model of an llm or kubernetes
// target, for messages that ask for it.
func (t Target) ModelKey() string {
	if t.Kubernetes != nil {
		return "target.kubernetes.model"
	}
	return "target.llm.model"
}

// Client returns the client settings of an llm or kubernetes target (nil
// for the simulator): the model, the key's variable and the headers that
// every request of the load carries.
func (t Target) Client() *LLMTarget {
	switch {
	case t.LLM != nil:
		return t.LLM
	case t.Kubernetes != nil:
		c := t.Kubernetes.Client()
		return &c
	}
	return nil
}
