//go:build !linux

package gameday

import "time"

// threadCPU is 0 where threads' own clocks are not read: the stream's CPU
// time is then not measured.
func threadCPU() time.Duration { return 0 }
