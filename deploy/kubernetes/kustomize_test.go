package kubernetes_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/discoveryv1"
)

// namespace is the namespace the kustomization puts everything in.
const namespace = "llmchaos"

// render runs kustomize over this directory, as `kubectl apply -k` does.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), ".")
	if err != nil {
		t.Fatalf("kustomize: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// TestExperimentIsTheCatalogs: the ConfigMap's experiment is the catalog's
// k8s-network-delay.yaml (kustomize reads only files under its directory,
// so it is a copy; cp experiments/catalog/k8s-network-delay.yaml
// deploy/kubernetes/experiment.yaml after changing it).
func TestExperimentIsTheCatalogs(t *testing.T) {
	a, err := os.ReadFile("experiment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../experiments/catalog/k8s-network-delay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("deploy/kubernetes/experiment.yaml differs from experiments/catalog/k8s-network-delay.yaml: cp the catalog's over it")
	}
}

// TestRender: kustomize renders the namespace, the RBAC, the simulator and
// the run Job, all in namespace llmchaos, with the image set, the
// experiment in a ConfigMap whose generated name the Job mounts, and the
// simulator's pods opted in to faults.
func TestRender(t *testing.T) {
	objs := render(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
		scoped := !slices.Contains([]string{"Namespace", "ClusterRole", "ClusterRoleBinding"}, o.GetKind())
		if scoped && o.GetNamespace() != namespace {
			t.Errorf("%s/%s in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), namespace)
		}
	}
	slices.Sort(kinds)
	cm := find(t, objs, "ConfigMap", "")
	want := []string{"ClusterRole/llmchaos-target-namespaces", "ClusterRoleBinding/llmchaos-target-namespaces", "ConfigMap/" + cm.GetName(),
		"Deployment/sim", "Job/llmchaos-run", "Namespace/llmchaos", "Role/llmchaos", "Role/llmchaos-load", "RoleBinding/llmchaos", "RoleBinding/llmchaos-load",
		"Service/sim", "ServiceAccount/llmchaos", "ServiceAccount/llmchaos-load"}
	if !slices.Equal(kinds, want) {
		t.Errorf("rendered %q\nwant %q", kinds, want)
	}
	if !strings.HasPrefix(cm.GetName(), "llmchaos-experiment-") {
		t.Errorf("ConfigMap %s: want the generated llmchaos-experiment-HASH", cm.GetName())
	}
	exp, _, _ := unstructured.NestedString(cm.Object, "data", "experiment.yaml")
	if !strings.Contains(exp, "type: chaosmesh.delay") {
		t.Errorf("ConfigMap data: %q", exp)
	}
	job := find(t, objs, "Job", "llmchaos-run")
	vols, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "volumes")
	if name, _, _ := unstructured.NestedString(vols[0].(map[string]any), "configMap", "name"); name != cm.GetName() {
		t.Errorf("the Job mounts ConfigMap %q, want %q", name, cm.GetName())
	}
	for _, o := range []*unstructured.Unstructured{job, find(t, objs, "Deployment", "sim")} {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if img, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image"); img != "llmchaos:dev" {
			t.Errorf("%s image %q, want llmchaos:dev", o.GetName(), img)
		}
	}
	sim := find(t, objs, "Deployment", "sim")
	if l, _, _ := unstructured.NestedString(sim.Object, "spec", "template", "metadata", "labels", kube.LabelTarget); l != "true" {
		t.Errorf("the simulator's pods are not opted in (%s)", kube.LabelTarget)
	}
}

// apply applies objs server-side as field manager llmchaos-test, in order
// (the namespace first, as kustomize orders it).
func apply(t *testing.T, c *k8stest.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	cfg := c.ClientGoConfig()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(disc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		body, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			res = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		force := true
		if _, err := res.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "llmchaos-test", Force: &force}); err != nil {
			t.Fatalf("apply %s %s: %v", gvk.Kind, o.GetName(), err)
		}
	}
}

// TestApplyServerSide: the rendered objects apply server-side to the test
// control plane, twice (the second apply changes nothing and fails
// nothing), and run: the simulator's two pods become Ready and the
// Service's EndpointSlices list them; the Job makes its pod.
func TestApplyServerSide(t *testing.T) {
	c := k8stest.Start(t)
	objs := render(t)
	apply(t, c, objs)
	apply(t, c, objs)
	core := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pods, err := k8stest.WaitPods(ctx, core, namespace, "app.kubernetes.io/name=llmchaos-sim", func(pods []*corev1.Pod) bool {
		return len(pods) == 2 && kube.PodReady(pods[0]) && kube.PodReady(pods[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k8stest.WaitEndpointSlices(ctx, core, namespace, "sim", func(eps []*discoveryv1.EndpointSlice) bool {
		return len(k8stest.ReadyAddresses(eps)) == 2
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
			t.Errorf("sim pod %s mounts a service account token", p.Name)
		}
	}
	if _, err := k8stest.WaitPods(ctx, core, namespace, "app.kubernetes.io/name=llmchaos-run", func(pods []*corev1.Pod) bool {
		return len(pods) == 1 && pods[0].Spec.ServiceAccountName == "llmchaos"
	}); err != nil {
		t.Fatal(err)
	}
}
