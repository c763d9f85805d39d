//go:build linux

package recording

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1

// processCPU runs fn and returns the CPU time the whole process spent
// meanwhile (all threads).
func processCPU(fn func()) (time.Duration, bool) {
	var a, b syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &a) != nil {
		fn()
		return 0, false
	}
	fn()
	if syscall.Getrusage(syscall.RUSAGE_SELF, &b) != nil {
		return 0, false
	}
	return rusageCPU(&b) - rusageCPU(&a), true
}

func rusageCPU(r *syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// threadCPU runs fn on a locked OS thread and returns the CPU time that
// thread spent in it: unlike wall time, it does not count time spent
// waiting for a core on a busy machine.
func threadCPU(fn func()) (time.Duration, bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b syscall.Rusage
	if syscall.Getrusage(rusageThread, &a) != nil {
		fn()
		return 0, false
	}
	fn()
	if syscall.Getrusage(rusageThread, &b) != nil {
		return 0, false
	}
	return rusageCPU(&b) - rusageCPU(&a), true
}
