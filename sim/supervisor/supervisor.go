package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// Defaults for the zero values of Options.
const (
	DefaultStopGrace      = 5 * time.Second
	DefaultHealthPath     = "/health"
	DefaultHealthInterval = 100 * time.Millisecond
	healthTimeout         = time.Second
)

// ListenFD is the file descriptor of the listening socket a replica inherits
// when the supervisor binds its port (Options.BasePort 0).
const ListenFD = 3

// Slot says where one replica runs; Options.Command turns it into a process.
type Slot struct {
	Index int    // replica index, 0-based
	Addr  string // host:port the replica must listen on
	Port  int    // BasePort + Index, or the port the system picked
	GPU   int    // virtual GPU index for the replica
	// ListenFD, when not 0, is the descriptor (always ListenFD) of the
	// listening socket on Addr that the child inherits and must serve on
	// instead of binding Addr itself; it is set when Options.BasePort is 0.
	ListenFD int
}

// Options configure Run. Defaults are applied by Run, not by Validate.
type Options struct {
	// Replicas is the number of replica processes (at least 1).
	Replicas int
	// Host is the address replicas listen on ("" → 127.0.0.1). Health is
	// probed on 127.0.0.1 when Host is a wildcard.
	Host string
	// BasePort is replica 0's port; replica i listens on BasePort+i.
	//
	// With BasePort 0 the system picks a free port for each replica: Run
	// binds Host:0 for every replica before it starts any, hands the
	// listening socket to the child (Slot.ListenFD; it goes before the
	// Command's own ExtraFiles), keeps the port across restarts (binding it
	// again for each new process) and publishes it in the state file. No
	// port is ever probed and released, so concurrent supervisors cannot
	// collide.
	BasePort int
	// GPU is the first virtual GPU index: replica i runs on GPU+i, or every
	// replica on GPU when ShareGPU is set.
	GPU      int
	ShareGPU bool
	// Command builds the process of a replica for a slot. It is called for
	// every start, so each restart gets a fresh *exec.Cmd. Run adds the
	// parent-death signal and a process group of its own to SysProcAttr.
	Command func(Slot) *exec.Cmd
	// RestartDelay is the wait after a replica exits before it is started
	// again; zero restarts at once.
	RestartDelay time.Duration
	// StopGrace is how long a child has to exit after SIGTERM before it is
	// killed (0 → DefaultStopGrace).
	StopGrace time.Duration
	// HealthPath is probed until it answers 200 ("" → DefaultHealthPath).
	HealthPath string
	// HealthInterval is the time between probes (0 → DefaultHealthInterval).
	HealthInterval time.Duration
	// StateFile, when set, receives the replicas' states as JSON (a list of
	// replicastate.Replica) on every change, written atomically.
	StateFile string
	// Logger receives lifecycle events (nil → discard).
	Logger *slog.Logger
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Replicas < 1 {
		errs = append(errs, fmt.Errorf("replicas: %d, need at least 1", o.Replicas))
	}
	if o.BasePort < 0 || o.BasePort+max(o.Replicas, 1)-1 > 65535 {
		errs = append(errs, fmt.Errorf("base port: %d with %d replicas does not fit in 1..65535", o.BasePort, o.Replicas))
	}
	if o.GPU < 0 {
		errs = append(errs, fmt.Errorf("gpu: %d must not be negative", o.GPU))
	}
	if o.Command == nil {
		errs = append(errs, errors.New("command: none given"))
	}
	if o.RestartDelay < 0 || o.StopGrace < 0 || o.HealthInterval < 0 {
		errs = append(errs, fmt.Errorf("durations must not be negative (restart delay %v, stop grace %v, health interval %v)",
			o.RestartDelay, o.StopGrace, o.HealthInterval))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.HealthPath == "" {
		o.HealthPath = DefaultHealthPath
	}
	if o.HealthInterval == 0 {
		o.HealthInterval = DefaultHealthInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// slot returns replica i's slot.
func (o Options) slot(i int) Slot {
	gpu := o.GPU + i
	if o.ShareGPU {
		gpu = o.GPU
	}
	port := o.BasePort + i
	return Slot{Index: i, Addr: net.JoinHostPort(o.Host, strconv.Itoa(port)), Port: port, GPU: gpu}
}

// probeAddr is where replica i's health is probed.
func (o Options) probeAddr(s Slot) string {
	host := o.Host
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(s.Port))
}

// supervisor is one Run's shared state.
type supervisor struct {
	o      Options
	client *http.Client

	mu       sync.Mutex
	replicas []replicastate.Replica
}

// bindPorts binds Host:0 once per replica (BasePort 0) and returns the
// slots on the ports the system picked, with the listening sockets as files.
func (o Options) bindPorts() ([]Slot, []*os.File, error) {
	slots := make([]Slot, o.Replicas)
	files := make([]*os.File, 0, o.Replicas)
	for i := range slots {
		f, port, err := listenFile(net.JoinHostPort(o.Host, "0"))
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("replica %d: %w", i, err)
		}
		files = append(files, f)
		sl := o.slot(i)
		sl.Port, sl.Addr, sl.ListenFD = port, net.JoinHostPort(o.Host, strconv.Itoa(port)), ListenFD
		slots[i] = sl
	}
	return slots, files, nil
}

// listenFile binds addr and returns the listening socket as a file for a
// child to inherit, and its port.
func listenFile(addr string) (*os.File, int, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, 0, err
	}
	defer ln.Close() // the file is a duplicate; it stays open
	tl := ln.(*net.TCPListener)
	f, err := tl.File()
	if err != nil {
		return nil, 0, fmt.Errorf("listen %s: %w", addr, err)
	}
	return f, tl.Addr().(*net.TCPAddr).Port, nil
}

