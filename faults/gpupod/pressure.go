package gpupod

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// MemoryPressure is the gpupod.memory_pressure fault.
type MemoryPressure struct {
	name, runID string
	p           PressureParams
	rng         *rand.Rand
	applied     func(string)
	onExit      func(error)
}

var _ faults.Fault = (*MemoryPressure)(nil)

func newMemoryPressure(env faults.BuildEnv, p PressureParams) *MemoryPressure {
	return &MemoryPressure{name: env.Name, runID: env.RunID, p: p, rng: env.Rand(), applied: env.OnApplied, onExit: env.OnHelperExit}
}

// Target describes where the fault acts, for the run's record.
func (f *MemoryPressure) Target() string {
	return fmt.Sprintf("GPUs of %s, select %s", f.p.PodTarget, f.p.Select)
}

func (f *MemoryPressure) wrap(err error) error {
	return fmt.Errorf("%s %q: %w", TypeMemoryPressure, f.name, err)
}

// Inject lists the target's pods, refuses them unless they opted in, picks
// some (a *faults.SelectionError when it cannot) and, for each, records a
// balloon pod's name in log and creates the pod on the target's node. It
// returns once every balloon runs; a balloon that fails first (no GPU, too
// little memory free, the device plugin has none left) fails the fault,
// and the balloons already made are deleted. While the fault holds, a
// balloon that ends is reported to the build environment's OnHelperExit.
// The Undo deletes the balloons and waits until they are gone.
func (f *MemoryPressure) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	cl, err := f.p.Access.Connect()
	if err != nil {
		return nil, f.wrap(err)
	}
	pods, err := f.p.PodTarget.Pods(ctx, cl.Client)
	if err != nil {
		return nil, f.wrap(err)
	}
	if err := kube.CheckOptIn(ctx, cl.Client, f.p.Namespace, pods); err != nil {
		return nil, f.wrap(err)
	}
	picked, err := faults.Choose(f.p.Select, f.rng, pods, func(p corev1.Pod) bool { return kube.PodReady(&p) })
	if err != nil {
		return nil, f.wrap(fmt.Errorf("%s: %w", f.p.PodTarget, err))
	}
	set := kube.Token()
	labels := kube.OwnedLabels(f.runID, f.name)
	labels[LabelBalloonSet] = set
	var (
		refs  []PodRef
		undos []faults.Undo
	)
	fail := func(err error) (faults.Undo, error) {
		undoCtx, cancel := withDefaultTimeout(context.WithoutCancel(ctx), deleteTimeout)
		defer cancel()
		if uerr := faults.JoinUndos(undos)(undoCtx); uerr != nil {
			return nil, f.wrap(fmt.Errorf("%w; and deleting the balloons made: %w: %w", err, faults.ErrUndoIncomplete, uerr))
		}
		return nil, f.wrap(err)
	}
	for i := range picked {
		target := &picked[i]
		pod := BalloonPod(f.p, target, kube.ObjectName("llmchaos-balloon", f.name), labels)
		ref := PodRef{Access: f.p.Access, Namespace: pod.Namespace, Name: pod.Name}
		if err := log.Will(ref.spec()); err != nil {
			return fail(err)
		}
		// Undone even when the create fails: a create that timed out may
		// have happened.
		undos = append(undos, func(ctx context.Context) error { return ref.delete(ctx, cl) })
		if _, err := cl.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: kube.ManagedBy}); err != nil {
			return fail(fmt.Errorf("create %s on node %s for pod %s: %w", ref, target.Spec.NodeName, target.Name, err))
		}
		refs = append(refs, ref)
	}
	selector := LabelBalloonSet + "=" + set
	waitCtx, cancel := context.WithTimeout(ctx, f.p.StartTimeout)
	var ended error
	_, err = kube.WaitPods(waitCtx, cl.Client, f.p.Namespace, selector, func(pods []*corev1.Pod) bool {
		if ended = balloonsEnded(pods, refs); ended != nil {
			return true
		}
		return kube.CountReady(pods) == len(refs)
	})
	cancel()
	if ended != nil {
		return fail(ended)
	}
	if err != nil {
		return fail(fmt.Errorf("the balloons did not all run within %s: %w", f.p.StartTimeout, err))
	}
	if f.applied != nil {
		for i, ref := range refs {
			f.applied(fmt.Sprintf("GPU of pod %s/%s on node %s (%s)", picked[i].Namespace, picked[i].Name, picked[i].Spec.NodeName, ref))
		}
	}
	stopWatch := f.watch(cl, selector, refs)
	undo := faults.JoinUndos(undos)
	return faults.JoinUndos([]faults.Undo{func(ctx context.Context) error {
		ctx, cancel := withDefaultTimeout(ctx, deleteTimeout)
		defer cancel()
		stopWatch()
		if err := undo(ctx); err != nil {
			return f.wrap(err)
		}
		return nil
	}}), nil
}

// watch reports to OnHelperExit the first balloon of refs that ends while
// the fault holds. The returned func stops the watch and waits for it.
func (f *MemoryPressure) watch(cl *kube.Cluster, selector string, refs []PodRef) (stop func()) {
	if f.onExit == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		var ended error
		_, err := kube.WaitPods(ctx, cl.Client, f.p.Namespace, selector, func(pods []*corev1.Pod) bool {
			ended = balloonsEnded(pods, refs)
			return ended != nil
		})
		if err == nil && ended != nil {
			f.onExit(f.wrap(ended))
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}

// balloonsEnded returns an error describing the first balloon of refs that
// is gone or ended (failed or exited), or nil while all of them are there.
func balloonsEnded(pods []*corev1.Pod, refs []PodRef) error {
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	var errs []error
	for _, r := range refs {
		p, ok := byName[r.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s is gone", r))
		case p.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("%s is being deleted", r))
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			errs = append(errs, fmt.Errorf("%s ended: %s", r, explain(p)))
		}
	}
	return errors.Join(errs...)
}

// explain says why a balloon pod ended: the kubelet's reason (the device
// plugin had no GPU left: OutOfnvidia.com/gpu) or the balloon's exit code
// and last words.
func explain(p *corev1.Pod) string {
	parts := []string{string(p.Status.Phase)}
	if p.Status.Reason != "" {
		parts = append(parts, p.Status.Reason)
	}
	if p.Status.Message != "" {
		parts = append(parts, p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			continue
		}
		switch t.ExitCode {
		case exitcode.NoGPUMemory:
			parts = append(parts, "exit 4: too little GPU memory free")
		case exitcode.NoGPU:
			parts = append(parts, "exit 5: no GPU in the container (an image without -tags cuda, or no GPU given to it)")
		default:
			parts = append(parts, fmt.Sprintf("exit %d %s", t.ExitCode, t.Reason))
		}
		if m := strings.TrimSpace(t.Message); m != "" {
			parts = append(parts, m)
		}
	}
	return strings.Join(parts, ": ")
}
