package capacity

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// cpuSample is a reading of the machine's CPU counters (/proc/stat's first
// line, in clock ticks) and of this process's CPU time (getrusage).
type cpuSample struct {
	busy, total uint64
	proc        time.Duration
	at          time.Time
	ok          bool
}

// readCPU reads the counters; a machine without /proc/stat gives a sample
// that is not ok.
func readCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.proc = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	busy, total, err := parseProcStat(b)
	if err != nil {
		return s
	}
	s.busy, s.total, s.ok = busy, total, true
	return s
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal (guest time is already in user).
// Busy is everything but idle and iowait.
func parseProcStat(b []byte) (busy, total uint64, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, 0, errors.New("/proc/stat: no aggregate cpu line")
	}
	var v [8]uint64
	for i := 0; i < len(v) && i+1 < len(f); i++ {
		n, err := strconv.ParseUint(string(f[i+1]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: field %d: %w", i+1, err)
		}
		v[i] = n
	}
	for _, n := range v {
		total += n
	}
	return total - v[3] - v[4], total, nil
}

// cpuShares is the machine's busy share of its CPU time between a and b,
// and this process's share of the machine's capacity (all its CPUs); -1
// when not known.
func cpuShares(a, b cpuSample) (machine, process float64) {
	machine, process = -1, -1
	if a.ok && b.ok && b.total > a.total {
		machine = float64(b.busy-a.busy) / float64(b.total-a.total)
	}
	if wall := b.at.Sub(a.at); wall > 0 && b.proc >= a.proc {
		process = float64(b.proc-a.proc) / (float64(wall) * float64(runtime.NumCPU()))
	}
	return machine, process
}
