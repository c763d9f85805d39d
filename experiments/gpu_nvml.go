package experiments

import (
	"strconv"
	"time"

	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/report"
)

// SeriesGPUUtil is a real GPU's utilisation in percent (NVML's), recorded
// beside SeriesGPUMemoryUsed and SeriesGPUMemoryFree with endpoint "gpu-I".
const SeriesGPUUtil = "gpu_util_percent"

// nvmlSampler records real GPUs through the NVML monitor (a binary built
// with -tags nvml, on a machine with a GPU) for runs against real servers.
// Without NVML or a GPU, openNVMLSampler says so once and returns nil: NVML
// is never called after a failed Init (faults/gpu guards it).
type nvmlSampler struct {
	mon    *gpu.Monitor
	series gpuSeries
}

// openNVMLSampler opens the monitor; now is the run clock of the samples
// and notice receives the one "no GPU" line.
func openNVMLSampler(now func() time.Duration, notice func(string)) *nvmlSampler {
	s := &nvmlSampler{}
	s.mon = gpu.OpenMonitor(gpu.MonitorOptions{
		Interval: gpuSampleInterval,
		Notice:   notice,
		OnSample: func(g gpu.Sample) { s.add(now(), g) },
	})
	if s.mon.Err() != nil {
		return nil
	}
	return s
}

// add folds one sample into the series.
func (s *nvmlSampler) add(at time.Duration, g gpu.Sample) {
	ep := "gpu-" + strconv.Itoa(g.GPU)
	s.series.add(ep, SeriesGPUMemoryUsed, at, float64(g.MemoryUsed))
	s.series.add(ep, SeriesGPUMemoryFree, at, float64(g.MemoryFree))
	if g.UtilGPU >= 0 {
		s.series.add(ep, SeriesGPUUtil, at, float64(g.UtilGPU))
	}
}

// records returns a copy of the series sampled so far, with their units.
func (s *nvmlSampler) records() []report.SeriesRecord {
	if s == nil {
		return nil
	}
	return s.series.records()
}
