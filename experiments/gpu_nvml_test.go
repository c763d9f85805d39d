package experiments

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults/gpu"
)

// Without NVML (the default build) or without a GPU, the sampler says so
// once and the run goes on without GPU samples.
func TestNVMLSamplerWithoutGPUSaysSoOnce(t *testing.T) {
	t.Parallel()
	var notices []string
	s := openNVMLSampler(func() time.Duration { return 0 }, func(msg string) { notices = append(notices, msg) })
	if s != nil {
		t.Skip("this machine has an NVML GPU: the no-GPU path does not apply")
	}
	if len(notices) != 1 || !strings.Contains(strings.ToLower(notices[0]), "gpu") && !strings.Contains(notices[0], "NVML") {
		t.Fatalf("notices = %q, want one line saying why there are no GPU samples", notices)
	}
	if got := s.records(); got != nil {
		t.Errorf("records of a nil sampler = %v, want none", got)
	}
}

func TestNVMLSamplerSeries(t *testing.T) {
	t.Parallel()
	s := &nvmlSampler{}
	s.add(500*time.Millisecond, gpu.Sample{GPU: 0, MemoryUsed: 10 << 30, MemoryFree: 130 << 30, UtilGPU: 80})
	s.add(time.Second, gpu.Sample{GPU: 0, MemoryUsed: 20 << 30, MemoryFree: 120 << 30, UtilGPU: -1})
	got := map[string][][2]float64{}
	units := map[string]string{}
	for _, r := range s.records() {
		if r.Endpoint != "gpu-0" {
			t.Errorf("endpoint %q, want gpu-0", r.Endpoint)
		}
		got[r.Name] = r.Points
		units[r.Name] = r.Unit
	}
	want := map[string][][2]float64{
		SeriesGPUMemoryUsed: {{0.5, 10 << 30}, {1, 20 << 30}},
		SeriesGPUMemoryFree: {{0.5, 130 << 30}, {1, 120 << 30}},
		SeriesGPUUtil:       {{0.5, 80}}, // -1 (not reported) is left out
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Errorf("%s: %v, want %v", name, g, w)
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s[%d] = %v, want %v", name, i, g[i], w[i])
			}
		}
	}
	if units[SeriesGPUUtil] != "percent" || units[SeriesGPUMemoryUsed] != "bytes" {
		t.Errorf("units = %v", units)
	}
}
