//go:build linux

package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// WatchInterval is how often the process driver's watcher reads the state
// file or the process list: an event is seen at most this late.
const WatchInterval = 100 * time.Millisecond

// restartPoll is how often replica.restart looks for the new process.
const restartPoll = 20 * time.Millisecond

// Process is the process driver: replicas are local processes, found in a
// simulator supervisor's state file, a pid file, or by command line, and
// acted on with signals. A process is named by its pid and its start time,
// and signalled through a pidfd after the start time is checked, so a pid
// that was reused by another process is never signalled. llmchaos's own
// process and its ancestors are never targets.
type Process struct {
	t  TargetParams
	re *regexp.Regexp // compiled t.Cmdline
}

var (
	_ Driver  = (*Process)(nil)
	_ Watcher = (*Process)(nil)
)

// NewProcess returns the process driver of t, which must be valid and name
// the process driver.
func NewProcess(t TargetParams) (*Process, error) {
	t = t.WithDefaults()
	if t.Driver != DriverProcess {
		return nil, fmt.Errorf("process driver: target names driver %q", t.Driver)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	d := &Process{t: t}
	if t.Cmdline != "" {
		d.re = regexp.MustCompile(t.Cmdline) // Validate compiled it
	}
	return d, nil
}

// Targets lists the processes of the driver's source, with the refusal of
// any that is llmchaos itself or one of its ancestors.
func (d *Process) Targets(ctx context.Context) ([]Target, error) {
	var (
		ts  []Target
		err error
	)
	switch {
	case d.t.StateFile != "":
		ts, err = d.stateTargets()
	case d.t.PIDFile != "":
		ts, err = d.pidFileTargets()
	default:
		ts, err = d.cmdlineTargets()
	}
	if err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	own := ownLineage()
	for _, t := range ts {
		if t.PID > 0 && own[t.PID] {
			what := "llmchaos's own process"
			if t.PID != os.Getpid() {
				what = "an ancestor of llmchaos's process"
			}
			return nil, fmt.Errorf("process driver: %s: %s is %s (%q): %w; make the target more specific",
				d.t, t, what, readCmdline(t.PID), ErrOwnProcess)
		}
	}
	return ts, nil
}

// preview is Targets with every live process's command line in its
// detail (a command-line target has it already), for a dry run.
func (d *Process) preview(ctx context.Context) ([]Target, error) {
	ts, err := d.Targets(ctx)
	if err != nil || d.t.Cmdline != "" {
		return ts, err
	}
	for i, t := range ts {
		if t.StartTime == 0 {
			continue
		}
		if cl := readCmdline(t.PID); cl != "" {
			ts[i].Detail += ", " + cl
		}
	}
	return ts, nil
}

// stateTargets reads the supervisor's state file: one target per replica,
// up while it is serving and its process runs (a frozen process is not up,
// though the supervisor still says serving).
func (d *Process) stateTargets() ([]Target, error) {
	rs, err := replicastate.Read(d.t.StateFile)
	if err != nil {
		return nil, err
	}
	ts := make([]Target, 0, len(rs))
	for _, r := range rs {
		t := Target{ID: replicaID(r.Index), Index: r.Index, PID: r.PID}
		state := string(r.State)
		if r.PID > 0 {
			info, ok, err := readProc(r.PID)
			if err != nil {
				return nil, err
			}
			switch {
			case !ok || !info.alive():
				state += ", process gone"
			case info.stopped():
				t.StartTime = info.start
				state += ", stopped"
			default:
				t.StartTime = info.start
				t.Up = r.State == replicastate.StateServing
			}
		}
		t.Detail = fmt.Sprintf("pid %d, port %d, %s", r.PID, r.Port, state)
		ts = append(ts, t)
	}
	return ts, nil
}

// pidFileTargets reads one pid per line.
func (d *Process) pidFileTargets() ([]Target, error) {
	b, err := os.ReadFile(d.t.PIDFile)
	if err != nil {
		return nil, fmt.Errorf("read pid file: %w", err)
	}
	var ts []Target
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("pid file %s:%d: %q is not a pid", d.t.PIDFile, line, s)
		}
		t, err := pidTarget(pid)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("pid file %s holds no pid", d.t.PIDFile)
	}
	return ts, nil
}

