// Package chaosmeshtest defines Chaos Mesh's kinds in a test cluster
// (internal/k8stest) without Chaos Mesh: minimal CustomResourceDefinitions
// of NetworkChaos, PodChaos and StressChaos that keep any spec
// (x-kubernetes-preserve-unknown-fields), so that faults/chaosmesh's
// objects can be created, read and deleted as in a cluster with Chaos Mesh;
// nothing acts on them.
package chaosmeshtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
	"github.com/llmchaos/llmchaos/internal/kube/api/unstructured"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/dynamic"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// crdGVR is the resource of CustomResourceDefinitions.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitTimeout bounds each wait for the apiserver to serve or drop a kind.
const waitTimeout = 60 * time.Second

// crd returns the minimal CustomResourceDefinition of k.
func crd(k chaosmesh.Kind) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": k.Resource + "." + chaosmesh.Group},
		"spec": map[string]any{
			"group": chaosmesh.Group,
			"scope": "Namespaced",
			"names": map[string]any{"kind": k.Name, "listKind": k.Name + "List", "plural": k.Resource, "singular": k.Resource},
			"versions": []any{map[string]any{
				"name": chaosmesh.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}

// Install defines Chaos Mesh's kinds in the cluster of cfg (those already
// defined are kept) and waits until the apiserver serves them all.
func Install(t testing.TB, cfg *rest.Config) {
	t.Helper()
	dyn, disc := clients(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout) // not t.Context(): also used in Cleanup
	defer cancel()
	for _, k := range chaosmesh.Kinds() {
		_, err := dyn.Resource(crdGVR).Create(ctx, crd(k), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("chaosmeshtest: define %s: %v", k.Name, err)
		}
	}
	if err := waitServed(ctx, disc, true); err != nil {
		t.Fatalf("chaosmeshtest: %v", err)
	}
}

// Uninstall removes Chaos Mesh's kinds from the cluster of cfg, as in a
// cluster without Chaos Mesh, and waits until the apiserver no longer
// serves them.
func Uninstall(t testing.TB, cfg *rest.Config) {
	t.Helper()
	dyn, disc := clients(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout) // not t.Context(): also used in Cleanup
	defer cancel()
	for _, k := range chaosmesh.Kinds() {
		err := dyn.Resource(crdGVR).Delete(ctx, k.Resource+"."+chaosmesh.Group, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("chaosmeshtest: remove %s: %v", k.Name, err)
		}
	}
	if err := waitServed(ctx, disc, false); err != nil {
		t.Fatalf("chaosmeshtest: %v", err)
	}
}

func clients(t testing.TB, cfg *rest.Config) (*dynamic.Client, *kube.Clientset) {
	t.Helper()
	client, err := kube.NewClientset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dynamic.New(client.REST()), client
}

// waitServed waits until discovery lists every kind (served) or none of
// them (!served). Discovery has no watch; the apiserver updates it within
// a second of a CRD's change, so this looks again every 100 ms.
func waitServed(ctx context.Context, disc *kube.Clientset, served bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := servedKinds(ctx, disc)
		if err == nil && (served && n == len(chaosmesh.Kinds()) || !served && n == 0) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s: %d of %d kinds served (want served=%t), last error %v: %w",
				chaosmesh.Group, chaosmesh.Version, n, len(chaosmesh.Kinds()), served, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// servedKinds counts the kinds of chaosmesh.Kinds that discovery lists.
func servedKinds(ctx context.Context, disc *kube.Clientset) (int, error) {
	list, err := disc.ServerResourcesForGroupVersion(ctx, chaosmesh.Group+"/"+chaosmesh.Version)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range chaosmesh.Kinds() {
		for _, r := range list.APIResources {
			if r.Name == k.Resource {
				n++
			}
		}
	}
	return n, nil
}
