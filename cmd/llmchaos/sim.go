package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/router"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/supervisor"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// simOptions is `llmchaos sim`'s configuration, filled from flags.
type simOptions struct {
	Engine         sim.Config
	Listen         string
	VGPUDir        string
	GPU            int
	ShareGPU       bool
	Replicas       int // 0: one replica in this process, no supervisor
	BasePort       int // the port of Listen unless set; 0: ports the system picks
	RestartDelay   time.Duration
	StartupTime    time.Duration
	StopGrace      time.Duration
	StateFile      string
	AdminTokenFile string
	ReplicaIndex   int // set by the supervisor for its children; -1 otherwise
	ListenFD       int // set by the supervisor for its children: serve on this inherited socket; 0 otherwise
	EarlyRoleChunk bool
	// Router, Migrate and MigrateSpan run a migrating router in front of
	// the replicas (sim/router).
	Router         string
	Migrate        string
	MigrateSpan    int
	RouterAddrFile string
}

// defaultSimOptions returns the flag defaults.
func defaultSimOptions() simOptions {
	return simOptions{
		Engine:       sim.DefaultConfig(),
		Listen:       "127.0.0.1:8000",
		RestartDelay: 2 * time.Second,
		StartupTime:  5 * time.Second,
		StopGrace:    supervisor.DefaultStopGrace,
		ReplicaIndex: -1,
		MigrateSpan:  router.DefaultSpan,
	}
}

// sizeFlag is a pflag.Value for byte sizes with units (141GiB, 80GB, 512MiB).
type sizeFlag struct{ p *int64 }

func (f sizeFlag) String() string {
	if f.p == nil {
		return "0"
	}
	if n := *f.p; n > 0 && n%vgpu.GiB == 0 {
		return strconv.FormatInt(n/vgpu.GiB, 10) + "GiB"
	}
	return strconv.FormatInt(*f.p, 10)
}

func (f sizeFlag) Set(s string) error {
	n, err := vgpu.ParseSize(s)
	if err != nil {
		return err
	}
	*f.p = n
	return nil
}

func (f sizeFlag) Type() string { return "size" }

var _ pflag.Value = sizeFlag{}

