package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/fields"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// TestClientsetMakesEachCallOfItsResources drives every call of a Resource
// (create, get, list, watch, patch, patch of status, delete) against
// the control plane's API server, on a namespaced kind of the core group,
// a cluster-scoped one and one of another group, so that the request each
// builds (path, options, body) is the one the server expects.
func TestClientsetMakesEachCallOfItsResources(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pods := cl.CoreV1().Pods(ns)

	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "p").String()})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	created, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "client-test"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"type": "no-such-node"},
			Containers:   []corev1.Container{{Name: "c", Image: "llmchaos:dev"}},
		},
	}, metav1.CreateOptions{FieldManager: kube.ManagedBy})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if created.UID == "" || created.Spec.Containers[0].Image != "llmchaos:dev" {
		t.Fatalf("Create returned %+v, want the server's pod", created.ObjectMeta)
	}
	if !managedBy(created.ManagedFields, kube.ManagedBy) {
		t.Errorf("Create: managed fields %v, want manager %s (CreateOptions not sent)", created.ManagedFields, kube.ManagedBy)
	}
	select {
	case ev := <-w.ResultChan():
		if p, ok := ev.Object.(*corev1.Pod); ev.Type != watch.Added || !ok || p.UID != created.UID {
			t.Errorf("Watch: first event %s %T, want Added of the pod", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("Watch: no event for the created pod")
	}

	got, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("Get: %v, %v", got, err)
	}
	if _, err := pods.Get(ctx, "none", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing pod: %v, want NotFound", err)
	}
	for _, tc := range []struct {
		selector string
		want     int
	}{{"app=client-test", 1}, {"app=other", 0}} {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: tc.selector})
		if err != nil || len(list.Items) != tc.want {
			t.Errorf("List %s: %v pods, %v; want %d", tc.selector, list, err, tc.want)
		}
	}

	patched, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":"1"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Annotations["a"] != "1" {
		t.Fatalf("Patch: %v, %v", patched.Annotations, err)
	}
	// A patch of the status subresource, and a patch that names the
	// resource version it was made from: the server refuses it once the
	// pod changed since (the scheduler and the node's agent write it too).
	st, err := pods.Patch(ctx, "p", types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"llmchaos.io/test","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	if err != nil || !hasCondition(st, "llmchaos.io/test") {
		t.Fatalf("Patch of status: %v, %v", st, err)
	}
	stale := []byte(`{"metadata":{"resourceVersion":"` + created.ResourceVersion + `","labels":{"b":"2"}}}`)
	if _, err := pods.Patch(ctx, "p", types.MergePatchType, stale, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("Patch of a stale version: %v, want Conflict", err)
	}

	zero := int64(0)
	uid := types.UID("not-the-pod")
	err = pods.Delete(ctx, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if !apierrors.IsConflict(err) {
		t.Errorf("Delete with another UID: %v, want Conflict (DeleteOptions not sent)", err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get after Delete: %v, want NotFound", err)
	}

	// A cluster-scoped kind: the namespace itself.
	n, err := cl.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || n.Name != ns {
		t.Fatalf("namespace Get: %v, %v", n, err)
	}
	// Another group.
	jobs := cl.BatchV1().Jobs(ns)
	if _, err := jobs.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j"},
		Spec: batchv1.JobSpec{Suspend: ptr(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "llmchaos:dev"}},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Job Create: %v", err)
	}
	if list, err := jobs.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 || list.Items[0].Name != "j" {
		t.Fatalf("Job List: %v, %v", list, err)
	}
	if err := jobs.Delete(ctx, "j", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("Job Delete: %v", err)
	}
}

// TestServerResourcesForGroupVersionFindsServedKindsOnly: a group version
// the server serves lists its resources; one it does not serve is
// NotFound, which is how a fault learns that Chaos Mesh is not installed.
func TestServerResourcesForGroupVersionFindsServedKindsOnly(t *testing.T) {
	c := k8stest.Start(t)
	cl := c.Client(t)
	for _, tc := range []struct {
		gv, resource string
	}{{"v1", "pods"}, {"batch/v1", "jobs"}, {"discovery.k8s.io/v1", "endpointslices"}} {
		list, err := cl.ServerResourcesForGroupVersion(t.Context(), tc.gv)
		if err != nil {
			t.Errorf("%s: %v", tc.gv, err)
			continue
		}
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		if list.GroupVersion != tc.gv || !strings.Contains(" "+strings.Join(names, " ")+" ", " "+tc.resource+" ") {
			t.Errorf("%s: group version %q, resources %v; want %s among them", tc.gv, list.GroupVersion, names, tc.resource)
		}
	}
	if _, err := cl.ServerResourcesForGroupVersion(t.Context(), "chaos-mesh.org/v1alpha1"); !apierrors.IsNotFound(err) {
		t.Errorf("a group the server does not serve: %v, want NotFound", err)
	}
}

func managedBy(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager {
			return true
		}
	}
	return false
}

func hasCondition(p *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
