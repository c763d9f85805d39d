package gpupod

import (
	"strconv"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/resource"
)

// Labels of a balloon pod besides kube.OwnedLabels.
const (
	// LabelBalloonFor names the target pod the balloon presses on.
	LabelBalloonFor = "llmchaos.io/balloon-for"
	// LabelBalloonSet marks the balloons of one injection.
	LabelBalloonSet = "llmchaos.io/balloon-set"
)

// balloonGracePeriod is the balloon pod's terminationGracePeriodSeconds:
// gpu-balloon frees its memory and exits within moments of SIGTERM.
const balloonGracePeriod = 15

// The balloon's ready file: gpu-balloon writes it once it holds its
// memory and removes it before releasing; the pod's readiness probe
// (gpu-balloon is-holding, the image has no shell) checks for it, so that
// the pod is Ready, and the fault injected, only while the memory is held.
const (
	readyVolume = "ready"
	readyDir    = "/run/llmchaos"
	readyFile   = readyDir + "/holding"
)

// balloonUID is the user the balloon runs as (not root; the image is FROM
// scratch and needs no user database).
const balloonUID = 65532

// BalloonPod returns the balloon pod called name that presses on target's
// GPU with p: pinned to target's node (spec.nodeName, the scheduler is not
// asked), tolerating what target tolerates, in target's runtime class
// unless p names one, running `gpu-balloon --backend cuda --gpu 0` (the
// container sees one GPU) with one p.Resource, or with p.VisibleDevices
// through NVIDIA_VISIBLE_DEVICES. It is Ready while it holds its memory:
// gpu-balloon writes a ready file in an emptyDir, and the readiness probe
// runs the image's llmchaos (at /llmchaos, as deploy/Dockerfile and
// docs/kubernetes-gpu.md's image put it) to check for it every second.
// labels are added to its own.
func BalloonPod(p PressureParams, target *corev1.Pod, name string, labels map[string]string) *corev1.Pod {
	l := map[string]string{LabelBalloonFor: kube.LabelValue(target.Name)}
	for k, v := range labels {
		l[k] = v
	}
	env := []corev1.EnvVar{{Name: "CUDA_DEVICE_ORDER", Value: "PCI_BUS_ID"}}
	res := corev1.ResourceRequirements{}
	if p.VisibleDevices != "" {
		env = append(env,
			corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: p.VisibleDevices},
			corev1.EnvVar{Name: "NVIDIA_DRIVER_CAPABILITIES", Value: "compute,utility"})
	} else {
		one := resource.MustParse("1")
		res.Limits = corev1.ResourceList{corev1.ResourceName(p.Resource): one}
	}
	runtimeClass := target.Spec.RuntimeClassName
	if p.RuntimeClass != "" {
		runtimeClass = &p.RuntimeClass
	}
	grace, uid, no, yes := int64(balloonGracePeriod), int64(balloonUID), false, true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: target.Namespace, Labels: l,
			Annotations: map[string]string{"llmchaos.io/fault-type": TypeMemoryPressure},
		},
		Spec: corev1.PodSpec{
			NodeName:                      target.Spec.NodeName,
			RestartPolicy:                 corev1.RestartPolicyNever,
			Tolerations:                   target.Spec.Tolerations,
			RuntimeClassName:              runtimeClass,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Volumes:                       []corev1.Volume{{Name: readyVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: "Memory"}}}},
			Containers: []corev1.Container{{
				Name:                     "balloon",
				Image:                    p.Image,
				Args:                     balloonArgs(p),
				Env:                      env,
				Resources:                res,
				VolumeMounts:             []corev1.VolumeMount{{Name: readyVolume, MountPath: readyDir}},
				ReadinessProbe:           balloonReadinessProbe(),
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// balloonReadinessProbe is the balloon container's readiness probe: ready
// while gpu-balloon's ready file exists, checked every second (the least
// the kubelet allows), one failure enough to be unready.
func balloonReadinessProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/llmchaos", "gpu-balloon", "is-holding", readyFile}}},
		PeriodSeconds: 1, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 1,
	}
}

// balloonArgs returns the arguments of `llmchaos gpu-balloon` for p.
func balloonArgs(p PressureParams) []string {
	args := []string{"gpu-balloon", "--backend", "cuda", "--gpu", "0", "--ready-file", readyFile}
	if p.GiB != nil {
		return append(args, "--gib", strconv.FormatFloat(*p.GiB, 'g', -1, 64))
	}
	args = append(args, "--leave-free-gib", strconv.FormatFloat(*p.LeaveFreeGiB, 'g', -1, 64))
	if p.Grow != nil && *p.Grow {
		args = append(args, "--grow")
	}
	return args
}
