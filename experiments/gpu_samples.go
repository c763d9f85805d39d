package experiments

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
)

// Series of the GPU memory samples a target.sim run records in
// report.Document.GPU, one of each per replica's virtual GPU (endpoint
// "vgpu-I"), in bytes.
const (
	// SeriesGPUMemoryUsed is the memory reserved on the GPU by every live
	// process (the replica's weights and KV cache, a balloon): total − free.
	SeriesGPUMemoryUsed = "gpu_memory_used_bytes"
	// SeriesGPUMemoryFree is the memory free on the GPU.
	SeriesGPUMemoryFree = "gpu_memory_free_bytes"
	// SeriesGPUMemoryBalloon is the share of the used memory that
	// gpu.memory_pressure balloons hold.
	SeriesGPUMemoryBalloon = "gpu_memory_balloon_bytes"
)

// gpuSampleInterval is how often the vGPU ledger is read, as the NVML
// monitor reads a real GPU.
const gpuSampleInterval = 500 * time.Millisecond

// balloonWhat is what a balloon's reservations say they are for in the
// vGPU ledger (`llmchaos gpu-balloon`).
const balloonWhat = "balloon"

// vgpuSampler samples the virtual GPUs of a simulator's replicas. Its
// series are owned by its run goroutine until run returns; records may be
// called at any time.
type vgpuSampler struct {
	devs   []*vgpu.Device
	series gpuSeries
}

// gpuSeries is the GPU series a sampler (of virtual GPUs, or of real ones
// through NVML) has recorded so far. It is safe for concurrent use.
type gpuSeries struct {
	mu     sync.Mutex
	series []report.SeriesRecord
}

// add records value v of series name for endpoint ep at run-clock time at.
func (g *gpuSeries) add(ep, name string, at time.Duration, v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.series = report.AddPoint(g.series, ep, name, at, v)
}

// after returns the samples taken after run-clock time t, as monitor
// samples (endpoint, name, value), for a live view.
func (g *gpuSeries) after(t time.Duration) []scrape.Sample {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []scrape.Sample
	for _, r := range g.series {
		for i := len(r.Points) - 1; i >= 0; i-- {
			at := durationOf(r.Points[i][0])
			if at <= t {
				break
			}
			out = append(out, scrape.Sample{At: at, Endpoint: r.Endpoint, Name: r.Name, Value: r.Points[i][1]})
		}
	}
	return out
}

// records returns a copy of the series recorded so far, with their units:
// percent for SeriesGPUUtil, bytes for the memory series.
func (g *gpuSeries) records() []report.SeriesRecord {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]report.SeriesRecord, len(g.series))
	for i, r := range g.series {
		r.Points = append([][2]float64(nil), r.Points...)
		r.Unit = "bytes"
		if r.Name == SeriesGPUUtil {
			r.Unit = "percent"
		}
		out[i] = r
	}
	return out
}

// openVGPUSampler opens the virtual GPUs 0..n-1 of the ledger in dir,
// adopting the capacity the replicas recorded.
func openVGPUSampler(dir string, n int) (*vgpuSampler, error) {
	s := &vgpuSampler{}
	for i := range n {
		d, err := vgpu.Open(dir, i, 0)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("sample GPU memory: %w", err), s.close())
		}
		s.devs = append(s.devs, d)
	}
	return s, nil
}

// run samples every device at once and then every gpuSampleInterval until
// ctx ends; now gives the run-clock time of a sample. It closes the
// devices before it returns. A device that cannot be read is skipped for
// that sample.
func (s *vgpuSampler) run(ctx context.Context, now func() time.Duration) error {
	tick := time.NewTicker(gpuSampleInterval)
	defer tick.Stop()
	for {
		s.sample(now())
		select {
		case <-ctx.Done():
			return s.close()
		case <-tick.C:
		}
	}
}

// sample records one sample of every device at run-clock time at.
func (s *vgpuSampler) sample(at time.Duration) {
	for _, d := range s.devs {
		hs, err := d.Holders()
		if err != nil {
			continue
		}
		var used, balloon int64
		for _, h := range hs {
			used += h.Bytes
			if h.What == balloonWhat {
				balloon += h.Bytes
			}
		}
		free := max(d.Total()-used, 0)
		ep := "vgpu-" + strconv.Itoa(d.Index())
		s.series.add(ep, SeriesGPUMemoryUsed, at, float64(used))
		s.series.add(ep, SeriesGPUMemoryFree, at, float64(free))
		s.series.add(ep, SeriesGPUMemoryBalloon, at, float64(balloon))
	}
}

// records returns a copy of the series sampled so far, with their unit.
func (s *vgpuSampler) records() []report.SeriesRecord {
	if s == nil {
		return nil
	}
	return s.series.records()
}

// close closes the devices (the sampler holds no reservation).
func (s *vgpuSampler) close() error {
	var errs []error
	for _, d := range s.devs {
		errs = append(errs, d.Close())
	}
	s.devs = nil
	return errors.Join(errs...)
}
