package supervisor

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrParentDied is the cause (context.Cause) of a WatchParent context whose
// process's parent has exited.
var ErrParentDied = errors.New("parent process exited")

// parentPollInterval is how often the fallback watcher re-reads getppid when
// the kernel offers no pidfd.
const parentPollInterval = 100 * time.Millisecond

// WatchParent returns a context that is cancelled, with cause ErrParentDied,
// when the parent of the calling process exits. The parent is the one at the
// time of the call; if it has already died by then (the process was adopted
// before it could look) the watch cannot tell and waits for ctx alone.
//
// It waits on a pidfd of the parent (Linux 5.3 and later), which makes no
// periodic wake-ups, and falls back to polling getppid every 100 ms.
// Unlike PR_SET_PDEATHSIG it is not fooled when the thread that started this
// process exits while the parent lives on. The returned stop function cancels
// the context and waits for the watcher goroutine to end.
func WatchParent(ctx context.Context) (context.Context, func()) {
	return watchParent(ctx, true)
}

func watchParent(ctx context.Context, usePidfd bool) (context.Context, func()) {
	ppid := os.Getppid()
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if usePidfd {
			died, ok := waitPidfd(wctx, ppid)
			if ok {
				if died {
					cancel(ErrParentDied)
				}
				return
			}
		}
		if pollParent(wctx, ppid) {
			cancel(ErrParentDied)
		}
	}()
	return wctx, func() {
		cancel(context.Canceled)
		<-done
	}
}

// waitPidfd waits until process ppid exits (died) or ctx ends. ok is false
// when pidfds cannot be used here and the caller should poll instead.
func waitPidfd(ctx context.Context, ppid int) (died, ok bool) {
	f, err := openPidfd(ppid)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if os.Getppid() != ppid {
		return true, true // it died before the pidfd was open
	}
	exited, err := waitExit(ctx, f)
	if err != nil {
		return false, false
	}
	return exited, true
}

// openPidfd opens a non-blocking pidfd of pid. Being non-blocking, it goes
// through the runtime's poller, so a deadline can interrupt a wait on it.
func openPidfd(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, err // not pollable: deadlines need the poller
	}
	return f, nil
}

// waitExit waits until the process of pidfd f exits (true) or ctx ends
// (false). A pidfd becomes readable when its process exits.
func waitExit(ctx context.Context, f *os.File) (bool, error) {
	if err := f.SetReadDeadline(time.Time{}); err != nil { // a former wait's deadline
		return false, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err == nil && n > 0
	})
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, nil
	default:
		return false, err // an unexpected wake-up error: the caller polls instead
	}
}

// pollParent polls getppid until it changes (died) or ctx ends.
func pollParent(ctx context.Context, ppid int) bool {
	t := time.NewTicker(parentPollInterval)
	defer t.Stop()
	for {
		if os.Getppid() != ppid {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