// addSimFlags binds the sim command's flags to o.
func addSimFlags(fs *pflag.FlagSet, o *simOptions) {
	e := &o.Engine
	fs.StringVar(&o.Listen, "listen", o.Listen, `address to serve on (host:port; ":PORT" binds 127.0.0.1, give 0.0.0.0:PORT to serve every interface)`)
	fs.StringVar(&e.Model, "model", e.Model, "served model name")
	fs.StringVar(&e.Latency, "latency", e.Latency, "latency model: profile (Llama-3-8B on one H200) or constant (--ttft, --itl)")
	fs.DurationVar(&e.TTFT, "ttft", e.TTFT, "constant latency: time to first token when nothing queues")
	fs.DurationVar(&e.ITL, "itl", e.ITL, "constant latency: time between tokens")
	fs.Var(seedFlag{&e.Seed}, "seed", "seed of output text and lengths")
	fs.IntVar(&e.MaxNumSeqs, "max-num-seqs", e.MaxNumSeqs, "most sequences running at once")
	fs.IntVar(&e.MaxWaiting, "max-waiting", e.MaxWaiting, "waiting queue bound; a full queue answers 429")
	fs.IntVar(&e.MaxModelLen, "max-model-len", e.MaxModelLen, "prompt + max_tokens above this answers 400")
	fs.IntVar(&e.MaxBatchedTokens, "max-num-batched-tokens", e.MaxBatchedTokens, "token budget of one engine step (chunked prefill)")
	fs.Var(sizeFlag{&e.GPUMemory}, "gpu-memory", "size of the (virtual) GPU, e.g. 141GiB, 80GB")
	fs.Float64Var(&e.GPUUtilization, "gpu-memory-utilization", e.GPUUtilization, "share of the GPU for weights + KV cache, in (0, 1]")
	fs.IntVar(&e.MeanOutputTokens, "mean-output-tokens", e.MeanOutputTokens, "mean output length when a request does not set ignore_eos")
	fs.StringVar(&e.Divergence, "divergence", e.Divergence, "what makes output differ from the deterministic greedy answer of (prompt, seed): preempt (a preempted sequence recomputes into another continuation), batch (at near-tie tokens the batch size decides), or empty (never)")
	fs.IntVar(&e.DivergenceMinBatch, "divergence-min-batch", e.DivergenceMinBatch, "with --divergence batch: smallest batch that changes near-tie tokens")
	fs.StringVar(&o.VGPUDir, "vgpu-dir", o.VGPUDir, "vGPU ledger directory shared with other replicas and balloons (default: an in-process GPU; with --replicas a private temporary directory)")
	fs.IntVar(&o.GPU, "gpu", o.GPU, "vGPU index; with --replicas the first index (replica i runs on GPU+i)")
	fs.BoolVar(&o.ShareGPU, "share-gpu", o.ShareGPU, "with --replicas: run every replica on the one vGPU --gpu instead of one each")
	fs.IntVar(&o.Replicas, "replicas", o.Replicas, "run N replica child processes under a supervisor on consecutive ports")
	fs.IntVar(&o.BasePort, "base-port", o.BasePort, "with --replicas: port of replica 0 (default: the port of --listen); 0: each replica on a port the system picks, published in --state-file")
	fs.DurationVar(&o.RestartDelay, "restart-delay", o.RestartDelay, "with --replicas: wait after a replica exits before restarting it")
	fs.DurationVar(&o.StartupTime, "startup-time", o.StartupTime, "model load time: /health answers 503 this long after start")
	fs.DurationVar(&o.StopGrace, "stop-grace", o.StopGrace, "with --replicas: time a replica has to exit after SIGTERM before SIGKILL")
	fs.StringVar(&o.StateFile, "state-file", o.StateFile, "with --replicas: JSON file of replica states, rewritten on every change")
	fs.StringVar(&o.Router, "router", o.Router, "with --replicas and --state-file: also serve a router on this address (host:port) that spreads requests over the serving replicas and migrates a stream whose replica dies (--migrate)")
	fs.StringVar(&o.Migrate, "migrate", o.Migrate, "with --router: how a broken stream continues on another replica: clean (from the token it reached, the same answer), duplicate (--migrate-span tokens early: resent), drop (--migrate-span tokens late: lost), or empty (cut, no migration)")
	fs.IntVar(&o.MigrateSpan, "migrate-span", o.MigrateSpan, "with --migrate duplicate or drop: the tokens resent or lost")
	fs.StringVar(&o.RouterAddrFile, "router-addr-file", o.RouterAddrFile, "with --router: write the router's address (host:port) to this file once it serves (for --router 127.0.0.1:0)")
	fs.BoolVar(&o.EarlyRoleChunk, "early-role-chunk", o.EarlyRoleChunk, "send a chat stream's role-only first chunk before prefill, as the simulator once did (default: with the first token, as vLLM and llama.cpp send it)")
	fs.StringVar(&o.AdminTokenFile, "admin-token-file", o.AdminTokenFile, "file holding the bearer token of /admin/* (admin API off without it)")
	fs.IntVar(&o.ReplicaIndex, "replica-index", o.ReplicaIndex, "set by the supervisor: index of this replica, for logs")
	_ = fs.MarkHidden("replica-index")
	fs.IntVar(&o.ListenFD, "listen-fd", o.ListenFD, "set by the supervisor: serve on the listening socket inherited as this file descriptor instead of binding --listen")
	_ = fs.MarkHidden("listen-fd")
}

