package replica

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// ImageEnv names the environment variable that gives replica.kill's
// signal pod its llmchaos image when the fault's params have none.
const ImageEnv = "LLMCHAOS_IMAGE"

// signalPodTimeout bounds how long a kill waits for its signal pod to run
// and end (scheduled on the node, its image there, the signal sent).
const signalPodTimeout = 60 * time.Second

// killContainers sends SIGKILL to every process of the pod t's containers
// from a short-lived pod on its node (see SignalContainers), then waits,
// as Undo, until the pod's containers have been restarted by the kubelet
// (its restartPolicy) or the pod replaced by its controller, and as many
// pods of the selector are Ready as before.
func (k *Kubernetes) killContainers(ctx context.Context, cl *kube.Cluster, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	image := a.Image
	if image == "" {
		image = os.Getenv(ImageEnv)
	}
	if image == "" {
		return nil, fmt.Errorf("replica.kill on pod %s/%s sends SIGKILL from a pod on its node that runs the llmchaos image: give params.image or set %s (via: engine deletes the pod with grace 0 instead: the kubelet then sends SIGTERM and kills after 2 s)", t.Pod.Namespace, t.Pod.Name, ImageEnv)
	}
	pods := cl.Client.CoreV1().Pods(t.Pod.Namespace)
	pod, err := pods.Get(ctx, t.Pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && string(pod.UID) != t.Pod.UID:
		return nil, fmt.Errorf("pod %s/%s (uid %s) is gone: %w", t.Pod.Namespace, t.Pod.Name, t.Pod.UID, ErrGone)
	case err != nil:
		return nil, fmt.Errorf("get pod %s/%s: %w", t.Pod.Namespace, t.Pod.Name, err)
	}
	var ids []string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil && cs.ContainerID != "" {
			ids = append(ids, cs.ContainerID)
		}
	}
	if pod.Spec.NodeName == "" || len(ids) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no running container on a node to kill", t.Pod.Namespace, t.Pod.Name)
	}
	spec := PodSpec{Kubeconfig: k.t.Kubeconfig, Context: k.t.Context, Selector: k.t.Selector, Pod: *t.Pod,
		Action: string(a.Kind), Timeout: a.Timeout, InPlace: true, RestartsBefore: restarts(pod)}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultBackTimeout
	}
	if _, err := journal(log, KindPodAwaitReady, spec, spec.Action, t.ID); err != nil {
		return nil, err
	}
	if _, err := runSignalPod(ctx, cl, SignalPod(pod, image, ids, a.Signal)); err != nil {
		return nil, fmt.Errorf("kill pod %s/%s: %w", t.Pod.Namespace, t.Pod.Name, err)
	}
	return func(ctx context.Context) error { return awaitReady(ctx, cl, spec) }, nil
}

// restarts is the sum of the restart counts of pod's containers.
func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// SignalPod returns the pod that sends signal to the processes of the
// containers ids (as the pod's status names them) of target, on its node:
// `llmchaos replica-signal` in image, in the host's pid namespace, as root
// with no capability but CAP_KILL, tolerating every taint, never
// restarted.
func SignalPod(target *corev1.Pod, image string, ids []string, signal string) *corev1.Pod {
	no, yes := false, true
	root := int64(0)
	args := []string{"replica-signal", "--pod-uid", string(target.UID), "--signal", signal}
	for _, id := range ids {
		args = append(args, "--container", id)
	}
	labels := kube.OwnedLabels("", "replica-kill")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      kube.ObjectName("llmchaos-kill-", target.Name),
			Namespace: target.Namespace,
			Labels:    labels,
		},
		Spec: corev1.PodSpec{
			NodeName:                     target.Spec.NodeName,
			HostPID:                      true,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            "signal",
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            args,
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &root,
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"KILL"}},
				},
			}},
		},
	}
}

// runSignalPod creates p, waits until it has ended, and deletes it; it
// returns its log, and an error quoting it when it failed.
func runSignalPod(ctx context.Context, cl *kube.Cluster, p *corev1.Pod) (string, error) {
	pods := cl.Client.CoreV1().Pods(p.Namespace)
	created, err := pods.Create(ctx, p, metav1.CreateOptions{FieldManager: kube.ManagedBy})
	if err != nil {
		return "", fmt.Errorf("create signal pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		zero := int64(0)
		uid := created.UID
		_ = pods.Delete(dctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	}()
	wctx, cancel := context.WithTimeout(ctx, signalPodTimeout)
	defer cancel()
	ended, err := kube.WaitPods(wctx, cl.Client, p.Namespace, "", func(ps []*corev1.Pod) bool {
		for _, q := range ps {
			if q.UID == created.UID && (q.Status.Phase == corev1.PodSucceeded || q.Status.Phase == corev1.PodFailed) {
				return true
			}
		}
		return false
	})
	var phase corev1.PodPhase
	for _, q := range ended {
		if q.UID == created.UID {
			phase = q.Status.Phase
		}
	}
	logb, lerr := pods.GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(context.WithoutCancel(ctx))
	out := strings.TrimSpace(string(logb))
	if lerr != nil {
		out = "(its log: " + lerr.Error() + ")"
	}
	switch {
	case err != nil:
		return out, fmt.Errorf("signal pod %s/%s did not end within %v (phase %s): %w; %s", p.Namespace, p.Name, signalPodTimeout, phase, err, out)
	case phase != corev1.PodSucceeded:
		return out, fmt.Errorf("signal pod %s/%s %s: %s", p.Namespace, p.Name, phase, out)
	}
	return out, nil
}
