package k8stest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	k8smetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/appsv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/intstr"
	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
)

// Workload is a Deployment of pods on the kwok nodes, optionally behind a
// Service of the same name: what a serving replica set looks like to the
// API (the pods run no container: nothing listens on their IPs).
type Workload struct {
	// Name names the Deployment and the Service.
	Name string
	// Replicas is the Deployment's replica count.
	Replicas int32
	// Labels are the pods' labels, and the Deployment's and the Service's
	// selector.
	Labels map[string]string
	// PodLabels are more labels of the pods only (llmchaos.io/target).
	PodLabels map[string]string
	// Port is the container port named http (default 8000).
	Port int32
	// Service creates a Service selecting the pods, port Port to target
	// port http.
	Service bool
	// Node, when set, is the node the pods run on (a LoopbackNode's, the
	// real Node's), instead of any of the shared kwok nodes.
	Node string
	// Container, when set, is the pods' container (a real node runs it);
	// its port named http is added. Default: llmchaos:dev, which kwok's
	// pods never run.
	Container *corev1.Container
}

// Selector returns the label selector of w's pods.
func (w Workload) Selector() string { return labels.SelectorFromSet(w.Labels).String() }

// CreateWorkload creates w in namespace ns and waits until its Replicas
// pods are Running and Ready; it returns them, sorted by name.
func (c *Cluster) CreateWorkload(t testing.TB, ns string, w Workload) []*corev1.Pod {
	t.Helper()
	client := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if w.Port == 0 {
		w.Port = 8000
	}
	podLabels := maps.Clone(w.Labels)
	maps.Copy(podLabels, w.PodLabels)
	replicas := w.Replicas
	nodeSelector := map[string]string{"type": "kwok"}
	var tolerations []corev1.Toleration
	if w.Node != "" {
		nodeSelector = map[string]string{corev1.LabelHostname: w.Node}
		tolerations = []corev1.Toleration{{Key: LoopbackTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: w.Labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeSelector: nodeSelector,
					Tolerations:  tolerations,
					Containers:   []corev1.Container{container(w)},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("k8stest: creating deployment %s/%s: %v", ns, w.Name, err)
	}
	if w.Service {
		_, err = client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name},
			Spec: corev1.ServiceSpec{
				Selector: w.Labels,
				Ports:    []corev1.ServicePort{{Name: "http", Port: w.Port, TargetPort: intstr.FromString("http")}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("k8stest: creating service %s/%s: %v", ns, w.Name, err)
		}
	}
	pods, err := WaitPods(ctx, client, ns, w.Selector(), func(pods []*corev1.Pod) bool {
		n := 0
		for _, p := range pods {
			if kube.PodReady(p) {
				n++
			}
		}
		return n == int(w.Replicas) && len(pods) == int(w.Replicas)
	})
	if err != nil {
		t.Fatalf("k8stest: deployment %s/%s: %v", ns, w.Name, err)
	}
	return pods
}

// container is the container of w's pods.
func container(w Workload) corev1.Container {
	c := corev1.Container{Name: "sim", Image: "llmchaos:dev"}
	if w.Container != nil {
		c = *w.Container
	}
	c.Ports = append(slices.Clone(c.Ports), corev1.ContainerPort{Name: "http", ContainerPort: w.Port})
	return c
}

// SimContainer is a container that runs `llmchaos sim` of the node's image
// on port 8000, Ready once /health answers: a serving replica on the real
// node. args are more flags of sim.
func (n *Node) SimContainer(args ...string) *corev1.Container {
	return &corev1.Container{
		Name: "sim", Image: n.Image, ImagePullPolicy: corev1.PullNever,
		Args: append([]string{"sim", "--listen", "0.0.0.0:8000"}, args...),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000)}},
			PeriodSeconds: 1, FailureThreshold: 1,
		},
	}
}

// LabelNamespace sets label key=value on namespace ns.
func (c *Cluster) LabelNamespace(t testing.TB, ns, key, value string) {
	t.Helper()
	client := c.Client(t)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("k8stest: labelling namespace %s: %v", ns, err)
	}
}

// CreateServiceAccount creates service account name in namespace ns with a
// Role of rules bound to it (both named name too).
func (c *Cluster) CreateServiceAccount(t testing.TB, ns, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	client := c.Clientset(t) // RBAC: a group kube.Clientset does not reach
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := c.Client(t).CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("k8stest: service account %s/%s: %v", ns, name, err)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: k8smetav1.ObjectMeta{Name: name}, Rules: rules}, k8smetav1.CreateOptions{}); err != nil {
		t.Fatalf("k8stest: role %s/%s: %v", ns, name, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: k8smetav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name}}}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, rb, k8smetav1.CreateOptions{}); err != nil {
		t.Fatalf("k8stest: role binding %s/%s: %v", ns, name, err)
	}
}

// RulesFor returns the RBAC rules that allow calls and nothing else (a
// package's APICalls list).
func RulesFor(calls []kube.APICall) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, c := range calls {
		res := c.Resource
		if c.Subresource != "" {
			res += "/" + c.Subresource
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{c.Group}, Resources: []string{res}, Verbs: []string{c.Verb}})
	}
	return rules
}
