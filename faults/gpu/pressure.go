package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Defaults of BalloonOptions.
const (
	// DefaultReadyTimeout bounds the wait for a balloon to say it holds. A
	// CUDA balloon creates a context and allocates in 1 GiB chunks, which
	// takes seconds on a large GPU.
	DefaultReadyTimeout = 60 * time.Second
	// DefaultStopGrace is how long Undo waits after SIGTERM before SIGKILL.
	DefaultStopGrace = faults.DefaultProcessGrace
)

// BalloonOptions say how a balloon process is run. The zero value is ready
// to use.
type BalloonOptions struct {
	// Binary is the llmchaos executable run as `gpu-balloon` (default: this
	// process's own executable).
	Binary string
	// ReadyTimeout bounds the wait for the balloon's "holding" line
	// (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL on Undo (default
	// DefaultStopGrace); a nearer deadline of Undo's ctx shortens it.
	StopGrace time.Duration
	// Log, if set, receives the balloon's log (its stderr) as it comes; it
	// must not block, or the balloon would stall on its next log line. The
	// last lines are kept in any case, for errors.
	Log io.Writer
	// OnExit, if set, is called once, from another goroutine, when the
	// balloon exits while it should hold (before Undo asked it to), with an
	// error that says how it ended. The fault then no longer holds memory;
	// the runner records that as an event.
	OnExit func(err error)
}

func (o BalloonOptions) withDefaults() (BalloonOptions, error) {
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("find own executable to run gpu-balloon: %w", err)
		}
		o.Binary = exe
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o, nil
}

// MemoryPressure is gpu.memory_pressure: a balloon child process that holds
// GPU memory from Inject to Undo.
type MemoryPressure struct {
	name string
	p    PressureParams // defaults applied
	o    BalloonOptions // defaults applied
}

var _ faults.Fault = (*MemoryPressure)(nil)

// NewMemoryPressure returns the fault that holds the memory p describes
// (defaults applied here, then validated) in a balloon process run as o
// says.
func NewMemoryPressure(name string, p PressureParams, o BalloonOptions) (*MemoryPressure, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fault %q (%s): %w", name, TypeMemoryPressure, err)
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("fault %q (%s): %w", name, TypeMemoryPressure, err)
	}
	return &MemoryPressure{name: name, p: p, o: o}, nil
}

// Params returns the fault's parameters, defaults applied.
func (f *MemoryPressure) Params() PressureParams { return f.p }

// Inject starts the balloon and returns once it holds the memory; Undo
// (BalloonProcess.Stop) ends it.
func (f *MemoryPressure) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	b, err := f.Start(ctx, log)
	if err != nil {
		return nil, err
	}
	return b.Stop, nil
}

// Start is Inject returning the balloon process itself, for callers that
// want its pid or its end. In order:
//
//  1. it records a KindBalloonToken spec with a fresh token;
//  2. it starts `llmchaos gpu-balloon ... --fault-token=TOKEN` in a process
//     group of its own (a Ctrl-C at the terminal reaches the runner, which
//     reverts in order, not the balloon);
//  3. it records the child's faults.KindProcess spec (pid, start time);
//  4. it waits for the child's "holding ..." line, at most ReadyTimeout.
//
// When any step fails it ends the child and returns an error that carries
// the child's own error line; nothing is left held.
func (f *MemoryPressure) Start(ctx context.Context, log faults.RevertLog) (*BalloonProcess, error) {
	wrap := func(err error) error {
		return fmt.Errorf("fault %q (%s, %s): %w", f.name, TypeMemoryPressure, f.p.describe(), err)
	}
	token, err := newToken()
	if err != nil {
		return nil, wrap(err)
	}
	spec, err := tokenRevertSpec(token, "gpu-balloon of fault "+f.name)
	if err != nil {
		return nil, wrap(err)
	}
	if err := log.Will(spec); err != nil {
		return nil, wrap(err)
	}
	var env []string
	if f.p.Backend == BackendCUDA {
		if _, set := os.LookupEnv("CUDA_DEVICE_ORDER"); !set {
			// Number devices as NVML and nvidia-smi do.
			env = append(env, "CUDA_DEVICE_ORDER=PCI_BUS_ID")
		}
	}
	b, err := startBalloonProcess(f.o, f.p.balloonArgs(token, os.Getpid()), env)
	if err != nil {
		return nil, wrap(err)
	}
	fail := func(err error) (*BalloonProcess, error) {
		return nil, wrap(errors.Join(err, b.kill()))
	}
	// The start time is that of the fork, so it is the same before and
	// after the exec. A child already dead (bad arguments, too little
	// memory) needs no spec; waitReady reports how it ended.
	start, alive, err := faults.ProcessStartTime(b.PID())
	if err != nil {
		return fail(err)
	}
	if alive {
		data, err := json.Marshal(faults.ProcessSpec{PID: b.PID(), StartTime: start, Name: "gpu-balloon of fault " + f.name})
		if err != nil {
			return fail(err)
		}
		if err := log.Will(faults.RevertSpec{Kind: faults.KindProcess, Data: data}); err != nil {
			return fail(err)
		}
	}
	if err := b.waitReady(ctx, f.o.ReadyTimeout); err != nil {
		return fail(err)
	}
	return b, nil
}

// memoryPressureType describes gpu.memory_pressure for Types.
func memoryPressureType() faults.Type {
	return faults.Type{
		Name: TypeMemoryPressure, Family: Family, Lifetime: faults.Sustained, Target: faults.TargetParams,
		Summary:   "hold GPU memory in a balloon process until the revert frees it",
		Example:   "gib: 10\ngpu: 0\nbackend: vgpu",
		NewParams: func() any { return &PressureParams{} },
		Check:     func(p any) field.Problems { return faults.ParamProblems(p.(*PressureParams).Validate()) },
		FromSim: func(p any, env faults.SimEnv) {
			q := p.(*PressureParams)
			if q.VGPUDir == "" && (q.Backend == "" || q.Backend == BackendVGPU) {
				q.VGPUDir = env.VGPUDir
			}
		},
		Defaults: faults.DefaultsBy[PressureParams](),
		Build: func(env faults.BuildEnv, p any) (faults.Fault, error) {
			return NewMemoryPressure(env.Name, *p.(*PressureParams), BalloonOptions{
				Binary: env.Helper, Log: env.Log, OnExit: env.OnHelperExit,
			})
		},
		Reverters: Reverters,
	}
}
