package chaosmesh

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
	"github.com/llmchaos/llmchaos/internal/kube/api/unstructured"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// Chaos Mesh's API group and version.
const (
	Group   = "chaos-mesh.org"
	Version = "v1alpha1"
)

// Kind is one Chaos Mesh kind this family creates.
type Kind struct {
	// Name is the kind (NetworkChaos).
	Name string
	// Resource is its plural resource name (networkchaos).
	Resource string
}

// The kinds this family creates.
var (
	NetworkChaos = Kind{Name: "NetworkChaos", Resource: "networkchaos"}
	PodChaos     = Kind{Name: "PodChaos", Resource: "podchaos"}
	StressChaos  = Kind{Name: "StressChaos", Resource: "stresschaos"}
)

// Kinds returns every kind this family creates.
func Kinds() []Kind { return []Kind{NetworkChaos, PodChaos, StressChaos} }

// GVR returns k's group, version and resource.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: k.Resource}
}

// ErrNotInstalled is wrapped by the error of a fault whose cluster does
// not serve Chaos Mesh's API.
var ErrNotInstalled = errors.New("Chaos Mesh is not installed in this cluster")

// objectTimeout bounds an Undo or a Reverter that is given a context
// without a deadline.
const objectTimeout = 2 * time.Minute

// DefaultBackTimeout bounds how long the revert of an instantaneous fault
// (a container kill) waits for the pods' owners to bring as many Ready pods
// back as there were before.
const DefaultBackTimeout = 2 * time.Minute

// Fault is one Chaos Mesh fault, ready to inject: it picks its pods and
// creates one object naming them.
type Fault struct {
	typ, name, runID string
	lifetime         faults.Lifetime
	c                Chaos
	rng              *rand.Rand
	applied          func(string)
}

var _ faults.Fault = (*Fault)(nil)

func newFault(typ string, lifetime faults.Lifetime, env faults.BuildEnv, c Chaos) *Fault {
	return &Fault{typ: typ, name: env.Name, runID: env.RunID, lifetime: lifetime, c: c, rng: env.Rand(), applied: env.OnApplied}
}

// Target describes where the fault acts, for the run's record.
func (f *Fault) Target() string {
	return fmt.Sprintf("%s, select %s (%s)", f.c.Target.PodTarget, f.c.Target.Select, f.c.Kind.Name)
}

// Chaos returns what the fault creates.
func (f *Fault) Chaos() Chaos { return f.c }

func (f *Fault) wrap(err error) error { return fmt.Errorf("%s %q: %w", f.typ, f.name, err) }

// Inject checks that the cluster serves Chaos Mesh's kind, lists the pods
// of the target, refuses them unless they opted in, picks some (a
// *faults.SelectionError when it cannot), records the object's name in log
// and creates the object. The Undo deletes it and waits until it is gone;
// for an instantaneous fault it then waits (BackTimeout) until the
// selector has as many Ready pods as before. Inject must not run
// concurrently with itself (its seeded source).
func (f *Fault) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	t := f.c.Target
	cl, err := t.Access.Connect()
	if err != nil {
		return nil, f.wrap(err)
	}
	if err := checkInstalled(ctx, cl, f.c.Kind); err != nil {
		return nil, f.wrap(err)
	}
	pods, err := t.PodTarget.Pods(ctx, cl.Client)
	if err != nil {
		return nil, f.wrap(err)
	}
	if err := kube.CheckOptIn(ctx, cl.Client, t.Namespace, pods); err != nil {
		return nil, f.wrap(err)
	}
	picked, err := faults.Choose(t.Select, f.rng, pods, func(p corev1.Pod) bool { return kube.PodReady(&p) })
	if err != nil {
		return nil, f.wrap(fmt.Errorf("%s: %w; pods: %s", t.PodTarget, err, describePods(pods)))
	}
	readyBefore := countReady(pods)
	names := make([]string, len(picked))
	for i, p := range picked {
		names[i] = p.Name
	}
	obj := f.object(names)
	ref := ObjectRef{Access: t.Access, Kind: f.c.Kind.Name, Resource: f.c.Kind.Resource, Namespace: t.Namespace, Name: obj.GetName()}
	if err := log.Will(ref.spec()); err != nil {
		return nil, f.wrap(err)
	}
	res := cl.Dynamic.Resource(f.c.Kind.GVR()).Namespace(t.Namespace)
	if _, err := res.Create(ctx, obj, metav1.CreateOptions{FieldManager: kube.ManagedBy}); err != nil {
		// A create that timed out may still have happened: delete what
		// may be there before saying that nothing was changed.
		undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), objectTimeout)
		defer cancel()
		if derr := ref.delete(undoCtx, cl); derr != nil {
			return nil, f.wrap(fmt.Errorf("create %s: %w; and removing it again: %w: %w", ref, err, faults.ErrUndoIncomplete, derr))
		}
		return nil, f.wrap(fmt.Errorf("create %s: %w", ref, err))
	}
	if f.applied != nil {
		for _, n := range names {
			f.applied(fmt.Sprintf("pod %s/%s (%s)", t.Namespace, n, ref))
		}
	}
	undo := func(ctx context.Context) error {
		ctx, cancel := withDefaultTimeout(ctx, objectTimeout)
		defer cancel()
		if err := ref.delete(ctx, cl); err != nil {
			return f.wrap(err)
		}
		if f.lifetime == faults.Instantaneous {
			if err := waitReady(ctx, cl, t.PodTarget, readyBefore, f.c.BackTimeout); err != nil {
				return f.wrap(err)
			}
		}
		return nil
	}
	return onlyOnce(undo), nil
}

