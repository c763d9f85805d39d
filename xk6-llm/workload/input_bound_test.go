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

// TestFileLengthsAreBounded: a length a trace's line or a dataset's entry
// gives (the prompt a trace's input_length makes, the max_tokens an
// output length asks) is bounded by MaxLength as the flags' and the
// experiment's are, with the line named: a trace asking for a prompt of
// 2 billion tokens would otherwise build it; MaxLength itself is kept.
func TestFileLengthsAreBounded(t *testing.T) {
	tooLong := "2000000000 tokens is more than 2097152 tokens"
	for _, tt := range []struct {
		name, trace, want string
	}{
		{"input_length", `{"timestamp": 0, "input_length": 2000000000}`, "t.jsonl:2: input_length: " + tooLong},
		{"output_length", `{"timestamp": 0, "output_length": 2000000000}`, "t.jsonl:2: output_length: " + tooLong},
	} {
		_, err := ParseTrace(strings.NewReader(`{"timestamp": 0, "input_length": 16}`+"\n"+tt.trace+"\n"), "t.jsonl")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("trace %s: %v, want %q", tt.name, err, tt.want)
		}
	}
	tr, err := ParseTrace(strings.NewReader(`{"timestamp": 0, "input_length": 2097152, "output_length": 2097152}`+"\n"), "t.jsonl")
	if err != nil || tr.Entries[0].InputTokens != MaxLength || tr.Entries[0].OutputTokens != MaxLength {
		t.Errorf("a trace at the bound: %v", err)
	}
	for _, tt := range []struct {
		name, entry, want string
	}{
		{"output_tokens", `{"prompt": "hi", "output_tokens": 2000000000}`, "d.jsonl:2: output length: " + tooLong},
		{"max_tokens", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2000000000}`, "d.jsonl:2: output length: " + tooLong},
	} {
		_, err := ParseJSONLDataset(strings.NewReader(`{"prompt": "hello"}`+"\n"+tt.entry+"\n"), "d.jsonl")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dataset %s: %v, want %q", tt.name, err, tt.want)
		}
	}
	d, err := ParseJSONLDataset(strings.NewReader(`{"prompt": "hello", "output_tokens": 2097152}`+"\n"), "d.jsonl")
	if err != nil || d.Entries[0].Turns[0].OutputTokens != MaxLength {
		t.Errorf("a dataset entry at the bound: %v", err)
	}
}
