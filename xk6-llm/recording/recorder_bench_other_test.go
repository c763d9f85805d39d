//go:build !linux

package recording

import "time"

// threadCPU runs fn; thread CPU time is measured on Linux only.
func threadCPU(fn func()) (time.Duration, bool) {
	fn()
	return 0, false
}

// processCPU runs fn; process CPU time is measured on Linux only.
func processCPU(fn func()) (time.Duration, bool) {
	fn()
	return 0, false
}
