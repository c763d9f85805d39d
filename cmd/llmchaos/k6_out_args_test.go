package main

import (
	"reflect"
	"testing"
	"time"
)

// TestRunOutsReadsK6OutputArguments: --out values as k6 reads them for a
// script: a file, csv's KEY=VALUE options over the K6_CSV_* variables
// over k6's defaults, json or csv alone, and the run directory.
func TestRunOutsReadsK6OutputArguments(t *testing.T) {
	t.Parallel()
	env := map[string]string{"K6_CSV_TIME_FORMAT": "unix_milli", "K6_CSV_SAVE_INTERVAL": "3s"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name    string
		values  []string
		dir     string
		samples []sampleOut
	}{
		{"csv file, env options", []string{"csv=r.csv"}, "", []sampleOut{{format: "csv", path: "r.csv", timeFormat: "unix_milli", saveInterval: 3 * time.Second}}},
		{"csv options over env", []string{"csv=fileName=r.csv.gz,timeFormat=rfc3339"}, "", []sampleOut{{format: "csv", path: "r.csv.gz", timeFormat: "rfc3339", saveInterval: 3 * time.Second}}},
		{"csv alone", []string{"csv"}, "", []sampleOut{{format: "csv", path: "file.csv", timeFormat: "unix_milli", saveInterval: 3 * time.Second}}},
		{"json alone and a directory", []string{"json", "runs/x"}, "runs/x", []sampleOut{{format: "json", path: "-"}}},
		{"json file", []string{"json=out.json.gz"}, "", []sampleOut{{format: "json", path: "out.json.gz"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, samples, err := runOuts(tc.values, true, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if dir != tc.dir || !reflect.DeepEqual(samples, tc.samples) {
				t.Errorf("runOuts(%q) = %q, %+v; want %q, %+v", tc.values, dir, samples, tc.dir, tc.samples)
			}
		})
	}
	if dir, samples, err := runOuts([]string{"csv"}, false, getenv); err != nil || dir != "csv" || samples != nil {
		t.Errorf("an experiment's --out csv = %q, %v, %v; want the run directory csv", dir, samples, err)
	}
}
