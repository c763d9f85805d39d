//go:build !nvml || !cgo

package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMonitorStubSaysBuiltWithoutNVML(t *testing.T) {
	var notices []string
	m := OpenMonitor(MonitorOptions{Notice: func(s string) { notices = append(notices, s) }})
	if !errors.Is(m.Err(), ErrNoNVMLBuild) {
		t.Fatalf("Err() = %v, want ErrNoNVMLBuild", m.Err())
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "built without NVML support") {
		t.Errorf("notices = %q, want one saying it was built without NVML support", notices)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Errorf("Run: %v, want nil at once", err)
	}
	if m.Sample() != nil || m.Devices() != 0 || m.Close() != nil {
		t.Error("the stub monitor sampled, counted devices or failed to close")
	}
}
