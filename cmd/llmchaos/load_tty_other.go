//go:build !linux

package main

import "io"

// isTerminal reports whether w is a terminal. Off Linux the live output is
// always plain lines every --progress.
func isTerminal(io.Writer) bool { return false }
