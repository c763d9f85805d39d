package workload

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadTrace(t *testing.T) {
	t.Parallel()
	tr, err := LoadTrace(filepath.Join("testdata", "traces", "trace_small.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Offsets from the first line's timestamp (1000 ms); the blank line is
	// skipped; lengths carried when present; hash_ids ignored.
	want := []Arrival{
		{At: 0, InputTokens: 655, OutputTokens: 52},
		{At: 0, InputTokens: 672, OutputTokens: 26},
		{At: 250500 * time.Microsecond, InputTokens: 3000},
		{At: 2052 * time.Millisecond, OutputTokens: 794},
		{At: 10535 * time.Millisecond},
	}
	if !reflect.DeepEqual(tr.Entries, want) {
		t.Errorf("entries = %+v\nwant      %+v", tr.Entries, want)
	}
}

func TestTraceArrivals(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "traces", "trace_small.jsonl")
	tests := []struct {
		name     string
		cfg      ArrivalConfig
		wantAt   []time.Duration
		wantIn0  int
		wantOut0 int
	}{
		{"whole trace", ArrivalConfig{TraceFile: path}, []time.Duration{0, 0, 250500 * time.Microsecond, 2052 * time.Millisecond, 10535 * time.Millisecond}, 655, 52},
		{"duration cuts", ArrivalConfig{TraceFile: path, Duration: 2052 * time.Millisecond}, []time.Duration{0, 0, 250500 * time.Microsecond}, 655, 52},
		{"requests cut", ArrivalConfig{TraceFile: path, Requests: 2}, []time.Duration{0, 0}, 655, 52},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr, err := NewArrivals(tt.cfg.WithDefaults(), testRand(1))
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			var first Arrival
			for a, ok := arr.Next(); ok; a, ok = arr.Next() {
				if len(got) == 0 {
					first = a
				}
				got = append(got, a.At)
			}
			if !reflect.DeepEqual(got, tt.wantAt) {
				t.Errorf("arrivals at %v, want %v", got, tt.wantAt)
			}
			if first.InputTokens != tt.wantIn0 || first.OutputTokens != tt.wantOut0 {
				t.Errorf("first arrival lengths = %d/%d, want %d/%d", first.InputTokens, first.OutputTokens, tt.wantIn0, tt.wantOut0)
			}
			if _, ok := arr.Next(); ok {
				t.Error("Next returned ok after the end")
			}
		})
	}
}

func TestLoadTraceErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"trace_unsorted.jsonl", []string{"trace_unsorted.jsonl:3:", "timestamp 10 ms is before the previous line's 20 ms"}},
		{"trace_no_timestamp.jsonl", []string{"trace_no_timestamp.jsonl:2:", `missing "timestamp"`}},
		{"trace_bad_length.jsonl", []string{"trace_bad_length.jsonl:4:", "input_length: 12.5 is not a whole number"}},
		{"trace_bad_json.jsonl", []string{"trace_bad_json.jsonl:2:", "not a JSON object"}},
		{"missing.jsonl", []string{"missing.jsonl", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadTrace(filepath.Join("testdata", "traces", tt.file))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := ParseTrace(strings.NewReader("\n\n"), "empty.jsonl"); err == nil || !strings.Contains(err.Error(), "empty.jsonl: no requests") {
		t.Errorf("empty trace error = %v", err)
	}
}
