package js

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkSharedArrayMemory makes 200 VUs that each hold a SharedArray of
// a 10,000-element data set (about 2 MiB of JSON) and read one element of
// it, and reports the heap per VU with and without the data set. The
// data set is kept once for the run: the difference per VU stays around
// the data's size divided by the VUs (11 KiB here), far from a copy each
// (2 MiB).
func BenchmarkSharedArrayMemory(b *testing.B) {
	const vus, elems = 200, 10_000
	data := make([]map[string]any, elems)
	for i := range data {
		data[i] = map[string]any{"id": i, "prompt": strings.Repeat("lorem ipsum ", 16), "max_tokens": 64}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		b.Fatal(err)
	}
	heapPerVU := func(b *testing.B, script string) float64 {
		dir := b.TempDir()
		writeBenchFiles(b, dir, map[string]string{"script.js": script, "data.json": string(raw)})
		sh, err := NewShared(SharedOptions{Console: &strings.Builder{}})
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close()
		prog, err := Load(filepath.Join(dir, "script.js"))
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		held := make([]*VU, vus)
		for i := range held {
			if held[i], err = NewVU(context.Background(), i+1, prog, sh); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(held)
		return float64(after.HeapAlloc-before.HeapAlloc) / vus
	}
	for range b.N {
		with := heapPerVU(b, `import { SharedArray } from 'k6/data';
const a = new SharedArray('data', () => JSON.parse(open('./data.json')));
export const first = a[__VU % a.length].id;
export default function () {}
`)
		without := heapPerVU(b, "export const first = __VU;\nexport default function () {}\n")
		b.ReportMetric(with/1024, "KiB/VU-with-data")
		b.ReportMetric(without/1024, "KiB/VU-without")
		b.Logf("%d VUs, %d elements (%.1f MiB of JSON): %.1f KiB per VU with the SharedArray, %.1f KiB without",
			vus, elems, float64(len(raw))/(1<<20), with/1024, without/1024)
	}
}

// writeBenchFiles writes files into dir.
func writeBenchFiles(b *testing.B, dir string, files map[string]string) {
	b.Helper()
	for name, src := range files {
		if err := writeFile(filepath.Join(dir, name), src); err != nil {
			b.Fatal(fmt.Errorf("write %s: %w", name, err))
		}
	}
}

func writeFile(path, src string) error { return os.WriteFile(path, []byte(src), 0o644) }
