package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procInfo is what the driver reads of a process from /proc/PID/stat.
type procInfo struct {
	state byte   // R, S, D, T (stopped), t, Z, X ...
	ppid  int    // parent pid
	start uint64 // start time, clock ticks after boot
}

// alive reports whether the process runs (a zombie has exited).
func (p procInfo) alive() bool {
	switch p.state {
	case 'Z', 'X', 'x', 0:
		return false
	}
	return true
}

// stopped reports whether the process is stopped by a signal (SIGSTOP).
func (p procInfo) stopped() bool { return p.state == 'T' }

// readProc reads pid's /proc/PID/stat; ok is false when there is no such
// process.
func readProc(pid int) (info procInfo, ok bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return procInfo{}, false, nil
	}
	if err != nil {
		return procInfo{}, false, fmt.Errorf("read process %d: %w", pid, err)
	}
	info, err = parseStat(b)
	if err != nil {
		return procInfo{}, false, fmt.Errorf("process %d: %w", pid, err)
	}
	return info, true, nil
}

// parseStat parses a /proc/PID/stat line. The command name (field 2) may
// hold spaces and parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (procInfo, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("parse /proc stat %q: no ')'", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("parse /proc stat: %d fields after the name, want at least 20", len(f))
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procInfo{}, fmt.Errorf("parse /proc stat ppid %q: %w", f[1], err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procInfo{}, fmt.Errorf("parse /proc stat start time %q: %w", f[19], err)
	}
	return procInfo{state: f[0][0], ppid: ppid, start: start}, nil
}

// readCmdline returns pid's command line, arguments joined by spaces; ""
// for a kernel thread or a process that is gone.
func readCmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// exeNames returns the names a process goes by: the base name of its
// argv[0] and its comm (the kernel's name, the executed file's base name
// cut to 15 bytes; a script's own name, where argv[0] is its
// interpreter). Duplicates and empty names are left out.
func exeNames(pid int) []string {
	var names []string
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		if a := string(b); a != "" {
			names = append(names, filepath.Base(a))
		}
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
		if c := strings.TrimRight(string(b), "\n"); c != "" && !slices.Contains(names, c) {
			names = append(names, c)
		}
	}
	return names
}

// listPIDs returns the pid of every process (thread-group leaders only,
// as /proc lists them).
func listPIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// ownLineage returns llmchaos's own pid and those of its ancestors: a fault
// never acts on them.
func ownLineage() map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !out[pid]; {
		out[pid] = true
		info, ok, err := readProc(pid)
		if err != nil || !ok {
			break
		}
		pid = info.ppid
	}
	return out
}

// pinned is a process held through a pidfd: once its start time has been
// checked, every signal sent through it reaches that process and no other,
// even if it exits and its pid is reused.
type pinned struct {
	fd  int
	pid int
}

// pin opens pid and checks that it is the process that started at start.
// It returns ErrGone when there is no such live process and ErrPIDReused
// when the pid belongs to another one.
func pin(pid int, start uint64) (*pinned, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return nil, fmt.Errorf("open pidfd of process %d: %w", pid, err)
	}
	info, ok, err := readProc(pid)
	if err == nil && (!ok || !info.alive()) {
		err = fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err == nil && info.start != start {
		err = fmt.Errorf("pid %d started at tick %d, the target at tick %d: %w", pid, info.start, start, ErrPIDReused)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &pinned{fd: fd, pid: pid}, nil
}

func (p *pinned) close() { unix.Close(p.fd) }

// signal sends sig to the pinned process; a process that has exited in the
// meantime is ErrGone.
func (p *pinned) signal(sig syscall.Signal) error {
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pid %d: %w", p.pid, ErrGone)
	}
	if err != nil {
		return fmt.Errorf("send %s to process %d: %w", SignalName(sig), p.pid, err)
	}
	return nil
}

// pollSlice bounds one poll(2) of a pidfd, so that ctx is checked between
// slices; the wait itself ends as soon as the process exits.
const pollSlice = 100 * time.Millisecond

// waitExit waits until the pinned process exits (true) or ctx ends (false
// with ctx's cause). It looks at least once.
func (p *pinned) waitExit(ctx context.Context) (bool, error) {
	for {
		wait := pollSlice
		if dl, ok := ctx.Deadline(); ok {
			wait = max(0, min(wait, time.Until(dl)))
		}
		if ctx.Err() != nil {
			wait = 0
		}
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(wait.Milliseconds()))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false, fmt.Errorf("wait for process %d: %w", p.pid, err)
		}
		if n > 0 {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
	}
}

// stopGracefully sends SIGTERM, waits up to grace for the process to exit,
// then sends SIGKILL and waits for the exit (bounded by ctx).
func (p *pinned) stopGracefully(ctx context.Context, grace time.Duration) error {
	if err := p.signal(unix.SIGTERM); err != nil {
		if errors.Is(err, ErrGone) {
			return nil
		}
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	exited, err := p.waitExit(gctx)
	cancel()
	if exited {
		return nil
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("stop process %d: %w", p.pid, err)
	}
	if err := p.signal(unix.SIGKILL); err != nil && !errors.Is(err, ErrGone) {
		return err
	}
	if exited, err := p.waitExit(ctx); !exited {
		return fmt.Errorf("process %d did not exit after SIGKILL: %w", p.pid, err)
	}
	return nil
}

// stoppedPoll is how often waitStopped looks at the process's state.
const stoppedPoll = time.Millisecond

// maxStopWait bounds how long a SIGSTOP may take to stop a process; one in
// uninterruptible sleep stops only when the sleep ends.
const maxStopWait = 5 * time.Second

// waitStopped waits until pid (started at start) is stopped, or is gone.
func waitStopped(ctx context.Context, pid int, start uint64) error {
	ctx, cancel := context.WithTimeout(ctx, maxStopWait)
	defer cancel()
	tick := time.NewTicker(stoppedPoll)
	defer tick.Stop()
	for {
		info, ok, err := readProc(pid)
		if err != nil {
			return err
		}
		if !ok || !info.alive() || info.start != start {
			return fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
		if info.stopped() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d not stopped after SIGSTOP (state %c): %w", pid, info.state, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// procCgroupHas reports whether pid's cgroup paths name the container id:
// the check that a host pid is the container's process.
func procCgroupHas(pid int, id string) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false, fmt.Errorf("read cgroup of process %d: %w", pid, err)
	}
	return strings.Contains(string(b), id), nil
}

// signalContainerProcess sends sig to a container's main process, whose
// host pid is pid, after checking through a pidfd that the process is in
// the container's cgroup (so a reused pid, or a pid from an engine that runs
// in another pid namespace, is never signalled).
func signalContainerProcess(pid int, id string, sig syscall.Signal) error {
	info, ok, err := readProc(pid)
	if err != nil {
		return err
	}
	if !ok || !info.alive() {
		return fmt.Errorf("container %.12s: main process %d: %w", id, pid, ErrGone)
	}
	p, err := pin(pid, info.start)
	if err != nil {
		return fmt.Errorf("container %.12s: %w", id, err)
	}
	defer p.close()
	in, err := procCgroupHas(pid, id)
	if err != nil {
		return err
	}
	if !in {
		return fmt.Errorf("container %.12s: process %d here is not the container's (is the engine on another host or in another pid namespace? then use via: engine)", id, pid)
	}
	return p.signal(sig)
}
