package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/faults/replica"
)

// kubeDoc is an experiment against Kubernetes pods whose replica fault
// leaves its target out (it takes the target's pods).
const kubeDoc = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: t}
target:
  kubernetes: {namespace: llm, selector: "app=vllm", service: vllm, port: 8000}
workload: {preset: chat, rate: 5, duration: 60s}
faults:
  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {select: {mode: one, min_available: 2}}}
thresholds:
  ttft: ["p(99)<500ms"]
`

// kubeEdit returns kubeDoc with line n (1-based) replaced by repl.
func kubeEdit(n int, repl string) string {
	lines := strings.Split(kubeDoc, "\n")
	lines[n-1] = repl
	return strings.Join(lines, "\n")
}

func TestValidateKubernetesTarget(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{name: "valid, a replica fault taking the target's pods", src: kubeDoc},
		{name: "no service: the pods' port", src: kubeEdit(5, `  kubernetes: {selector: "app=vllm", port: 8000}`)},
		{name: "url: the load goes to it", src: kubeEdit(5, `  kubernetes: {selector: "app=vllm", url: "http://127.0.0.1:8000/v1"}`)},
		{
			name: "no selector",
			src:  kubeEdit(5, `  kubernetes: {service: vllm}`),
			want: []string{
				`t.yaml:5:16: target.kubernetes.selector: missing: the label selector of the serving pods, e.g. app=vllm (the pods the replica faults act on and whose events the run records)`,
			},
		},
		{
			name: "bad names, selector, port and path",
			src:  kubeEdit(5, `  kubernetes: {namespace: LLM, selector: "app in (", service: 1vllm, port: 70000, path: v1}`),
			want: []string{
				`t.yaml:5:27: target.kubernetes.namespace: "LLM" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`t.yaml:5:42: target.kubernetes.selector: "app in (" is not a label selector: unable to parse requirement: found '', expected: ',', ')' or identifier`,
				`t.yaml:5:63: target.kubernetes.service: "1vllm" is not a Service name: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
				`t.yaml:5:76: target.kubernetes.port: 70000: want a port, 1 to 65535`,
				`t.yaml:5:89: target.kubernetes.path: "v1": want a path starting with /, e.g. /v1`,
			},
		},
		{
			name: "a selector of everything",
			src:  kubeEdit(5, `  kubernetes: {selector: " ", service: vllm}`),
			want: []string{
				`t.yaml:5:26: target.kubernetes.selector: missing: the label selector of the serving pods, e.g. app=vllm (the pods the replica faults act on and whose events the run records)`,
			},
		},
		{
			name: "no service and no port",
			src:  kubeEdit(5, `  kubernetes: {selector: "app=vllm"}`),
			want: []string{`t.yaml:5:16: target.kubernetes.port: missing: without a service, the port on the pods that serves the API (e.g. 8000 for vLLM)`},
		},
		{
			name: "port: 0",
			src:  kubeEdit(5, `  kubernetes: {selector: "app=vllm", service: vllm, port: 0}`),
			want: []string{`t.yaml:5:59: target.kubernetes.port: 0: want a port, 1 to 65535, or leave the key out`},
		},
		{
			name: "two target kinds",
			src:  kubeEdit(5, `  kubernetes: {selector: "app=vllm", service: vllm}`+"\n  llm: {url: \"http://127.0.0.1:8000/v1\"}"),
			want: []string{`t.yaml:5:3: target.kubernetes: target has both llm and kubernetes: keep one`},
		},
		{
			name: "a proxy fault without url",
			src:  kubeEdit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:24: faults[0].type: network.latency acts through a fault proxy in front of a fixed endpoint, and this target's pods come and go: set target.kubernetes.url (the Service through an Ingress, a LoadBalancer or a port-forward) to put the proxy in front of it`},
		},
		{
			name: "a proxy fault with url",
			src: strings.Replace(kubeEdit(5, `  kubernetes: {selector: "app=vllm", url: "http://127.0.0.1:8000/v1"}`), "faults:\n",
				"faults:\n  - {name: slow, type: network.latency, at: 40s, duration: 10s, params: {latency: 100ms}}\n", 1),
		},
		{
			name: "replica.pause on pods",
			src:  kubeEdit(8, "  - {name: kill, type: replica.pause, at: 10s, duration: 10s}"),
			want: []string{`t.yaml:8:6: faults[0].params.target: target: a pod cannot be paused through the Kubernetes API; use replica.stop, or Chaos Mesh's PodChaos`},
		},
		{
			name: "a kill with another signal",
			src:  kubeEdit(8, "  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {signal: SIGTERM}}"),
			want: []string{`t.yaml:8:79: faults[0].params.signal: signal: SIGTERM: the kubernetes driver sends a pod's containers SIGKILL; for SIGTERM and a grace period use replica.stop`},
		},
		{
			name: "a fault's own selector and namespace",
			src:  kubeEdit(8, "  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {target: {driver: kubernetes, namespace: other, selector: app=x}}}"),
		},
		{
			name: "a docker fault with a kubernetes target",
			src:  kubeEdit(8, "  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {target: {driver: docker, labels: {app: x}}}}"),
		},
		{
			name: "endpoint tag: a pod name",
			src:  strings.Replace(kubeDoc, `ttft: ["p(99)<500ms"]`, `"ttft{endpoint:vllm-5d4f8-abcde}": ["p(99)<1s"]`, 1),
		},
		{
			name: "endpoint tag: not a pod name",
			src:  strings.Replace(kubeDoc, `ttft: ["p(99)<500ms"]`, `"ttft{endpoint:\"http://x/v1\"}": ["p(99)<1s"]`, 1),
			want: []string{`t.yaml:10:20: thresholds["ttft{endpoint:\"http://x/v1\"}"]: endpoint:http://x/v1 selects nothing: a kubernetes target's results carry the name of the pod that served them, and "http://x/v1" is not a pod name`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemLines(t, tt.src)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}

// A replica fault that leaves its target out acts on the target's pods,
// in its namespace and cluster; one that names its own keeps it.
func TestKubernetesTargetFillsReplicaFaults(t *testing.T) {
	s, _, err := Parse("t.yaml", []byte(kubeEdit(5, `  kubernetes: {namespace: llm, selector: "app=vllm", service: vllm, kubeconfig: /k, context: c}`)))
	if err != nil {
		t.Fatal(err)
	}
	ft := FaultTypes()[s.Faults[0].Type]
	params, err := DecodeParamsIn(0, s.Faults[0], ft, s.EnvOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := *params.(interface{ Targets() *replica.TargetParams }).Targets()
	want := replica.TargetParams{Driver: replica.DriverKubernetes, Namespace: "llm", Selector: "app=vllm", Kubeconfig: "/k", Context: "c"}
	if got.Driver != want.Driver || got.Namespace != want.Namespace || got.Selector != want.Selector || got.Kubeconfig != want.Kubeconfig || got.Context != want.Context {
		t.Errorf("target = %+v, want %+v", got, want)
	}

	own := replica.TargetParams{Driver: replica.DriverKubernetes, Selector: "app=x"}.OrKubernetes(s.Target.Kubernetes.Env())
	if own.Selector != "app=x" || own.Namespace != "" || own.Kubeconfig != "/k" {
		t.Errorf("a fault's own selector: %+v, want its selector, no namespace of the target's (the context's), the target's cluster", own)
	}
	docker := replica.TargetParams{Driver: replica.DriverDocker, Labels: map[string]string{"a": "b"}}.OrKubernetes(s.Target.Kubernetes.Env())
	if docker.Driver != replica.DriverDocker || docker.Selector != "" {
		t.Errorf("a docker target: %+v, want it unchanged", docker)
	}

	d := s.WithDefaults()
	if d.Target.Kubernetes.Path != DefaultKubernetesPath {
		t.Errorf("path default = %q, want %q", d.Target.Kubernetes.Path, DefaultKubernetesPath)
	}
}
