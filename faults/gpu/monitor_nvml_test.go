//go:build nvml && cgo

package gpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMonitorNVMLWithoutDriver opens NVML where its library is absent: Init
// fails, the monitor says so once and does nothing else. Had any NVML call
// followed the failed Init, go-nvml would have killed this process.
func TestMonitorNVMLWithoutDriver(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	var notices []string
	m := OpenMonitor(MonitorOptions{Library: missing, Notice: func(s string) { notices = append(notices, s) }})
	if !errors.Is(m.Err(), ErrNoGPU) {
		t.Fatalf("Err() = %v, want ErrNoGPU", m.Err())
	}
	want := "no GPU: NVML library " + missing + " not found (no NVIDIA driver here)"
	if len(notices) != 1 || notices[0] != want {
		t.Errorf("notices = %q, want exactly [%q]", notices, want)
	}
	for range 3 { // every entry point, more than once
		if err := m.Run(context.Background()); err != nil {
			t.Errorf("Run: %v", err)
		}
		if m.Sample() != nil || m.Devices() != 0 {
			t.Error("sampled without NVML")
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if len(notices) != 1 {
		t.Errorf("said %d times why there is no GPU, want once", len(notices))
	}
}

// TestMonitorNVMLDefaultLibraryInAChild opens the default library in a
// child process (this test binary in helper mode), so that a crash, should
// NVML be touched after a failed Init, shows as the child's death.
func TestMonitorNVMLDefaultLibraryInAChild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=monitor")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("monitor helper: %v\n%s", err, out)
	}
	s := string(out)
	switch {
	case strings.Contains(s, "devices "):
		t.Skipf("this machine has GPUs: %s", s)
	case strings.Count(s, "no GPU: ") != 1 || !strings.Contains(s, "still alive"):
		t.Errorf("helper output %q, want one \"no GPU: ...\" notice and \"still alive\"", s)
	}
}
