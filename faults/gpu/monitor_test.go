package gpu

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource stands in for NVML behind the narrow source interface: it
// counts readings and refuses any call after close, as NVML must never be
// called after Shutdown.
type fakeSource struct {
	mu       sync.Mutex
	n        int
	readings int
	closed   bool
	misuse   []string
}

func (f *fakeSource) devices() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.misuse = append(f.misuse, "devices after close")
	}
	return f.n
}

func (f *fakeSource) sample(now time.Time) []Sample {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.misuse = append(f.misuse, "sample after close")
		return nil
	}
	f.readings++
	out := make([]Sample, f.n)
	for i := range out {
		out[i] = Sample{Time: now, GPU: i, MemoryUsed: uint64(f.readings), UtilGPU: -1, UtilMemory: -1}
	}
	return out
}

func (f *fakeSource) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.misuse = append(f.misuse, "close twice")
	}
	f.closed = true
	return nil
}

func TestMonitorRunsUntilCancelled(t *testing.T) {
	src := &fakeSource{n: 2}
	var mu sync.Mutex
	var got []Sample
	enough := make(chan struct{})
	m := newMonitor(MonitorOptions{Interval: time.Millisecond, OnSample: func(s Sample) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
		if len(got) == 6 {
			close(enough)
		}
	}, Now: func() time.Time { return time.Unix(42, 0) }}, src, nil)
	if m.Err() != nil || m.Devices() != 2 {
		t.Fatalf("Err() = %v, Devices() = %d; want nil and 2", m.Err(), m.Devices())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	select {
	case <-enough:
	case <-time.After(10 * time.Second):
		t.Fatal("fewer than 6 samples within 10s at a 1ms interval")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	for i, s := range got[:6] {
		// One sample per GPU per reading, GPUs in order, readings counted.
		if s.GPU != i%2 || s.MemoryUsed != uint64(i/2+1) || !s.Time.Equal(time.Unix(42, 0)) {
			t.Errorf("sample %d = %+v, want GPU %d of reading %d at the injected clock", i, s, i%2, i/2+1)
		}
	}
	mu.Unlock()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if ss := m.Sample(); ss != nil || m.Devices() != 0 {
		t.Errorf("after Close: Sample() = %v, Devices() = %d; want nothing", ss, m.Devices())
	}
	if err := m.Run(context.Background()); err != nil {
		t.Errorf("Run after Close: %v", err)
	}
	if len(src.misuse) != 0 {
		t.Errorf("source misused: %v", src.misuse)
	}
}

func TestMonitorCloseEndsRun(t *testing.T) {
	src := &fakeSource{n: 1}
	first := make(chan struct{}, 1)
	m := newMonitor(MonitorOptions{Interval: time.Millisecond, OnSample: func(Sample) {
		select {
		case first <- struct{}{}:
		default:
		}
	}}, src, nil)
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	<-first
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of Close")
	}
	if len(src.misuse) != 0 {
		t.Errorf("source misused: %v", src.misuse)
	}
}

func TestMonitorWithoutGPUDoesNothing(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		want    string
		wantIs  error
		sampled bool
	}{
		{name: "init failed", err: errors.New("NVML library libnvidia-ml.so.1 not found"), want: "no GPU: NVML library libnvidia-ml.so.1 not found", wantIs: ErrNoGPU},
		{name: "already no GPU", err: ErrNoGPU, want: "no GPU", wantIs: ErrNoGPU},
		{name: "no NVML in the build", err: ErrNoNVMLBuild, want: "GPU monitor off: built without NVML support", wantIs: ErrNoNVMLBuild},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var notices []string
			src := &fakeSource{n: 1}
			m := newMonitor(MonitorOptions{Notice: func(s string) { notices = append(notices, s) },
				OnSample: func(Sample) { t.Error("OnSample called without a GPU") }}, src, tt.err)
			if len(notices) != 1 || !strings.HasPrefix(notices[0], tt.want) {
				t.Errorf("notices = %q, want one starting with %q", notices, tt.want)
			}
			if !errors.Is(m.Err(), tt.wantIs) {
				t.Errorf("Err() = %v, want it to wrap %v", m.Err(), tt.wantIs)
			}
			if err := m.Run(context.Background()); err != nil {
				t.Errorf("Run: %v, want nil at once", err)
			}
			if m.Sample() != nil || m.Devices() != 0 || m.Close() != nil {
				t.Error("a monitor without GPU sampled, counted devices or failed to close")
			}
			if src.readings != 0 || src.closed {
				t.Errorf("the source was used after a failed open (%d readings, closed %v)", src.readings, src.closed)
			}
			if len(notices) != 1 {
				t.Errorf("said %d times why there is no GPU, want once", len(notices))
			}
		})
	}
}
