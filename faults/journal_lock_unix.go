//go:build unix

package faults

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive advisory lock on f without waiting. The kernel
// drops it when the process dies, so a killed run never blocks Recover.
func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrJournalBusy
	}
	return err
}
