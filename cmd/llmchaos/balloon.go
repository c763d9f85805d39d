package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/sim/supervisor"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// growInterval is how often a growing balloon looks for freed memory; well
// under a replica's restart delay, so the balloon wins the race for it.
const growInterval = 50 * time.Millisecond

// balloonOptions is `llmchaos gpu-balloon`'s configuration.
type balloonOptions struct {
	Backend      string // gpu.BackendVGPU or gpu.BackendCUDA
	VGPUDir      string
	GPU          int
	GiB          float64 // hold this much; 0 when LeaveFreeGiB is used
	LeaveFreeGiB float64 // hold all but this much of what is free
	leaveFree    bool    // --leave-free-gib was given
	Grow         bool    // keep taking freed memory so that only LeaveFreeGiB stays free
	GPUMemory    int64   // device size when the balloon is the first opener; 0 adopts the recorded one
	FaultToken   string  // set by the gpu.memory_pressure fault, so that recover can find this process
	ParentPID    int     // set by the fault: the process that started this one; 0 when not given
	ReadyFile    string  // written once holding, removed before the release; "" for none
}

func newBalloonCmd() *cobra.Command {
	var o balloonOptions
	cmd := &cobra.Command{
		Use:   "gpu-balloon",
		Short: "Hold GPU memory on a virtual or real GPU until terminated or until the parent process dies",
		Long: `gpu-balloon reserves memory on a vGPU (see sim --vgpu-dir) so that replicas
find less free: --gib N holds N GiB, --leave-free-gib N holds everything free
but N GiB, and with --grow it keeps taking memory that others free (a
crashed replica's, say), so that a restart finds too little. Once it holds,
it prints one line ("holding ...") on stdout, a readiness signal for whoever
started it, and with --ready-file writes that line to a file, removed again
before the memory is released: the balloon pod of gpupod.memory_pressure is
Ready while the file exists ("gpu-balloon is-holding FILE", its readiness
probe, exits 0 then). It releases the memory and exits 0 on
SIGTERM or SIGINT, and when its parent process exits. It exits 4 when too
little memory is free, 2 on bad flags.

With --backend cuda it allocates device memory on real GPU --gpu through the
CUDA driver instead (a build with -tags cuda; set CUDA_DEVICE_ORDER=PCI_BUS_ID
for nvidia-smi's numbering); it exits 5 when there is no driver or device.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.finish(cmd.Flags()); err != nil {
				return usageError(err)
			}
			return runBalloon(cmd.Context(), o, cmd.OutOrStdout(), slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Backend, "backend", gpu.BackendVGPU, "where to hold memory: vgpu (a vGPU ledger) or cuda (a real GPU, through the CUDA driver)")
	fs.StringVar(&o.VGPUDir, "vgpu-dir", "", "vGPU ledger directory (the replicas' --vgpu-dir)")
	fs.IntVar(&o.GPU, "gpu", 0, "GPU index: the vGPU, or with --backend cuda the CUDA device")
	fs.Float64Var(&o.GiB, "gib", 0, "GiB to hold")
	fs.Float64Var(&o.LeaveFreeGiB, "leave-free-gib", 0, "hold all free memory but this many GiB")
	fs.BoolVar(&o.Grow, "grow", false, "with --leave-free-gib: keep taking memory that others free, every 50 ms")
	fs.Var(sizeFlag{&o.GPUMemory}, "gpu-memory", "size of the vGPU if no replica has recorded it yet (e.g. 141GiB)")
	fs.StringVar(&o.FaultToken, "fault-token", "", "token of the fault that started this balloon (set by llmchaos itself)")
	_ = fs.MarkHidden("fault-token")
	fs.IntVar(&o.ParentPID, "parent-pid", 0, "pid of the process that started this balloon: refuse to hold if it is gone already (set by llmchaos itself)")
	_ = fs.MarkHidden("parent-pid")
	fs.StringVar(&o.ReadyFile, "ready-file", "", "write the holding line to this file once holding, and remove it before releasing (for a readiness probe)")
	cmd.AddCommand(newBalloonIsHoldingCmd())
	return cmd
}

// newBalloonIsHoldingCmd is the balloon pod's readiness probe: the
// llmchaos image has no shell or test(1), so the probe runs llmchaos.
func newBalloonIsHoldingCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "is-holding READY_FILE",
		Short:  "Exit 0 when a gpu-balloon's --ready-file exists (it holds its memory), 1 when not",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err != nil {
				return fmt.Errorf("gpu-balloon is not holding: %w", err)
			}
			return nil
		},
	}
}

// writeReadyFile writes line to path whole (a temporary file renamed onto
// it), so that a probe never sees it half written.
func writeReadyFile(path, line string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// finish checks the flags, reporting every problem at once.
func (o *balloonOptions) finish(fs *pflag.FlagSet) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch o.Backend {
	case gpu.BackendVGPU:
		if o.VGPUDir == "" {
			bad("--vgpu-dir: required (the directory the replicas use)")
		}
	case gpu.BackendCUDA:
		if o.VGPUDir != "" || fs.Changed("gpu-memory") {
			bad("--vgpu-dir and --gpu-memory: only with --backend vgpu (a real GPU has its own size)")
		}
	default:
		bad("--backend %q: want vgpu or cuda", o.Backend)
	}
	if o.GPU < 0 {
		bad("--gpu %d: must be 0 or more", o.GPU)
	}
	o.leaveFree = fs.Changed("leave-free-gib")
	switch {
	case fs.Changed("gib") && o.leaveFree:
		bad("--gib and --leave-free-gib: give one of them, not both")
	case !fs.Changed("gib") && !o.leaveFree:
		bad("--gib or --leave-free-gib: give one of them")
	case o.leaveFree && !(o.LeaveFreeGiB >= 0 && o.LeaveFreeGiB < math.MaxInt64/float64(vgpu.GiB)):
		bad("--leave-free-gib %v: must be 0 or more", o.LeaveFreeGiB)
	case !o.leaveFree && !(o.GiB > 0 && o.GiB < math.MaxInt64/float64(vgpu.GiB)):
		bad("--gib %v: must be more than 0", o.GiB)
	}
	if o.Grow && !o.leaveFree {
		bad("--grow needs --leave-free-gib")
	}
	if o.GPUMemory < 0 && o.Backend == gpu.BackendVGPU {
		bad("--gpu-memory %d: must not be negative", o.GPUMemory)
	}
	return errors.Join(errs...)
}

// openBalloon opens the balloon of o's backend; closeDev releases its
// memory and closes the device.
func openBalloon(ctx context.Context, o balloonOptions) (b vgpu.Balloon, closeDev func() error, err error) {
	if o.Backend == gpu.BackendCUDA {
		cb, err := gpu.OpenCUDABalloon(ctx, o.GPU)
		switch {
		case errors.Is(err, gpu.ErrNoCUDABuild):
			return nil, nil, usageError(fmt.Errorf("--backend cuda: %w", err))
		case errors.Is(err, gpu.ErrNoGPU):
			return nil, nil, withCode(exitcode.NoGPU, fmt.Errorf("gpu-balloon: %w", err))
		case err != nil:
			return nil, nil, fmt.Errorf("gpu-balloon: %w", err)
		}
		return cb, cb.Close, nil
	}
	dev, err := vgpu.Open(o.VGPUDir, o.GPU, o.GPUMemory)
	if err != nil {
		if _, ok := errors.AsType[*vgpu.CapacityError](err); ok {
			return nil, nil, usageError(fmt.Errorf("--gpu-memory: %w", err))
		}
		return nil, nil, fmt.Errorf("gpu-balloon: %w", err)
	}
	return vgpu.NewLedgerBalloon(dev, "balloon"), dev.Close, nil
}

// runBalloon holds the memory until ctx ends or the parent process exits.
func runBalloon(ctx context.Context, o balloonOptions, stdout io.Writer, log *slog.Logger) error {
	// The parent's death is one way this command ends, and stdout and
	// stderr are often pipes to that parent: a write to them must fail, not
	// kill the balloon with SIGPIPE before it has released and logged.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := supervisor.WatchParent(ctx)
	defer stop()
	// The parent that WatchParent watches is the one it found when it
	// started; a parent pid other than the one given means the process
	// that started this balloon died first, and nobody would ever end it.
	// (A parent pid only ever changes to an adopter's, never back.)
	if o.ParentPID > 0 && os.Getppid() != o.ParentPID {
		return fmt.Errorf("gpu-balloon: the process that started it (pid %d) is gone; holding nothing", o.ParentPID)
	}
	b, closeDev, err := openBalloon(ctx, o)
	if err != nil {
		return err
	}
	defer closeDev()
	held := int64(math.Round(o.GiB * float64(vgpu.GiB)))
	if o.leaveFree {
		held, err = b.HoldAllBut(ctx, int64(math.Round(o.LeaveFreeGiB*float64(vgpu.GiB))))
	} else {
		err = b.Hold(ctx, held)
	}
	if err != nil {
		if _, ok := errors.AsType[*vgpu.ReserveError](err); ok {
			return withCode(exitcode.NoGPUMemory, fmt.Errorf("gpu-balloon: %w", err))
		}
		return fmt.Errorf("gpu-balloon: %w", err)
	}
	free, err := b.Free(ctx)
	if err != nil {
		return errors.Join(fmt.Errorf("gpu-balloon: %w", err), b.Release())
	}
	line := fmt.Sprintf("holding %s on %s %d (free now %s)\n", vgpu.FormatSize(held), o.Backend, o.GPU, vgpu.FormatSize(free))
	if _, err := io.WriteString(stdout, line); err != nil {
		return errors.Join(fmt.Errorf("gpu-balloon: %w", err), b.Release())
	}
	unready := func() {}
	if o.ReadyFile != "" {
		if err := writeReadyFile(o.ReadyFile, line); err != nil {
			return errors.Join(fmt.Errorf("gpu-balloon: --ready-file: %w", err), b.Release())
		}
		// Removed before the release: a probe never reports memory that
		// is being given back as held.
		unready = func() { _ = os.Remove(o.ReadyFile) }
	}
	log.Info("holding", "bytes", held, "backend", o.Backend, "gpu", o.GPU, "vgpu_dir", o.VGPUDir, "free_bytes", free, "fault_token", o.FaultToken)
	if o.Grow {
		leave := int64(math.Round(o.LeaveFreeGiB * float64(vgpu.GiB)))
		err := vgpu.KeepFree(ctx, b, leave, growInterval, func(n int64) {
			log.Info("took freed memory", "bytes", n, "gpu", o.GPU)
		})
		if err != nil {
			unready()
			return errors.Join(fmt.Errorf("gpu-balloon: %w", err), b.Release())
		}
	}
	<-ctx.Done()
	unready()
	why := "terminated"
	if errors.Is(context.Cause(ctx), supervisor.ErrParentDied) {
		why = "parent process exited"
	}
	if err := b.Release(); err != nil {
		return fmt.Errorf("gpu-balloon: %w", err)
	}
	log.Info("released", "bytes", held, "gpu", o.GPU, "why", why)
	return nil
}
