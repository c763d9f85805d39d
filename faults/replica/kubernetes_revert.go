package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// RevertSpec kinds of the kubernetes driver (faults.RevertSpec.Kind).
const (
	// KindPodAwaitReady: a pod that was deleted (killed or stopped). Its
	// data is a PodSpec; its reverter waits (up to the spec's timeout)
	// until as many pods of the selector are Ready as were before, the
	// deleted one not counted, and fails, saying so, when they are not.
	KindPodAwaitReady = "kubernetes-pod-await-ready"
	// KindRolloutAwait: a Deployment, StatefulSet or DaemonSet restarted.
	// Its data is a RolloutSpec; its reverter waits (up to the spec's
	// timeout) for the rollout to complete.
	KindRolloutAwait = "kubernetes-rollout-await"
)

// rolloutPoll is how often awaitRollout reads the controller's status.
const rolloutPoll = 200 * time.Millisecond

// revertPodAwaitReady is the Reverter of KindPodAwaitReady.
func revertPodAwaitReady(ctx context.Context, data json.RawMessage) error {
	var s PodSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindPodAwaitReady, err)
	}
	cl, err := kube.Connect(s.Kubeconfig, s.Context)
	if err != nil {
		return fmt.Errorf("%s of pod %s/%s: %w", KindPodAwaitReady, s.Pod.Namespace, s.Pod.Name, err)
	}
	return awaitReady(ctx, cl, s)
}

// revertRolloutAwait is the Reverter of KindRolloutAwait.
func revertRolloutAwait(ctx context.Context, data json.RawMessage) error {
	var s RolloutSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindRolloutAwait, err)
	}
	cl, err := kube.Connect(s.Kubeconfig, s.Context)
	if err != nil {
		return fmt.Errorf("%s of %s %s/%s: %w", KindRolloutAwait, s.Kind, s.Namespace, s.Name, err)
	}
	return awaitRollout(ctx, cl, s)
}

// awaitReady waits until s.Pod.ReadyPods pods of s.Selector other than
// s.Pod are Ready. A controller that is gone (deleted with its pods) counts
// as reverted: there is nothing left to bring back.
func awaitReady(ctx context.Context, cl *kube.Cluster, s PodSpec) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultBackTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	others := func(pods []*corev1.Pod) int {
		n := 0
		for _, p := range pods {
			if !kube.PodReady(p) {
				continue
			}
			// A pod whose containers were killed counts once the kubelet
			// has restarted them.
			if string(p.UID) != s.Pod.UID || s.InPlace && restarts(p) > s.RestartsBefore {
				n++
			}
		}
		return n
	}
	pods, err := kube.WaitPods(wctx, cl.Client, s.Pod.Namespace, s.Selector, func(pods []*corev1.Pod) bool {
		return others(pods) >= s.Pod.ReadyPods
	})
	if err == nil {
		return nil
	}
	if gone, gerr := ownerGone(context.WithoutCancel(ctx), cl, s.Pod); gerr == nil && gone {
		return nil
	}
	owner := "its controller"
	if s.Pod.OwnerKind != "" {
		owner = s.Pod.OwnerKind + " " + s.Pod.OwnerName
	}
	return fmt.Errorf("pod %s/%s was %s and %s has not brought the Ready pods of %q back to %d within %v (%d Ready now: %s): %w",
		s.Pod.Namespace, s.Pod.Name, actionPast(s.Action), owner, s.Selector, s.Pod.ReadyPods, timeout,
		others(pods), kube.DescribePods(pods), err)
}

// ownerGone reports whether pod's controller no longer exists.
func ownerGone(ctx context.Context, cl *kube.Cluster, pod PodRef) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	apps := cl.Client.AppsV1()
	var err error
	switch pod.OwnerKind {
	case "ReplicaSet":
		_, err = apps.ReplicaSets(pod.Namespace).Get(ctx, pod.OwnerName, metav1.GetOptions{})
	case "StatefulSet":
		_, err = apps.StatefulSets(pod.Namespace).Get(ctx, pod.OwnerName, metav1.GetOptions{})
	case "DaemonSet":
		_, err = apps.DaemonSets(pod.Namespace).Get(ctx, pod.OwnerName, metav1.GetOptions{})
	default:
		return false, nil
	}
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// awaitRollout waits until the controller s names has rolled out its
// current template to every replica, as `kubectl rollout status` judges
// it. A controller that is gone counts as reverted.
func awaitRollout(ctx context.Context, cl *kube.Cluster, s RolloutSpec) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultBackTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	state := "not read yet"
	var last error
	for {
		done, st, err := rolloutDone(ctx, cl, s)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			last = err
		case done:
			return nil
		default:
			state = st
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("%s %s/%s was restarted (pod %s picked) and its rollout has not completed within %v (%s)",
				s.Kind, s.Namespace, s.Name, s.Pod, timeout, state)
			if last != nil {
				err = fmt.Errorf("%w: %w", err, last)
			}
			return fmt.Errorf("%w: %w", err, context.Cause(ctx))
		case <-time.After(rolloutPoll):
		}
	}
}

// rolloutDone reads the controller's status once: whether its rollout is
// complete, and its state for messages.
func rolloutDone(ctx context.Context, cl *kube.Cluster, s RolloutSpec) (bool, string, error) {
	apps := cl.Client.AppsV1()
	switch s.Kind {
	case "Deployment":
		d, err := apps.Deployments(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		return d.Generation <= st.ObservedGeneration && st.UpdatedReplicas >= want && st.Replicas == st.UpdatedReplicas && st.AvailableReplicas >= want,
			fmt.Sprintf("%d of %d updated, %d pods, %d available", st.UpdatedReplicas, want, st.Replicas, st.AvailableReplicas), nil
	case "StatefulSet":
		ss, err := apps.StatefulSets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		want := int32(1)
		if ss.Spec.Replicas != nil {
			want = *ss.Spec.Replicas
		}
		st := ss.Status
		return ss.Generation <= st.ObservedGeneration && st.UpdatedReplicas >= want && st.ReadyReplicas >= want &&
				(st.UpdateRevision == "" || st.CurrentRevision == st.UpdateRevision),
			fmt.Sprintf("%d of %d updated, %d ready", st.UpdatedReplicas, want, st.ReadyReplicas), nil
	case "DaemonSet":
		ds, err := apps.DaemonSets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := ds.Status
		return ds.Generation <= st.ObservedGeneration && st.UpdatedNumberScheduled >= st.DesiredNumberScheduled && st.NumberAvailable >= st.DesiredNumberScheduled,
			fmt.Sprintf("%d of %d updated, %d available", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberAvailable), nil
	}
	return false, "", fmt.Errorf("%s spec: unknown kind %q", KindRolloutAwait, s.Kind)
}