// pidTarget describes the process pid as it is now.
func pidTarget(pid int) (Target, error) {
	t := Target{ID: "pid-" + strconv.Itoa(pid), PID: pid, Index: -1}
	info, ok, err := readProc(pid)
	if err != nil {
		return Target{}, err
	}
	switch {
	case !ok || !info.alive():
		t.Detail = "gone"
	case info.stopped():
		t.StartTime, t.Detail = info.start, "stopped"
	default:
		t.StartTime, t.Up, t.Detail = info.start, true, "running"
	}
	return t, nil
}

// cmdlineTargets scans every process's command line.
func (d *Process) cmdlineTargets() ([]Target, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var ts []Target
	for _, pid := range pids {
		cl, ok := d.matches(pid)
		if !ok {
			continue
		}
		t, err := pidTarget(pid)
		if err != nil {
			return nil, err
		}
		if t.StartTime == 0 && !t.Up {
			continue // exited while we looked
		}
		t.Detail += ", " + cl
		ts = append(ts, t)
	}
	return ts, nil
}

// matches reports whether process pid matches the cmdline pattern, with its
// command line: its executable name (the base name of argv[0], or its comm)
// by default, its whole command line with match cmdline. Kernel threads and
// processes that are gone never match.
func (d *Process) matches(pid int) (string, bool) {
	cl := readCmdline(pid)
	if cl == "" {
		return "", false
	}
	if d.t.Match == MatchCmdline {
		return cl, d.re.MatchString(cl)
	}
	for _, name := range exeNames(pid) {
		if d.re.MatchString(name) {
			return cl, true
		}
	}
	return cl, false
}

