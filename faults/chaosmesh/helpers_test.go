package chaosmesh_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/appsv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/unstructured"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/dynamic"
)

// env is one test's cluster, namespace and clients.
type env struct {
	c    *k8stest.Cluster
	ns   string
	core *kube.Clientset
	dyn  *dynamic.Client
}

// newEnv starts (or reuses) the control plane and gives the test a
// namespace of its own, labelled opted in when optIn.
func newEnv(t *testing.T, optIn bool) *env {
	t.Helper()
	c := k8stest.Start(t)
	e := &env{c: c, ns: c.Namespace(t), core: c.Client(t)}
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	e.dyn = dyn
	if optIn {
		e.labelNamespace(t, kube.LabelTarget, "true")
	}
	return e
}

func (e *env) labelNamespace(t *testing.T, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := e.core.CoreV1().Namespaces().Patch(t.Context(), e.ns, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pods creates n pods labelled app=name (and with labels) on the kwok
// nodes and waits until they are Ready.
func (e *env) pods(t *testing.T, name string, n int, labels map[string]string) []*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i := range n {
		l := map[string]string{"app": name}
		for k, v := range labels {
			l[k] = v
		}
		_, err := e.core.CoreV1().Pods(e.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: l},
			Spec:       podSpec(),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	pods, err := k8stest.WaitPods(ctx, e.core, e.ns, "app="+name, allReady(n))
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// deployment creates a Deployment of n pods labelled app=name (and with
// labels) and waits until they are Ready.
func (e *env) deployment(t *testing.T, name string, n int32, labels map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := map[string]string{"app": name}
	for k, v := range labels {
		l[k] = v
	}
	_, err := e.core.AppsV1().Deployments(e.ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k8stest.WaitPods(ctx, e.core, e.ns, "app="+name, allReady(int(n))); err != nil {
		t.Fatal(err)
	}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{"type": "kwok"},
		Containers:   []corev1.Container{{Name: "vllm", Image: "llmchaos:dev"}},
	}
}

func allReady(n int) func([]*corev1.Pod) bool {
	return func(pods []*corev1.Pod) bool {
		ready := 0
		for _, p := range pods {
			if kube.PodReady(p) {
				ready++
			}
		}
		return ready == n && len(pods) == n
	}
}

// objects lists the Chaos Mesh objects of kind k in the test's namespace.
func (e *env) objects(t *testing.T, k chaosmesh.Kind) []unstructured.Unstructured {
	t.Helper()
	list, err := e.dyn.Resource(k.GVR()).Namespace(e.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", k.Resource, err)
	}
	return list.Items
}

// build builds a fault of type typ from params (as an experiment file
// gives them), with the test cluster's kubeconfig and namespace added.
func (e *env) build(t *testing.T, typ, name string, params map[string]any, env faults.BuildEnv) faults.Fault {
	t.Helper()
	ft := findType(t, typ)
	p := map[string]any{"kubeconfig": e.c.Kubeconfig, "namespace": e.ns}
	for k, v := range params {
		p[k] = v
	}
	v, err := spec.DecodeParams(0, spec.Fault{Name: name, Type: typ, Params: p}, ft, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ft.Check(v).Err(); err != nil {
		t.Fatalf("%s params %v: %v", typ, p, err)
	}
	env.Name = name
	if env.RunID == "" {
		env.RunID = "run-" + e.ns
	}
	f, err := ft.Build(env, v)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func findType(t *testing.T, typ string) faults.Type {
	t.Helper()
	for _, ft := range chaosmesh.Types() {
		if ft.Name == typ {
			return ft
		}
	}
	t.Fatalf("no fault type %s", typ)
	return faults.Type{}
}

// checkingLog is a RevertLog that records the specs it is given and, for
// each, checks that the object it names does not exist yet: the journal
// is written ahead of the change.
type checkingLog struct {
	t   *testing.T
	dyn *dynamic.Client

	mu    sync.Mutex
	specs []faults.RevertSpec
	early []string // objects that existed when their spec was recorded
}

func (l *checkingLog) Will(s faults.RevertSpec) error {
	var ref chaosmesh.ObjectRef
	if err := json.Unmarshal(s.Data, &ref); err != nil {
		return err
	}
	gvr := chaosmesh.Kind{Resource: ref.Resource}.GVR()
	_, err := l.dyn.Resource(gvr).Namespace(ref.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
	l.mu.Lock()
	defer l.mu.Unlock()
	if !apierrors.IsNotFound(err) {
		l.early = append(l.early, fmt.Sprintf("%s (get: %v)", ref, err))
	}
	l.specs = append(l.specs, s)
	return nil
}

// nested returns the value at path in obj, failing t when it is missing.
func nested(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !ok {
		t.Fatalf("no %v in %v (%v)", path, obj, err)
	}
	return v
}

func deepEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
