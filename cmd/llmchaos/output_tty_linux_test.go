//go:build linux

package main

import (
	"io"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/report"
)

// openPTY opens a pseudo-terminal and returns its terminal side; what is
// written to it is drained.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pseudo-terminal number: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	go func() { _, _ = io.Copy(io.Discard, master) }()
	return tty
}

// TestWithColorOnTerminal: on a real terminal the summary is coloured,
// unless NO_COLOR has any non-empty value or --no-color is given.
func TestWithColorOnTerminal(t *testing.T) {
	tty := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("isTerminal(pty) = false")
	}
	tests := []struct {
		name    string
		env     string
		noColor bool
		want    bool
	}{
		{"plain", "", false, true},
		{"NO_COLOR", "1", false, false},
		{"NO_COLOR any value", "false", false, false},
		{"--no-color", "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tt.env)
			if got := withColor(report.TextOptions{}, tty, tt.noColor).Color; got != tt.want {
				t.Errorf("colour = %v, want %v", got, tt.want)
			}
		})
	}
}