// Run starts the replicas and keeps them running until ctx ends, then stops
// every child (SIGTERM, StopGrace, SIGKILL), writes their final states and
// returns nil. It returns an error at once for invalid options or when the
// state file cannot be written; later state-file failures are logged.
func Run(ctx context.Context, opts Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	o := opts.withDefaults()
	s := &supervisor{
		o: o,
		client: &http.Client{
			Timeout:   healthTimeout,
			Transport: &http.Transport{DisableKeepAlives: true},
		},
		replicas: make([]replicastate.Replica, o.Replicas),
	}
	defer s.client.CloseIdleConnections()
	slots := make([]Slot, o.Replicas)
	bound := make([]*os.File, o.Replicas) // BasePort 0: each replica's socket for its first start
	if o.BasePort == 0 {
		var err error
		if slots, bound, err = o.bindPorts(); err != nil {
			return fmt.Errorf("supervisor: %w", err)
		}
	} else {
		for i := range slots {
			slots[i] = o.slot(i)
		}
	}
	for i, sl := range slots {
		s.replicas[i] = replicastate.Replica{Index: i, Port: sl.Port, GPU: sl.GPU, State: replicastate.StateStarting}
	}
	if o.StateFile != "" {
		if err := replicastate.Write(o.StateFile, s.replicas); err != nil {
			for _, f := range bound {
				f.Close()
			}
			return fmt.Errorf("supervisor: %w", err)
		}
	}
	var wg sync.WaitGroup
	for i := range s.replicas {
		wg.Go(func() { s.runReplica(ctx, slots[i], bound[i]) })
	}
	wg.Wait()
	return nil
}