func newSimCmd() *cobra.Command {
	o := defaultSimOptions()
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the vLLM-like simulator (one replica, or a supervised set with --replicas)",
		Long: `sim serves the OpenAI API like one vLLM replica: continuous batching, a paged
KV cache sized from a (virtual) GPU's memory, preemption, vLLM's metrics.

With --vgpu-dir the replica reserves its weights and KV pool in a vGPU ledger
shared with other processes (see gpu-balloon) and dies of out-of-memory when a
step cannot get its activation memory. With --replicas N a supervisor runs N
replica processes on ports --base-port+i (with --base-port 0 or --listen
host:0, on ports the system picks, kept across restarts and written to
--state-file), each on its own vGPU (index --gpu+i,
or all on --gpu with --share-gpu), restarts one that exits after
--restart-delay, and writes --state-file.

Exit codes: 0 stopped by Ctrl-C or SIGTERM; 2 bad flags; 3 the replica died of
GPU out-of-memory; 4 too little free GPU memory to start; 1 anything else.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.finish(cmd.Flags()); err != nil {
				return usageError(err)
			}
			return runSim(cmd.Context(), o, cmd.ErrOrStderr())
		},
	}
	addSimFlags(cmd.Flags(), &o)
	return cmd
}

// finish checks the options and derives what depends on other flags. It
// reports every problem at once; defaults come from defaultSimOptions.
func (o *simOptions) finish(fs *pflag.FlagSet) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := o.Engine.Validate(); err != nil {
		errs = append(errs, err)
	}
	host, port, err := net.SplitHostPort(o.Listen)
	pn, perr := strconv.Atoi(port)
	switch {
	case err != nil || perr != nil || pn < 0 || pn > 65535:
		bad("--listen %q: want host:port, e.g. 127.0.0.1:8000", o.Listen)
	case host == "":
		// Servers bind loopback unless told otherwise (DESIGN §6), as
		// --metrics-listen does: ":8000" is not telling otherwise.
		o.Listen = net.JoinHostPort("127.0.0.1", port)
	}
	if o.GPU < 0 {
		bad("--gpu %d: must be 0 or more", o.GPU)
	}
	if o.StartupTime < 0 {
		bad("--startup-time %v: must not be negative", o.StartupTime)
	}
	if o.Replicas < 0 {
		bad("--replicas %d: must be 1 or more", o.Replicas)
	}
	if o.Replicas == 0 && o.VGPUDir == "" && fs.Changed("gpu") {
		bad("--gpu needs --vgpu-dir or --replicas (without them the replica has an in-process GPU)")
	}
	if o.Replicas == 0 {
		for _, name := range []string{"base-port", "restart-delay", "stop-grace", "state-file", "share-gpu"} {
			if fs.Changed(name) {
				bad("--%s needs --replicas", name)
			}
		}
	} else {
		if !fs.Changed("base-port") {
			o.BasePort = pn
		}
		if o.BasePort < 0 || o.BasePort+o.Replicas-1 > 65535 {
			bad("--base-port %d: replicas take ports %d..%d, which must lie in 1..65535 (or 0: ports the system picks)", o.BasePort, o.BasePort, o.BasePort+o.Replicas-1)
		}
		if o.RestartDelay < 0 {
			bad("--restart-delay %v: must not be negative", o.RestartDelay)
		}
		if o.StopGrace <= 0 {
			bad("--stop-grace %v: must be positive", o.StopGrace)
		}
		if o.ReplicaIndex >= 0 {
			bad("--replica-index is for the supervisor's children, not with --replicas")
		}
		if o.ListenFD != 0 {
			bad("--listen-fd is for the supervisor's children, not with --replicas")
		}
	}
	switch {
	case o.Router != "" && (o.Replicas == 0 || o.StateFile == ""):
		bad("--router needs --replicas and --state-file (the router reads which replicas serve from it)")
	case o.Router == "" && (fs.Changed("migrate") || fs.Changed("migrate-span") || fs.Changed("router-addr-file")):
		bad("--migrate, --migrate-span and --router-addr-file need --router")
	case o.Router != "":
		if _, _, err := net.SplitHostPort(o.Router); err != nil {
			bad("--router %q: want host:port, e.g. 127.0.0.1:8100", o.Router)
		}
		if _, err := router.New(router.Config{Mode: o.Migrate, Span: o.MigrateSpan, Upstreams: func() []string { return nil }}); err != nil {
			bad("--migrate: %v", err)
		}
	}
	if o.AdminTokenFile != "" {
		if _, err := readAdminToken(o.AdminTokenFile); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// maxAdminTokenFile bounds what readAdminToken reads.
const maxAdminTokenFile = 64 << 10

// readAdminToken reads the admin token from path, trimmed. The token itself
// never appears in errors or logs.
func readAdminToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--admin-token-file: %w", err)
	}
	defer f.Close()
	// At most maxAdminTokenFile bytes are read: a device (/dev/zero) or a
	// wrong file is refused without being read whole; a pipe is read.
	b, err := io.ReadAll(io.LimitReader(f, maxAdminTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("--admin-token-file: %w", err)
	}
	if len(b) > maxAdminTokenFile {
		return "", fmt.Errorf("--admin-token-file %s: more than %d bytes: not a token file", path, maxAdminTokenFile)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--admin-token-file %s: the file is empty; put the token in it, or leave the flag out to turn the admin API off", path)
	}
	return tok, nil
}

// runSim runs one replica, or the supervisor with --replicas.
func runSim(ctx context.Context, o simOptions, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if o.ReplicaIndex >= 0 {
		log = log.With("replica", o.ReplicaIndex)
	}
	if o.Replicas > 0 {
		return runSupervisor(ctx, o, stderr, log)
	}
	return runReplica(ctx, o, log)
}

// runReplica serves one replica in this process until ctx ends.
func runReplica(ctx context.Context, o simOptions, log *slog.Logger) error {
	opts := server.Options{Config: o.Engine, StartupTime: o.StartupTime, Logger: log, EarlyRoleChunk: o.EarlyRoleChunk}
	if o.VGPUDir != "" {
		dev, err := vgpu.Open(o.VGPUDir, o.GPU, o.Engine.GPUMemory)
		if err != nil {
			if _, ok := errors.AsType[*vgpu.CapacityError](err); ok {
				return usageError(fmt.Errorf("--gpu-memory: %w", err))
			}
			return err
		}
		defer dev.Close()
		opts.Memory = dev
	}
	if o.AdminTokenFile != "" {
		tok, err := readAdminToken(o.AdminTokenFile)
		if err != nil {
			return usageError(err)
		}
		opts.AdminToken = tok
	}
	ln, err := listen(o)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	err = server.Serve(ctx, ln, opts)
	if _, ok := errors.AsType[*sim.OOMError](err); ok {
		return withCode(exitcode.SimOOM, err)
	}
	if _, ok := errors.AsType[*sim.StartError](err); ok {
		if dev, ok := opts.Memory.(*vgpu.Device); ok {
			// Say who holds the memory, as nvidia-smi's process list would.
			if hs, herr := dev.Holders(); herr == nil && len(hs) > 0 {
				err = fmt.Errorf("%w; vgpu %d is held by %s", err, dev.Index(), vgpu.SummarizeHolders(hs))
			}
		}
		return withCode(exitcode.NoGPUMemory, err)
	}
	if _, ok := errors.AsType[*vgpu.ReserveError](err); ok {
		return withCode(exitcode.NoGPUMemory, err)
	}
	return err
}

// listen returns the replica's listener: the socket inherited as o.ListenFD
// when the supervisor bound the port, else a new one on o.Listen.
func listen(o simOptions) (net.Listener, error) {
	if o.ListenFD <= 0 {
		return net.Listen("tcp", o.Listen)
	}
	f := os.NewFile(uintptr(o.ListenFD), "listener")
	if f == nil {
		return nil, fmt.Errorf("--listen-fd %d: not a file descriptor", o.ListenFD)
	}
	defer f.Close() // FileListener keeps a duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("--listen-fd %d: %w", o.ListenFD, err)
	}
	return ln, nil
}

// runSupervisor runs o.Replicas replica processes of this binary.
func runSupervisor(ctx context.Context, o simOptions, stderr io.Writer, log *slog.Logger) error {
	host, _, _ := net.SplitHostPort(o.Listen) // checked by finish
	if o.VGPUDir == "" {
		dir, err := os.MkdirTemp("", "llmchaos-vgpu-*")
		if err != nil {
			return fmt.Errorf("sim: private vGPU directory: %w", err)
		}
		defer os.RemoveAll(dir)
		o.VGPUDir = dir
	}
	sopts := supervisor.Options{
		Replicas:     o.Replicas,
		Host:         host,
		BasePort:     o.BasePort,
		GPU:          o.GPU,
		ShareGPU:     o.ShareGPU,
		RestartDelay: o.RestartDelay,
		StopGrace:    o.StopGrace,
		StateFile:    o.StateFile,
		Logger:       log,
	}
	// Record every device's capacity now: a mismatch is the user's to fix,
	// not a reason for replicas to crash in a loop.
	gpus := []int{o.GPU}
	for i := 1; i < o.Replicas && !o.ShareGPU; i++ {
		gpus = append(gpus, o.GPU+i)
	}
	for _, g := range gpus {
		dev, err := vgpu.Open(o.VGPUDir, g, o.Engine.GPUMemory)
		if err != nil {
			if _, ok := errors.AsType[*vgpu.CapacityError](err); ok {
				return usageError(fmt.Errorf("--gpu-memory: %w", err))
			}
			return err
		}
		dev.Close()
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sim: find own executable to run replicas: %w", err)
	}
	out := childOutput(stderr)
	sopts.Command = func(s supervisor.Slot) *exec.Cmd {
		c := exec.Command(exe, childArgs(o, s)...)
		c.Stdout, c.Stderr = out, out
		return c
	}
	log.Info("supervising replicas", "replicas", o.Replicas, "base_port", o.BasePort, "vgpu_dir", o.VGPUDir,
		"share_gpu", o.ShareGPU, "state_file", o.StateFile)
	if o.Router == "" {
		return supervisor.Run(ctx, sopts)
	}
	stop, err := serveRouter(o, host, log)
	if err != nil {
		return err
	}
	err = supervisor.Run(ctx, sopts)
	return errors.Join(err, stop())
}

// serveRouter serves the migrating router on o.Router in front of the
// replicas the state file says serve, and returns the function that stops
// it.
func serveRouter(o simOptions, host string, log *slog.Logger) (stop func() error, err error) {
	rt, err := router.New(router.Config{Mode: o.Migrate, Span: o.MigrateSpan, Logger: log.With("component", "router"),
		Upstreams: func() []string {
			rs, err := replicastate.Read(o.StateFile)
			if err != nil {
				return nil
			}
			var ups []string
			for _, r := range rs {
				if r.State == replicastate.StateServing {
					ups = append(ups, "http://"+net.JoinHostPort(host, strconv.Itoa(r.Port)))
				}
			}
			return ups
		}})
	if err != nil {
		return nil, usageError(err)
	}
	ln, err := net.Listen("tcp", o.Router)
	if err != nil {
		return nil, fmt.Errorf("sim: --router: %w", err)
	}
	if f := o.RouterAddrFile; f != "" {
		tmp := f + ".tmp"
		if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			ln.Close()
			return nil, fmt.Errorf("sim: --router-addr-file: %w", err)
		}
		if err := os.Rename(tmp, f); err != nil {
			ln.Close()
			return nil, fmt.Errorf("sim: --router-addr-file: %w", err)
		}
	}
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("router serving", "addr", ln.Addr().String(), "migrate", o.Migrate)
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}, nil
}

// childArgs returns the arguments of replica s: `sim` with the engine flags of
// o, the slot's address and vGPU, and the (possibly private) vGPU directory.
func childArgs(o simOptions, s supervisor.Slot) []string {
	e := o.Engine
	args := []string{
		"sim",
		"--listen", s.Addr,
		"--model", e.Model,
		"--latency", e.Latency,
		"--ttft", e.TTFT.String(),
		"--itl", e.ITL.String(),
		"--seed", strconv.FormatUint(uint64(e.Seed), 10),
		"--max-num-seqs", strconv.Itoa(e.MaxNumSeqs),
		"--max-waiting", strconv.Itoa(e.MaxWaiting),
		"--max-model-len", strconv.Itoa(e.MaxModelLen),
		"--max-num-batched-tokens", strconv.Itoa(e.MaxBatchedTokens),
		"--gpu-memory", strconv.FormatInt(e.GPUMemory, 10),
		"--gpu-memory-utilization", strconv.FormatFloat(e.GPUUtilization, 'g', -1, 64),
		"--mean-output-tokens", strconv.Itoa(e.MeanOutputTokens),
		"--divergence", e.Divergence,
		"--divergence-min-batch", strconv.Itoa(e.DivergenceMinBatch),
		"--vgpu-dir", o.VGPUDir,
		"--gpu", strconv.Itoa(s.GPU),
		"--startup-time", o.StartupTime.String(),
		"--replica-index", strconv.Itoa(s.Index),
	}
	if s.ListenFD != 0 {
		args = append(args, "--listen-fd", strconv.Itoa(s.ListenFD))
	}
	if o.EarlyRoleChunk {
		args = append(args, "--early-role-chunk")
	}
	if o.AdminTokenFile != "" {
		args = append(args, "--admin-token-file", o.AdminTokenFile) // the path, never the token: argv is public
	}
	return args
}

// childOutput returns the writer replicas log to: w itself when it is a file
// (the children write to it directly), else a writer that serialises the
// copies os/exec makes for each child.
func childOutput(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return &lockedWriter{w: w}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
