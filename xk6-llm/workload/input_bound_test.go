package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputFilesMustBeRegular: a dataset or trace that is a device or a
// directory is refused with the file named, before it is read (reading
// /dev/zero would never end), and a regular file still loads.
func TestInputFilesMustBeRegular(t *testing.T) {
	for _, tt := range []struct{ name, path string }{{"device", "/dev/zero"}, {"directory", t.TempDir()}} {
		if _, err := LoadDataset(tt.path, DatasetJSONL); err == nil || !strings.Contains(err.Error(), "dataset "+tt.path+": not a regular file") {
			t.Errorf("dataset %s: %v", tt.name, err)
		}
		if _, err := LoadTrace(tt.path); err == nil || !strings.Contains(err.Error(), "trace "+tt.path+": not a regular file") {
			t.Errorf("trace %s: %v", tt.name, err)
		}
	}
	// A sparse file one byte over the bound: refused by its size alone.
	big := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxInputFileBytes+1); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	if _, err := LoadDataset(big, DatasetJSONL); err == nil || !strings.Contains(err.Error(), "is over the limit of 2147483648 bytes (2 GiB)") {
		t.Errorf("a dataset over the bound: %v", err)
	}
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(`{"prompt": "hello there", "output_tokens": 8}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := LoadDataset(p, DatasetJSONL); err != nil || d == nil {
		t.Errorf("a regular dataset: %v", err)
	}
}
