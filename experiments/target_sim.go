package experiments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

// Timing of the simulator supervisor the runner starts.
const (
	// simReadyMargin is added to the replicas' startup time to bound the
	// wait for every replica to serve.
	simReadyMargin = 60 * time.Second
	// simStopGrace is the replicas' --stop-grace: the run is over, so they
	// need not drain long.
	simStopGrace = 2 * time.Second
	// simStopWait is how long the runner waits for the supervisor to stop
	// its replicas and exit after SIGTERM before it kills it (the replicas
	// then die of their parent-death signal).
	simStopWait = 10 * time.Second
	// simPoll is how often the state file is read while waiting.
	simPoll = 50 * time.Millisecond
)

// simProcess is the simulator supervisor of a target.sim run: `llmchaos
// sim --replicas N` as a child process of the runner, in a process group
// of its own, that dies with the runner (a parent-death signal, see
// startHelper) and is recorded in the journal, so `llmchaos recover` ends
// it after the runner was killed.
type simProcess struct {
	env   spec.SimEnv
	ports []int // replica i's port, as the supervisor published it; set once all serve
	n     int
	// routerFile, with target.sim.migrate, is where the simulator writes
	// its router's address; router is that address once it serves.
	routerFile string
	router     string
	model      string

	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{} // closed once the child is reaped
	waitErr error         // valid after done
	entry   *faults.Entry
}

// simArgs returns the arguments of `llmchaos sim` for t (defaults
// applied), with its files in env. The replicas listen on ports the system
// picks (base port 0): the supervisor binds them and publishes them in the
// state file, so two runs never race for a port.
func simArgs(t spec.SimTarget, env spec.SimEnv) ([]string, error) {
	c, err := t.EngineConfig()
	if err != nil {
		return nil, err
	}
	args := []string{
		"sim",
		"--replicas", strconv.Itoa(t.Replicas),
		"--listen", "127.0.0.1:0",
		"--base-port", "0",
		"--state-file", env.StateFile,
		"--vgpu-dir", env.VGPUDir,
		"--restart-delay", t.RestartDelay.String(),
		"--startup-time", t.StartupTime.String(),
		"--stop-grace", simStopGrace.String(),
		"--model", c.Model,
		"--latency", c.Latency,
		"--seed", strconv.FormatInt(c.Seed, 10),
		"--max-num-seqs", strconv.Itoa(c.MaxNumSeqs),
		"--max-waiting", strconv.Itoa(c.MaxWaiting),
		"--max-model-len", strconv.Itoa(c.MaxModelLen),
		"--gpu-memory", strconv.FormatInt(c.GPUMemory, 10),
		"--gpu-memory-utilization", strconv.FormatFloat(c.GPUUtilization, 'g', -1, 64),
		"--mean-output-tokens", strconv.Itoa(c.MeanOutputTokens),
	}
	if c.Divergence != "" {
		args = append(args, "--divergence", c.Divergence, "--divergence-min-batch", strconv.Itoa(c.DivergenceMinBatch))
	}
	if c.Latency == simconfig.LatencyConstant {
		args = append(args, "--ttft", c.TTFT.String(), "--itl", c.ITL.String())
	}
	if t.Migrate != "" {
		args = append(args, "--router", "127.0.0.1:0", "--migrate", t.Migrate, "--router-addr-file", routerAddrFile(env))
	}
	return args, nil
}

// routerAddrFile is where the simulator of env writes its router's
// address (target.sim.migrate).
func routerAddrFile(env spec.SimEnv) string {
	return filepath.Join(filepath.Dir(env.StateFile), "router.addr")
}

