package experiments

import (
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

func TestVGPUSamplerSamplesTheLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const total = 10 * vgpu.GiB
	// GPU 0 holds weights and a balloon, GPU 1 only weights, as a
	// replica and a balloon would (each reservation tagged with what it is).
	for i := range 2 {
		d, err := vgpu.Open(dir, i, total)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := d.Reserve(4*vgpu.GiB, "weights"); err != nil {
			t.Fatal(err)
		}
	}
	balloon, err := vgpu.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := balloon.Reserve(5*vgpu.GiB, balloonWhat); err != nil {
		t.Fatal(err)
	}

	s, err := openVGPUSampler(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	s.sample(time.Second)
	if err := balloon.Close(); err != nil {
		t.Fatal(err)
	}
	// run samples once at once, then returns when ctx ends.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.run(ctx, func() time.Duration { return 2 * time.Second }); err != nil {
		t.Fatal(err)
	}

	gib := float64(vgpu.GiB)
	tests := []struct {
		endpoint, name string
		want           [][2]float64
	}{
		{"vgpu-0", SeriesGPUMemoryUsed, [][2]float64{{1, 9 * gib}, {2, 4 * gib}}},
		{"vgpu-0", SeriesGPUMemoryFree, [][2]float64{{1, 1 * gib}, {2, 6 * gib}}},
		{"vgpu-0", SeriesGPUMemoryBalloon, [][2]float64{{1, 5 * gib}, {2, 0}}},
		{"vgpu-1", SeriesGPUMemoryUsed, [][2]float64{{1, 4 * gib}, {2, 4 * gib}}},
		{"vgpu-1", SeriesGPUMemoryFree, [][2]float64{{1, 6 * gib}, {2, 6 * gib}}},
		{"vgpu-1", SeriesGPUMemoryBalloon, [][2]float64{{1, 0}, {2, 0}}},
	}
	recs := s.records()
	if len(recs) != len(tests) {
		t.Fatalf("got %d series, want %d: %+v", len(recs), len(tests), recs)
	}
	for _, tt := range tests {
		t.Run(tt.endpoint+"/"+tt.name, func(t *testing.T) {
			var got *report.SeriesRecord
			for i := range recs {
				if recs[i].Endpoint == tt.endpoint && recs[i].Name == tt.name {
					got = &recs[i]
				}
			}
			if got == nil {
				t.Fatalf("series missing from %+v", recs)
			}
			if got.Unit != "bytes" {
				t.Errorf("unit %q, want bytes", got.Unit)
			}
			if len(got.Points) != len(tt.want) {
				t.Fatalf("got points %v, want %v", got.Points, tt.want)
			}
			for i := range tt.want {
				if got.Points[i] != tt.want[i] {
					t.Errorf("point %d: got %v, want %v", i, got.Points[i], tt.want[i])
				}
			}
		})
	}
}

func TestVGPUSamplerNeedsTheLedger(t *testing.T) {
	t.Parallel()
	// No replica recorded a capacity: nothing to sample, and an error.
	if _, err := openVGPUSampler(t.TempDir(), 1); err == nil {
		t.Fatal("openVGPUSampler on an empty ledger: got nil error, want one")
	}
}

func TestRecordsOfNoSamplerIsEmpty(t *testing.T) {
	t.Parallel()
	var s *vgpuSampler
	if got := s.records(); got != nil {
		t.Errorf("records of nil sampler = %+v, want nil", got)
	}
}
