package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmchaos/llmchaos/internal/field"
)

// FuzzLoad feeds arbitrary bytes to the loader: it never panics, every
// problem it reports has a line and a column, an accepted file validates
// again from its spec, and its defaults keep it valid. The seed corpus is
// under testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "quickstart.yaml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(baseDoc))
	for _, in := range deepInputs() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			spec  *Spec
			warns field.Problems
			err   error
		)
		boundedAlloc(t, "Parse", func() { spec, warns, err = Parse("fuzz.yaml", data) })
		ps := warns
		if err != nil {
			var ok bool
			if ps, ok = err.(field.Problems); !ok {
				t.Fatalf("error %T %v, want field.Problems", err, err)
			}
			if spec != nil {
				t.Fatalf("a spec with errors")
			}
		}
		for _, p := range ps {
			if p.Line < 1 || p.Col < 1 || p.File != "fuzz.yaml" {
				t.Fatalf("problem without a position: %#v", p)
			}
		}
		if err != nil {
			return
		}
		if err := spec.Validate().Err(); err != nil {
			t.Fatalf("accepted spec fails Validate: %v", err)
		}
		d := spec.WithDefaults()
		if err := d.Validate().Err(); err != nil {
			t.Fatalf("defaults make an accepted spec invalid: %v", err)
		}
	})
}
