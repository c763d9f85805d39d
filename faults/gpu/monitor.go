package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultMonitorInterval is how often a Monitor reads the GPUs.
const DefaultMonitorInterval = 500 * time.Millisecond

// Sample is what the monitor read of one GPU at one moment.
type Sample struct {
	// Time is when the reading was taken.
	Time time.Time `json:"time"`
	// GPU is the device index as NVML (and nvidia-smi) number it.
	GPU int `json:"gpu"`
	// Name is the device's model name, e.g. "NVIDIA H200".
	Name string `json:"name,omitempty"`
	// UUID identifies the device across reboots and renumbering.
	UUID string `json:"uuid,omitempty"`
	// MemoryUsed, MemoryFree and MemoryTotal are device memory in bytes.
	MemoryUsed  uint64 `json:"memory_used_bytes"`
	MemoryFree  uint64 `json:"memory_free_bytes"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
	// UtilGPU and UtilMemory are the percentages of the last sample period
	// in which a kernel ran, and in which memory was read or written; -1
	// when the device does not report them (MIG, some vGPUs).
	UtilGPU    int `json:"util_gpu_percent"`
	UtilMemory int `json:"util_memory_percent"`
	// Processes are the compute processes holding memory on the device.
	// Inside a container their pids are the host's.
	Processes []ProcessMemory `json:"processes,omitempty"`
	// Err says what could not be read this time; the rest is still valid.
	Err string `json:"error,omitempty"`
}

// ProcessMemory is the device memory one process holds.
type ProcessMemory struct {
	// PID is the process id as the driver reports it (the host's).
	PID int `json:"pid"`
	// UsedBytes is -1 when the driver does not say (no permission, MIG).
	UsedBytes int64 `json:"used_bytes"`
}

// MonitorOptions configure OpenMonitor. The zero value is ready to use.
type MonitorOptions struct {
	// Interval is the time between readings (default DefaultMonitorInterval).
	Interval time.Duration
	// OnSample receives every sample, one per GPU per reading, from the
	// goroutine that runs Run.
	OnSample func(Sample)
	// Notice receives, once, the reason the monitor does nothing ("no GPU:
	// ..."); nil drops it (Err still tells).
	Notice func(msg string)
	// Library is the NVML library to load (default libnvidia-ml.so.1).
	Library string
	// Now is the clock of the samples (default time.Now).
	Now func() time.Time
}

// source reads GPUs. Implementations: nvmlSource (build tag nvml), and
// fakes in tests. It is called under the Monitor's lock.
type source interface {
	// devices returns the number of GPUs.
	devices() int
	// sample reads every GPU.
	sample(now time.Time) []Sample
	// close releases the source; nothing is called after it.
	close() error
}

// Monitor reads the GPUs of this machine at an interval. Without a GPU (or
// without NVML support in the build) it does nothing: Err says why, Run
// returns at once. A Monitor is safe for concurrent use.
type Monitor struct {
	o   MonitorOptions
	err error

	mu  sync.Mutex
	src source // nil when there is nothing to read, or once closed
}

// OpenMonitor initialises NVML once. When that fails it tells o.Notice
// once, "no GPU: <reason>", and returns a Monitor that does nothing; NVML
// is then never called again. In a build without NVML the reason is
// ErrNoNVMLBuild.
func OpenMonitor(o MonitorOptions) *Monitor {
	src, err := openSource(o.Library)
	return newMonitor(o, src, err)
}

func newMonitor(o MonitorOptions, src source, err error) *Monitor {
	if o.Interval <= 0 {
		o.Interval = DefaultMonitorInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Monitor{o: o, src: src, err: err}
	if err != nil {
		m.src = nil
		if !errors.Is(err, ErrNoGPU) && !errors.Is(err, ErrNoNVMLBuild) {
			m.err = fmt.Errorf("%w: %w", ErrNoGPU, err)
		}
		if o.Notice != nil {
			o.Notice(m.err.Error())
		}
	}
	return m
}

// Err returns why the monitor does nothing (wrapping ErrNoGPU or
// ErrNoNVMLBuild), or nil when it reads GPUs.
func (m *Monitor) Err() error { return m.err }

// Devices returns the number of GPUs the monitor reads (0 without).
func (m *Monitor) Devices() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.src == nil {
		return 0
	}
	return m.src.devices()
}

// Sample reads every GPU once, now; nil without GPUs or after Close.
func (m *Monitor) Sample() []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.src == nil {
		return nil
	}
	return m.src.sample(m.o.Now())
}

// Run reads every GPU at once and then every interval, handing each sample
// to OnSample, until ctx ends (nil) or the monitor is closed. Without GPUs
// it returns nil at once.
func (m *Monitor) Run(ctx context.Context) error {
	m.mu.Lock()
	idle := m.src == nil
	m.mu.Unlock()
	if idle {
		return nil
	}
	t := time.NewTicker(m.o.Interval)
	defer t.Stop()
	for {
		ss := m.Sample()
		if ss == nil && m.closed() {
			return nil
		}
		if m.o.OnSample != nil {
			for _, s := range ss {
				m.o.OnSample(s)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (m *Monitor) closed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.src == nil
}

// Close shuts NVML down (if it was up). It is idempotent; Run returns after
// it.
func (m *Monitor) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.src == nil {
		return nil
	}
	err := m.src.close()
	m.src = nil
	if err != nil {
		return fmt.Errorf("gpu monitor: %w", err)
	}
	return nil
}
