package gpu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// Fault type names, as written in an experiment file's `type:` field.
const (
	TypeMemoryPressure = "gpu.memory_pressure"
	TypeHang           = "gpu.hang"
)

// Balloon backends (PressureParams.Backend).
const (
	BackendVGPU = "vgpu"
	BackendCUDA = "cuda"
)

// Params are the typed parameters of one GPU fault type: *PressureParams or
// *HangParams. The runner gets an empty one from NewParams, decodes the
// experiment's `params:` into it, applies the defaults (WithDefaults, which
// returns a copy) and validates the copy:
//
//	p.(*gpu.PressureParams).WithDefaults().Validate()
type Params interface {
	// Type returns the fault type the parameters configure.
	Type() string
	// Validate reports every problem at once; it changes nothing.
	Validate() error
}

// params maps each GPU fault type of Types() to its empty params; the list
// in types.go is the only one.
func params() map[string]func() Params {
	m := map[string]func() Params{}
	for _, t := range Types() {
		newParams := t.NewParams
		m[t.Name] = func() Params { return newParams().(Params) }
	}
	return m
}

// FaultTypes returns the GPU fault types, sorted.
func FaultTypes() []string {
	ts := make([]string, 0, 2)
	for t := range params() {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// NewParams returns empty parameters of fault type typ for decoding, or an
// error naming the known types.
func NewParams(typ string) (Params, error) {
	mk, ok := params()[typ]
	if !ok {
		return nil, fmt.Errorf("unknown GPU fault type %q (known: %s)", typ, strings.Join(FaultTypes(), ", "))
	}
	return mk(), nil
}

// PressureParams configure gpu.memory_pressure.
type PressureParams struct {
	// GiB is how much the balloon holds. Exactly one of GiB and
	// LeaveFreeGiB is set.
	GiB *float64 `json:"gib,omitempty" yaml:"gib,omitempty" doc:"memory the balloon holds (give gib or leave_free_gib)" unit:"GiB"`
	// LeaveFreeGiB makes the balloon hold everything free on the GPU but
	// this much.
	LeaveFreeGiB *float64 `json:"leave_free_gib,omitempty" yaml:"leave_free_gib,omitempty" doc:"hold everything free on the GPU but this much" unit:"GiB"`
	// GPU is the device index: a vGPU index, or for cuda the index NVML
	// and nvidia-smi show (the balloon runs with CUDA_DEVICE_ORDER=PCI_BUS_ID).
	GPU int `json:"gpu,omitempty" yaml:"gpu,omitempty" doc:"device index (vGPU index, or NVML index for cuda)" default:"0"`
	// Backend is BackendVGPU (default) or BackendCUDA.
	Backend string `json:"backend,omitempty" yaml:"backend,omitempty" doc:"vgpu or cuda" default:"vgpu"`
	// VGPUDir is the vGPU ledger directory the replicas use (vgpu only).
	VGPUDir string `json:"vgpu_dir,omitempty" yaml:"vgpu_dir,omitempty" doc:"vGPU ledger directory of the replicas (vgpu backend; filled in with target.sim)"`
	// Grow keeps the balloon taking memory that others free, so that only
	// LeaveFreeGiB stays free while the fault holds. Only with
	// LeaveFreeGiB; default true there (see the package doc for why).
	Grow *bool `json:"grow,omitempty" yaml:"grow,omitempty" doc:"keep taking memory others free (only with leave_free_gib)" default:"true with leave_free_gib"`
}

var _ Params = (*PressureParams)(nil)

// Type implements Params.
func (p PressureParams) Type() string { return TypeMemoryPressure }

// WithDefaults returns a copy with the defaults filled in: backend vgpu,
// and grow on when LeaveFreeGiB is set and Grow is not.
func (p PressureParams) WithDefaults() PressureParams {
	q := p
	if q.Backend == "" {
		q.Backend = BackendVGPU
	}
	if q.LeaveFreeGiB != nil && q.Grow == nil {
		grow := true
		q.Grow = &grow
	}
	return q
}

// maxGiB keeps sizes within int64 bytes.
const maxGiB = float64(math.MaxInt64 / vgpu.GiB)

// Validate implements Params.
func (p PressureParams) Validate() error {
	var ps field.Problems
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
	if p.GPU < 0 {
		ps.AddNamed("gpu", ": %d, want 0 or more", p.GPU)
	}
	switch p.Backend {
	case "", BackendVGPU:
		if p.VGPUDir == "" {
			ps.AddNamed("vgpu_dir", ": required with backend vgpu; give the --vgpu-dir of the simulator's replicas")
		}
	case BackendCUDA:
		if p.VGPUDir != "" {
			ps.AddNamed("vgpu_dir", ": only with backend vgpu; remove it, or set backend: vgpu")
		}
	default:
		ps.AddNamed("backend", ": %q, want %s or %s", p.Backend, BackendVGPU, BackendCUDA)
	}
	return ps.Err()
}

// describe says what the balloon holds, for errors and the journal.
func (p PressureParams) describe() string {
	what := ""
	if p.GiB != nil {
		what = strconv.FormatFloat(*p.GiB, 'g', -1, 64) + " GiB"
	} else if p.LeaveFreeGiB != nil {
		what = "all but " + strconv.FormatFloat(*p.LeaveFreeGiB, 'g', -1, 64) + " GiB"
		if p.Grow != nil && *p.Grow {
			what += ", growing"
		}
	}
	return fmt.Sprintf("%s on %s %d", what, p.Backend, p.GPU)
}

// balloonArgs returns the arguments of `llmchaos gpu-balloon` for p
// (defaults applied), carrying token and the pid of the process that starts
// it.
func (p PressureParams) balloonArgs(token string, parent int) []string {
	args := []string{"gpu-balloon", "--backend", p.Backend, "--gpu", strconv.Itoa(p.GPU), "--parent-pid", strconv.Itoa(parent)}
	if p.Backend == BackendVGPU {
		args = append(args, "--vgpu-dir", p.VGPUDir)
	}
	if p.GiB != nil {
		args = append(args, "--gib", strconv.FormatFloat(*p.GiB, 'g', -1, 64))
	} else {
		args = append(args, "--leave-free-gib", strconv.FormatFloat(*p.LeaveFreeGiB, 'g', -1, 64))
		if p.Grow != nil && *p.Grow {
			args = append(args, "--grow")
		}
	}
	return append(args, FaultTokenFlag+"="+token)
}

// HangParams configure gpu.hang: which process to freeze. Exactly one of
// PID, PIDFile and StateFile is set.
type HangParams struct {
	// PID is the serving process.
	PID int `json:"pid,omitempty" yaml:"pid,omitempty" doc:"pid of the serving process"`
	// PIDFile is a file holding its pid.
	PIDFile string `json:"pid_file,omitempty" yaml:"pid_file,omitempty" doc:"file holding the serving process pid"`
	// StateFile is a simulator supervisor's state file (sim --state-file);
	// Replica picks the replica by index.
	StateFile string `json:"state_file,omitempty" yaml:"state_file,omitempty" doc:"simulator supervisor state file (filled in with target.sim)"`
	// Replica is the replica's index in StateFile (default 0).
	Replica int `json:"replica,omitempty" yaml:"replica,omitempty" doc:"replica index in state_file" default:"0"`
}

var _ Params = (*HangParams)(nil)

// Type implements Params.
func (p HangParams) Type() string { return TypeHang }

// WithDefaults returns p: gpu.hang has no defaults beyond the zero values
// (replica 0). It is here so that every params type reads alike.
func (p HangParams) WithDefaults() HangParams { return p }

// Validate implements Params.
func (p HangParams) Validate() error {
	var ps field.Problems
	n := 0
	for _, set := range []bool{p.PID != 0, p.PIDFile != "", p.StateFile != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		ps.Add("", "%s, %s or %s: give exactly one, naming the serving process to freeze", field.Path("pid"), field.Path("pid_file"), field.Path("state_file"))
	}
	if p.PID < 0 || p.PID == 1 {
		ps.AddNamed("pid", ": %d, want the pid of a serving process (not 1)", p.PID)
	}
	if p.Replica < 0 {
		ps.AddNamed("replica", ": %d, want 0 or more", p.Replica)
	}
	if p.Replica != 0 && p.StateFile == "" {
		ps.AddNamed("replica", ": only with state_file")
	}
	return ps.Err()
}