// object returns the Chaos Mesh object that acts on pods names.
func (f *Fault) object(names []string) *unstructured.Unstructured {
	t := f.c.Target
	spec := map[string]any{
		"mode": "all",
		"selector": map[string]any{
			"namespaces": []any{t.Namespace},
			"pods":       map[string]any{t.Namespace: toAny(names)},
		},
	}
	if t.MaxDuration > 0 {
		spec["duration"] = t.MaxDuration.String()
	}
	for k, v := range f.c.Fields {
		spec[k] = v
	}
	labels := map[string]any{}
	for k, v := range kube.OwnedLabels(f.runID, f.name) {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       f.c.Kind.Name,
		"metadata": map[string]any{
			"name":      kube.ObjectName("llmchaos", f.name),
			"namespace": t.Namespace,
			"labels":    labels,
			"annotations": map[string]any{
				"llmchaos.io/fault-type": f.typ,
			},
		},
		"spec": spec,
	}}
}

// checkInstalled returns an error wrapping ErrNotInstalled unless the
// cluster serves k.
func checkInstalled(ctx context.Context, cl *kube.Cluster, k Kind) error {
	gv := Group + "/" + Version
	list, err := cl.Client.ServerResourcesForGroupVersion(ctx, gv)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: the cluster serves no %s API (install Chaos Mesh, e.g. with its Helm chart, or use the proxy's network faults)", ErrNotInstalled, gv)
	}
	if err != nil {
		return fmt.Errorf("ask the cluster whether it serves %s (Chaos Mesh): %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == k.Resource {
			return nil
		}
	}
	return fmt.Errorf("%w: %s has no %s resource (%s); install a Chaos Mesh version that has it", ErrNotInstalled, gv, k.Resource, k.Name)
}

// waitReady waits, up to timeout, until at least want pods of t are Ready.
func waitReady(ctx context.Context, cl *kube.Cluster, t kube.PodTarget, want int, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultBackTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := t.Wait(ctx, cl.Client, func(pods []*corev1.Pod) bool { return kube.CountReady(pods) >= want })
	if err != nil {
		return fmt.Errorf("%s: not back to %d Ready within %s: %w", t, want, timeout, err)
	}
	return nil
}

func countReady(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if kube.PodReady(&pods[i]) {
			n++
		}
	}
	return n
}

// describePods lists pods with their readiness, for errors.
func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	parts := make([]string, len(pods))
	for i := range pods {
		state := "not ready"
		if kube.PodReady(&pods[i]) {
			state = "ready"
		}
		parts[i] = pods[i].Name + " " + state
	}
	return strings.Join(parts, ", ")
}

// withDefaultTimeout bounds ctx by d unless it has a deadline already.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// onlyOnce makes undo idempotent: once it succeeded, later calls return nil.
func onlyOnce(undo faults.Undo) faults.Undo { return faults.JoinUndos([]faults.Undo{undo}) }