// startSim starts the simulator supervisor of t (defaults applied) with
// its files in dir/sim, records it in jr, and returns once every replica
// serves.
func startSim(ctx context.Context, t spec.SimTarget, dir, helper string, jr *faults.Journal) (*simProcess, error) {
	if helper == "" {
		return nil, errors.New("target.sim: the simulator runs as `llmchaos sim`, and this runner was given no llmchaos executable to run it with")
	}
	simDir := filepath.Join(dir, "sim")
	env := spec.SimEnv{StateFile: filepath.Join(simDir, "state.json"), VGPUDir: filepath.Join(simDir, "vgpu")}
	// The simulator dies with this process (parent-death signal; the guard
	// and recover end it from the journal): faults on its replicas record
	// it as their owner, so that their revert after a crash of the runner
	// has nothing to wait for.
	if start, alive, err := faults.ProcessStartTime(os.Getpid()); err == nil && alive {
		env.Owner = faults.ProcessSpec{PID: os.Getpid(), StartTime: start, Name: "llmchaos runner"}
	}
	if err := os.MkdirAll(env.VGPUDir, 0o755); err != nil {
		return nil, fmt.Errorf("target.sim: %w", err)
	}
	args, err := simArgs(t, env)
	if err != nil {
		return nil, fmt.Errorf("target.sim: %w", err)
	}
	log, err := os.Create(filepath.Join(dir, "sim.log"))
	if err != nil {
		return nil, fmt.Errorf("target.sim: %w", err)
	}
	desc := fmt.Sprintf("%d replica(s) on 127.0.0.1, ports in %s", t.Replicas, env.StateFile)
	entry, err := jr.Begin("simulator", "target.sim", desc)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("target.sim: %w", err)
	}
	s := &simProcess{env: env, n: t.Replicas, model: t.Model, log: log, entry: entry, done: make(chan struct{})}
	if t.Migrate != "" {
		s.routerFile = routerAddrFile(env)
	}
	s.cmd = exec.Command(helper, args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := startHelper(s.cmd, s.done, &s.waitErr); err != nil {
		_ = entry.Failed(err)
		log.Close()
		return nil, fmt.Errorf("target.sim: start %s: %w", helper, err)
	}
	spec, err := faults.ProcessRevertSpec(s.cmd.Process.Pid, "llmchaos sim supervisor, "+desc)
	if err == nil {
		err = entry.Will(spec)
	}
	if err == nil {
		err = entry.Injected()
	}
	if err == nil {
		err = s.waitServing(ctx, t.StartupTime.D()+simReadyMargin)
	}
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), simStopWait+5*time.Second)
		defer cancel()
		return nil, errors.Join(fmt.Errorf("target.sim: %w", err), s.stop(stopCtx))
	}
	return s, nil
}

// endpoints returns the replicas' base URLs, on the ports the supervisor
// published.
func (s *simProcess) endpoints() []string {
	if s.router != "" {
		return []string{"http://" + s.router + "/v1"}
	}
	out := make([]string, len(s.ports))
	for i, p := range s.ports {
		out[i] = "http://127.0.0.1:" + strconv.Itoa(p) + "/v1"
	}
	return out
}

// waitServing reads the state file until every replica serves, the child
// exits, ctx ends or limit passes, and keeps the replicas' ports.
func (s *simProcess) waitServing(ctx context.Context, limit time.Duration) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(simPoll)
	defer tick.Stop()
	var last []replicastate.Replica
	for {
		if rs, err := replicastate.Read(s.env.StateFile); err == nil {
			last = rs
			serving := 0
			for _, r := range rs {
				if r.State == replicastate.StateServing {
					serving++
				}
			}
			if len(rs) == s.n && serving == s.n {
				s.ports = make([]int, s.n)
				for _, r := range rs {
					if r.Index < 0 || r.Index >= s.n || r.Port <= 0 {
						return fmt.Errorf("the simulator's state file %s has replica %d on port %d", s.env.StateFile, r.Index, r.Port)
					}
					s.ports[r.Index] = r.Port
				}
				if s.routerFile == "" {
					return nil
				}
				if b, err := os.ReadFile(s.routerFile); err == nil && len(b) > 0 {
					s.router = strings.TrimSpace(string(b))
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return fmt.Errorf("the simulator exited before its replicas served (%v); its log: %s", s.waitErr, logTail(s.log.Name()))
		case <-deadline.C:
			return fmt.Errorf("replicas not all serving after %v (states %+v); the simulator's log: %s", limit, last, logTail(s.log.Name()))
		case <-tick.C:
		}
	}
}

// stop ends the supervisor (SIGTERM: it stops its replicas), kills it if
// it has not exited within simStopWait or by ctx's deadline, and records
// the outcome in the journal. It is idempotent.
func (s *simProcess) stop(ctx context.Context) error {
	err := s.end(ctx)
	if s.entry != nil {
		if jerr := s.entry.Reverted(err); jerr != nil && err == nil {
			err = jerr
		}
		s.entry = nil
	}
	s.log.Close()
	return err
}

func (s *simProcess) end(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	wait := time.NewTimer(simStopWait)
	defer wait.Stop()
	select {
	case <-s.done:
		return nil
	case <-wait.C:
	case <-ctx.Done():
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("simulator supervisor (pid %d) did not exit: %w", s.cmd.Process.Pid, ctx.Err())
	}
}

// startHelper starts cmd from a goroutine that holds its OS thread until
// the child is reaped, with a parent-death signal where the OS has one
// (DESIGN §7: the signal follows the thread that forked), and in a process
// group of its own, so that a Ctrl-C at the terminal reaches the runner,
// which ends its helpers in order. done is closed, and *waitErr set, once
// the child is reaped.
func startHelper(cmd *exec.Cmd, done chan struct{}, waitErr *error) error {
	setHelperAttrs(cmd)
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, after the child.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(done)
			return
		}
		started <- nil
		*waitErr = cmd.Wait()
		close(done)
	}()
	return <-started
}

// logTail returns the last lines of a helper's log file, for errors.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "(empty)"
	}
	return "\n" + string(bytes.TrimRight(b, "\n"))
}
