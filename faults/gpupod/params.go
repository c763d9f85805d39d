package gpupod

import (
	"math"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// DefaultResource is the extended resource the NVIDIA device plugin
// advertises GPUs (or their time-sliced replicas) as.
const DefaultResource = "nvidia.com/gpu"

// DefaultStartTimeout bounds the wait for a balloon pod to run.
const DefaultStartTimeout = 2 * time.Minute

// PressureParams configure gpupod.memory_pressure.
//
//	params: {namespace: llm, selector: app=vllm, image: registry.example/llmchaos:cuda, leave_free_gib: 1}
type PressureParams struct {
	kube.PodTarget `json:",inline"`
	kube.Access    `json:",inline"`
	// Select says how many of the Ready target pods get a balloon (one
	// each, on their node).
	Select faults.Selection `json:"select,omitzero" doc:"how many of the Ready pods that match get a balloon on their GPU"`
	// Image is an llmchaos image built with -tags cuda (gpu-balloon
	// --backend cuda), on a base with the C library's loader.
	Image string `json:"image" doc:"llmchaos image built with -tags cuda, for the balloon pod (see docs/kubernetes-gpu.md)"`
	// GiB is how much the balloon holds; LeaveFreeGiB makes it hold all
	// that is free but this much. Exactly one is set.
	GiB          *float64 `json:"gib,omitempty" doc:"GPU memory the balloon holds (give gib or leave_free_gib)" unit:"GiB"`
	LeaveFreeGiB *float64 `json:"leave_free_gib,omitempty" doc:"hold all free GPU memory but this much" unit:"GiB"`
	// Grow keeps taking memory others free (only with LeaveFreeGiB).
	Grow *bool `json:"grow,omitempty" doc:"keep taking GPU memory others free (only with leave_free_gib)" default:"true with leave_free_gib"`
	// Resource is the extended resource the balloon asks for.
	Resource string `json:"resource,omitempty" doc:"extended resource the balloon pod asks one of (time-slicing may rename it, e.g. nvidia.com/gpu.shared)" default:"nvidia.com/gpu"`
	// VisibleDevices, when set, pins the balloon to that GPU (a UUID, as
	// nvidia-smi -L shows) through NVIDIA_VISIBLE_DEVICES instead of
	// asking the device plugin for one.
	VisibleDevices string `json:"visible_devices,omitempty" doc:"pin the balloon to this GPU (UUID from nvidia-smi -L) through NVIDIA_VISIBLE_DEVICES instead of asking for resource; needs the NVIDIA container runtime"`
	// RuntimeClass is the balloon pod's runtimeClassName ("" for the
	// target pod's).
	RuntimeClass string `json:"runtime_class,omitempty" doc:"runtimeClassName of the balloon pod (default: the target pod's)"`
	// StartTimeout bounds the wait for each balloon pod to run.
	StartTimeout time.Duration `json:"start_timeout,omitempty" doc:"how long Inject waits for each balloon pod to run" default:"2m"`
}

// WithDefaults returns a copy with the defaults filled in.
func (p PressureParams) WithDefaults() PressureParams {
	p.Select = p.Select.WithDefaults()
	if p.Resource == "" {
		p.Resource = DefaultResource
	}
	if p.StartTimeout == 0 {
		p.StartTimeout = DefaultStartTimeout
	}
	if p.LeaveFreeGiB != nil && p.Grow == nil {
		grow := true
		p.Grow = &grow
	}
	return p
}

// maxGiB keeps sizes within int64 bytes.
const maxGiB = float64(math.MaxInt64 >> 30)

// Validate reports every problem at once, each message starting with its
// key; call it after WithDefaults.
func (p PressureParams) Validate() error {
	ps := p.PodTarget.Problems()
	ps = append(ps, p.Select.Problems()...)
	if p.Image == "" {
		ps.AddNamed("image", ": required: an llmchaos image built with -tags cuda (see docs/kubernetes-gpu.md)")
	}
	switch {
	case p.GiB != nil && p.LeaveFreeGiB != nil:
		ps.AddNamed("gib", " and %s: give one of them, not both", field.Path("leave_free_gib"))
	case p.GiB == nil && p.LeaveFreeGiB == nil:
		ps.Add("", "%s or %s: give one of them (GiB to hold, or GiB to leave free)", field.Path("gib"), field.Path("leave_free_gib"))
	case p.GiB != nil && !(*p.GiB > 0 && *p.GiB < maxGiB):
		ps.AddNamed("gib", ": %v, want more than 0", *p.GiB)
	case p.LeaveFreeGiB != nil && !(*p.LeaveFreeGiB >= 0 && *p.LeaveFreeGiB < maxGiB):
		ps.AddNamed("leave_free_gib", ": %v, want 0 or more", *p.LeaveFreeGiB)
	}
	if p.Grow != nil && *p.Grow && p.LeaveFreeGiB == nil {
		ps.AddNamed("grow", ": only with leave_free_gib (a balloon of a fixed size does not grow)")
	}
	if p.StartTimeout < 0 {
		ps.AddNamed("start_timeout", ": %s must not be negative", p.StartTimeout)
	}
	return ps.Err()
}
