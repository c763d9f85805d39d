//go:build !unix

package faults

import "os"

// lockFile is a no-op where advisory locks are not available.
func lockFile(*os.File) error { return nil }