// Apply signals t's process (see the Action kinds). The process must still
// be the one listed: same pid, same start time. A kill, stop or restart is
// journaled as a KindAwaitBack spec, and its Undo waits for the replica to
// be up again (see revertAwaitBack): llmchaos cannot start a process, only
// see that its supervisor did.
func (d *Process) Apply(ctx context.Context, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	if a.Kind == ActionPause {
		return pauseProcess(ctx, log, t.PID, t.StartTime, t.ID)
	}
	if a.Kind == ActionRestart && d.t.Cmdline != "" {
		return nil, errors.New("restart needs a state_file or pid_file target to see the new process")
	}
	p, err := pin(t.PID, t.StartTime)
	if err != nil {
		return nil, err
	}
	defer p.close()
	spec := AwaitSpec{
		DoneSpec: DoneSpec{Target: t.ID, Action: string(a.Kind), PID: t.PID, StartTime: t.StartTime},
		Source:   d.t,
		Index:    t.Index,
		Timeout:  a.Timeout,
		Owner:    a.Owner,
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultBackTimeout
	}
	var sig syscall.Signal
	switch a.Kind {
	case ActionKill:
		if sig, err = ParseSignal(a.Signal); err != nil {
			return nil, err
		}
		spec.Signal = SignalName(sig)
	case ActionStop, ActionRestart:
	default:
		return nil, fmt.Errorf("process driver: unknown action %q", a.Kind)
	}
	// Every process of the source live now: none of them is the replica
	// started again.
	if spec.Index < 0 {
		ts, err := d.Targets(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range ts {
			if o.PID > 0 && o.StartTime != 0 {
				spec.Others = append(spec.Others, ProcRef{PID: o.PID, StartTime: o.StartTime})
			}
		}
	}
	if _, err := journal(log, KindAwaitBack, spec, spec.Action, t.ID); err != nil {
		return nil, err
	}
	undo := func(ctx context.Context) error { return d.waitBack(ctx, spec) }
	switch a.Kind {
	case ActionKill:
		if err := p.signal(sig); err != nil {
			return nil, err
		}
		if sig == unix.SIGKILL {
			// SIGKILL always ends the process, but not at once: wait for
			// the exit, so that Undo never takes the dying process for the
			// replica still up (after another signal it may be).
			wctx, cancel := context.WithTimeout(ctx, maxStopWait)
			p.waitExit(wctx)
			cancel()
		}
	case ActionStop:
		if err := p.stopGracefully(ctx, a.Grace); err != nil {
			return nil, err
		}
	case ActionRestart:
		// The restart happened once the process is stopped; its being
		// started again is the revert's to see, as after a kill: one that
		// never comes back is a failed revert, not a fault never injected.
		if err := p.stopGracefully(ctx, a.Grace); err != nil {
			return nil, err
		}
	}
	return undo, nil
}

// backIn reports whether the replica s names is back among ts: up again
// (the process acted on, still up after a non-fatal signal, or a new one).
// A new process is the same replica index in a state file; for a pid file
// or a command line, a process that was not live when the action was taken.
func backIn(s AwaitSpec, ts []Target) bool {
	old := ProcRef{PID: s.PID, StartTime: s.StartTime}
	for _, t := range ts {
		ref := ProcRef{PID: t.PID, StartTime: t.StartTime}
		switch {
		case t.PID <= 0 || t.StartTime == 0:
			continue // no live process
		case s.Index >= 0 && t.Index != s.Index:
			continue // another replica of the supervisor
		case ref == old:
			if t.Up {
				return true
			}
			continue
		case s.Index < 0 && slices.Contains(s.Others, ref):
			continue // another replica, up all along
		}
		if t.Up {
			return true
		}
	}
	return false
}

// waitBack waits, up to s.Timeout, until backIn holds for the driver's
// targets; the error says what was seen last and that the supervisor did
// not bring the replica back.
func (d *Process) waitBack(ctx context.Context, s AwaitSpec) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultBackTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(restartPoll)
	defer tick.Stop()
	for {
		if s.Owner != nil && processOwnerGone(*s.Owner) {
			// The replica ended with its owner: nothing to await.
			return nil
		}
		ts, err := d.Targets(ctx)
		if err == nil && backIn(s, ts) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (pid %d, %s) was %s and is not up again within %v: llmchaos cannot start a process it did not start, "+
				"and whatever supervises it (the simulator's supervisor, systemd, a restart loop) did not bring it back; start it by hand "+
				"(last look: %s): %w", s.Target, s.PID, s.Source, actionPast(s.Action), timeout, describeOrErr(ts, err), context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// revertAwaitBack is the Reverter of KindAwaitBack: it waits for the
// replica the spec names to be up again, through the spec's source.
func revertAwaitBack(ctx context.Context, data json.RawMessage) error {
	var s AwaitSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindAwaitBack, err)
	}
	// A vanished target counts as reverted (the Undo contract): after a
	// crash the run's simulator, and with it its state file, may be gone,
	// or the pid file removed with the service; nothing is left to await.
	for _, f := range []string{s.Source.StateFile, s.Source.PIDFile} {
		if _, err := os.Stat(f); f != "" && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	d, err := NewProcess(s.Source)
	if err != nil {
		return fmt.Errorf("%s spec: %w", KindAwaitBack, err)
	}
	return d.waitBack(ctx, s)
}

// processOwnerGone says whether the process o names has ended: no process has its
// pid, it is a zombie, or the pid now belongs to a process started at
// another time. An unreadable /proc entry is not taken as gone.
func processOwnerGone(o ProcRef) bool {
	start, alive, err := faults.ProcessStartTime(o.PID)
	if err != nil {
		return false
	}
	return !alive || start != o.StartTime
}

func describeOrErr(ts []Target, err error) string {
	if err != nil {
		return err.Error()
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, "; ")
}

// PauseProcess freezes the process pid with SIGSTOP, after recording in log
// how to resume it (a KindSignalCont spec with its pid and start time), and
// returns once it is stopped. Undo sends SIGCONT. A process that is stopped
// already is refused: resuming it later would undo someone else's stop.
// gpu.hang uses it to wedge a serving process as a stuck GPU would.
func PauseProcess(ctx context.Context, log faults.RevertLog, pid int, name string) (faults.Undo, error) {
	info, ok, err := readProc(pid)
	if err != nil {
		return nil, err
	}
	if !ok || !info.alive() {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if own := ownLineage(); own[pid] {
		return nil, fmt.Errorf("pid %d (%s): %w", pid, name, ErrOwnProcess)
	}
	return pauseProcess(ctx, log, pid, info.start, name)
}

func pauseProcess(ctx context.Context, log faults.RevertLog, pid int, start uint64, name string) (faults.Undo, error) {
	p, err := pin(pid, start)
	if err != nil {
		return nil, err
	}
	defer p.close()
	if info, _, err := readProc(pid); err == nil && info.stopped() {
		return nil, fmt.Errorf("process %d (%s) is stopped already; not pausing it", pid, name)
	}
	data, err := json.Marshal(faults.ProcessSpec{PID: pid, StartTime: start, Name: name})
	if err != nil {
		return nil, fmt.Errorf("encode revert spec: %w", err)
	}
	if err := log.Will(faults.RevertSpec{Kind: KindSignalCont, Data: data}); err != nil {
		return nil, fmt.Errorf("journal pause of %s: %w", name, err)
	}
	undo := func(ctx context.Context) error { return revertSignalCont(ctx, data) }
	if err := p.signal(unix.SIGSTOP); err != nil {
		return nil, err
	}
	if err := waitStopped(ctx, pid, start); err != nil {
		if uerr := undo(context.WithoutCancel(ctx)); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return nil, err
	}
	return undo, nil
}

// revertSignalCont is the Reverter of KindSignalCont: SIGCONT to the process
// the spec names, if it is still that process. A process that is gone, or a
// pid held by another process, counts as reverted and is not signalled.
func revertSignalCont(_ context.Context, data json.RawMessage) error {
	var s faults.ProcessSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("signal-cont spec: %w", err)
	}
	if s.PID <= 0 {
		return fmt.Errorf("signal-cont spec: pid %d is not a process", s.PID)
	}
	p, err := pin(s.PID, s.StartTime)
	if errors.Is(err, ErrGone) || errors.Is(err, ErrPIDReused) {
		return nil
	}
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.signal(syscall.SIGCONT); err != nil && !errors.Is(err, ErrGone) {
		return err
	}
	return nil
}

// Watch reports replica events until ctx ends. With a state file it reads
// the file every WatchInterval and derives exit, restart and healthy
// events; with a pid file or a command line it looks at the processes as
// often and reports their exits and starts, a replacement as the same
// replica, and its first healthy answer (see watchProcs).
func (d *Process) Watch(ctx context.Context, ready func(), emit func(Event)) error {
	if d.t.StateFile != "" {
		return d.watchState(ctx, ready, emit)
	}
	return d.watchProcs(ctx, ready, emit)
}

func (d *Process) watchState(ctx context.Context, ready func(), emit func(Event)) error {
	prev, err := replicastate.Read(d.t.StateFile)
	if err != nil {
		return fmt.Errorf("watch replicas: %w", err)
	}
	// starts remembers each replica process's start time while it lives,
	// so that its exit names it as the process watchers do.
	starts := map[int]uint64{}
	note := func(rs []replicastate.Replica) {
		for _, r := range rs {
			if r.PID <= 0 {
				continue
			}
			if info, ok, err := readProc(r.PID); err == nil && ok && info.alive() {
				starts[r.PID] = info.start
			}
		}
	}
	startOf := func(pid int) uint64 { return starts[pid] }
	note(prev)
	if ready != nil {
		ready()
	}
	tick := time.NewTicker(WatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, err := replicastate.Read(d.t.StateFile)
		if err != nil {
			continue // the file is replaced atomically; a failed read is transient
		}
		note(cur)
		for _, e := range stateEvents(prev, cur, time.Now(), startOf) {
			emit(e)
		}
		prev = cur
		for pid := range starts {
			if !slices.ContainsFunc(cur, func(r replicastate.Replica) bool { return r.PID == pid }) {
				delete(starts, pid) // exited and reported: forget it
			}
		}
	}
}