// runReplica starts, watches and restarts one replica until ctx ends. It holds
// its OS thread throughout: every child of this replica is forked from that
// thread, so their parent-death signal fires only when the supervisor dies.
// With sl.ListenFD set, bound is the listening socket of the first start
// (runReplica closes it); later starts bind sl.Addr again.
func (s *supervisor) runReplica(ctx context.Context, sl Slot, bound *os.File) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if bound != nil {
			bound.Close()
		}
	}()
	log := s.o.Logger.With("replica", sl.Index, "port", sl.Port)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.update(sl.Index, func(r *replicastate.Replica) { r.State = replicastate.StateRestarting })
			log.Info("replica restarting", "delay", s.o.RestartDelay)
			if !sleepCtx(ctx, s.o.RestartDelay) {
				s.update(sl.Index, func(r *replicastate.Replica) { r.State = replicastate.StateExited })
				return
			}
		}
		if ctx.Err() != nil {
			s.update(sl.Index, func(r *replicastate.Replica) { r.State = replicastate.StateExited })
			return
		}
		var lf *os.File // the socket the child inherits (ListenFD)
		if sl.ListenFD != 0 {
			lf, bound = bound, nil
			if lf == nil {
				var err error
				if lf, _, err = listenFile(sl.Addr); err != nil {
					s.update(sl.Index, func(r *replicastate.Replica) {
						r.State, r.PID, r.Restarts, r.LastExit = replicastate.StateExited, 0, attempt, "start failed: "+err.Error()
					})
					log.Error("replica start failed", "err", err)
					continue
				}
			}
		}
		cmd := s.o.Command(sl)
		if lf != nil {
			cmd.ExtraFiles = append([]*os.File{lf}, cmd.ExtraFiles...)
		}
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		cmd.SysProcAttr.Setpgid = true // a terminal's Ctrl-C reaches the supervisor only; it stops the children in order
		err := cmd.Start()
		if lf != nil {
			lf.Close() // the child holds the socket now: it closes when the child dies
		}
		if err != nil {
			s.update(sl.Index, func(r *replicastate.Replica) {
				r.State, r.PID, r.Restarts, r.LastExit = replicastate.StateExited, 0, attempt, "start failed: "+err.Error()
			})
			log.Error("replica start failed", "err", err)
			continue
		}
		pid := cmd.Process.Pid
		s.update(sl.Index, func(r *replicastate.Replica) { r.State, r.PID, r.Restarts = replicastate.StateStarting, pid, attempt })
		log.Info("replica started", "pid", pid, "restarts", attempt)

		waitc := make(chan error, 1)
		go func() { waitc <- cmd.Wait() }()
		s.watch(ctx, sl, cmd, waitc, log)
		exit := describeExit(cmd)
		s.update(sl.Index, func(r *replicastate.Replica) { r.State, r.LastExit = replicastate.StateExited, exit })
		log.Info("replica exited", "pid", pid, "exit", exit)
		if ctx.Err() != nil {
			return
		}
	}
}

// watch probes the child's health until it serves, and returns once the
// child has exited: by itself, or stopped because ctx ended.
func (s *supervisor) watch(ctx context.Context, sl Slot, cmd *exec.Cmd, waitc <-chan error, log *slog.Logger) {
	tick := time.NewTicker(s.o.HealthInterval)
	defer tick.Stop()
	probe := tick.C
	url := "http://" + s.o.probeAddr(sl) + s.o.HealthPath
	for {
		select {
		case <-waitc:
			return
		case <-ctx.Done():
			s.stop(cmd, waitc, log)
			return
		case <-probe:
			if s.healthy(ctx, url) {
				probe = nil // serving; from here on only the exit matters
				s.update(sl.Index, func(r *replicastate.Replica) { r.State = replicastate.StateServing })
				log.Info("replica serving", "pid", cmd.Process.Pid)
			}
		}
	}
}

// stop ends a child: SIGTERM, then SIGKILL after the grace period.
func (s *supervisor) stop(cmd *exec.Cmd, waitc <-chan error, log *slog.Logger) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	grace := time.NewTimer(s.o.StopGrace)
	defer grace.Stop()
	select {
	case <-waitc:
	case <-grace.C:
		log.Warn("replica did not stop in time; killing it", "pid", cmd.Process.Pid, "grace", s.o.StopGrace)
		_ = cmd.Process.Kill()
		<-waitc
	}
}

// healthy reports whether url answers 200.
func (s *supervisor) healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// update changes replica i and writes the state file, in order.
func (s *supervisor) update(i int, change func(*replicastate.Replica)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.replicas[i])
	if s.o.StateFile == "" {
		return
	}
	if err := replicastate.Write(s.o.StateFile, s.replicas); err != nil {
		s.o.Logger.Error("cannot write the state file", "path", s.o.StateFile, "err", err)
	}
}

// describeExit says how a waited-for child ended.
func describeExit(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "unknown"
	}
	return cmd.ProcessState.String()
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
