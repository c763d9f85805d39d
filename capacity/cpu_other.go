//go:build !linux

package capacity

import "time"

// cpuSample is a reading of the CPU counters; outside Linux none are read.
type cpuSample struct {
	at time.Time
}

// readCPU notes the time only: the machine's CPU is not known here.
func readCPU() cpuSample { return cpuSample{at: time.Now()} }

// cpuShares is unknown (-1, -1) outside Linux.
func cpuShares(a, b cpuSample) (machine, process float64) { return -1, -1 }
