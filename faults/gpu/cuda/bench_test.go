package cuda

import (
	"context"
	"testing"

	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// BenchmarkHoldAllButH200 fills a fake 141 GiB device to within 1 GiB and
// releases it again: the cost of the purego calls and of the chunk loop
// (about 140 cuMemAlloc_v2 and as many cuMemGetInfo_v2), not of a real
// driver's allocations.
func BenchmarkHoldAllButH200(b *testing.B) {
	if fakeDriver == "" {
		b.Skip(fakeSkip)
	}
	b.Setenv("FAKECUDA_TOTAL_MIB", "144384")
	lib := b.TempDir() + "/libcuda.so.1"
	copyFile(b, fakeDriver, lib)
	bl, err := Open(context.Background(), Options{Library: lib})
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Close()
	var took int64
	for b.Loop() {
		n, err := bl.HoldAllBut(context.Background(), vgpu.GiB)
		if err != nil {
			b.Fatal(err)
		}
		took = n
		if err := bl.Release(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(took)/float64(vgpu.GiB), "GiB_held")
}
