package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
)

// The capacity file this package writes (Result.WriteFile) is the one an
// experiment's rate given as a share reads (workload: {rate: 80%,
// capacity: FILE}, resolved by experiments/spec): these tests write it
// here and resolve experiments that name it.

// experiment writes an experiment file with the given workload next to a
// copy of the capacity fixture changed by edit, and returns its path.
func experiment(t *testing.T, workload string, edit func(*Result)) string {
	t.Helper()
	dir := t.TempDir()
	r := readFixture(t)
	if edit != nil {
		edit(r)
	}
	if err := r.WriteFile(filepath.Join(dir, "capacity.json")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "e.yaml")
	doc := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: e}\ntarget: {sim: {replicas: 1}}\nworkload: " + workload + "\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestExperimentTakesTheShareOfTheKnee(t *testing.T) {
	file := experiment(t, "{preset: chat, rate: 80%, capacity: capacity.json, duration: 30s}", nil)
	x, _, err := spec.LoadExperiment(file, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := x.Capacity
	if a == nil || a.Knee != 65 || a.Rate != 52 || x.Spec.Workload.Rate.PerSecond != 52 || x.Arrival.Rate != 52 {
		t.Fatalf("applied %+v, rate %v, arrival rate %v; want 80%% of 65 = 52", a, x.Spec.Workload.Rate, x.Arrival.Rate)
	}
	if a.Status != string(StatusFound) {
		t.Errorf("status %q, want the search's %q", a.Status, StatusFound)
	}
	// The fixture measured a custom workload, the experiment sends chat.
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], `measured with workload "known"`) {
		t.Errorf("warnings = %q", a.Warnings)
	}
	if got := a.String(); !strings.HasPrefix(got, "80% of the knee 65 req/s (") || !strings.HasSuffix(got, "): 52 req/s") {
		t.Errorf("String() = %q", got)
	}
}

func TestExperimentRefusesACapacityItCannotUse(t *testing.T) {
	tests := []struct {
		name     string
		workload string
		edit     func(*Result)
		wantErr  string
		wantWarn string
	}{
		{"a rate per second is left alone", "{preset: chat, rate: 20, duration: 30s}", nil, "", ""},
		{"a concurrency knee", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Mode, r.Unit = ModeConcurrency, "users" },
			"measured the knee in concurrency mode", ""},
		{"no knee", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Status, r.Knee = StatusBelowMin, Knee{Hi: 13} },
			"has no knee", ""},
		{"a client-limited knee", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Status = StatusClientLimited },
			"", "is a lower bound: the client"},
		{"not a capacity file", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Kind = "llmchaos-report" },
			"not a capacity file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, _, err := spec.LoadExperiment(experiment(t, tt.workload, tt.edit), spec.LoadOptions{})
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v; want %q", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "e.yaml:5:") || !strings.Contains(err.Error(), "workload.capacity") {
					t.Errorf("the problem is not at workload.capacity in the file: %v", err)
				}
				return
			}
			if tt.wantWarn != "" && (x.Capacity == nil || !strings.Contains(strings.Join(x.Capacity.Warnings, "\n"), tt.wantWarn)) {
				t.Errorf("applied %+v: warnings lack %q", x.Capacity, tt.wantWarn)
			}
		})
	}
}

// A capacity file given from outside (suite --capacity, run --capacity)
// replaces the one the experiment names.
func TestExperimentTakesTheCapacityFileGiven(t *testing.T) {
	file := experiment(t, "{rate: 100%, capacity: nowhere.json, duration: 30s, input_tokens: 16}", nil)
	x, _, err := spec.LoadExperiment(file, spec.LoadOptions{Capacity: "testdata/sim-knee.json"})
	if err != nil {
		t.Fatal(err)
	}
	if a := x.Capacity; a == nil || a.Rate != 65 || len(a.Warnings) != 0 || x.Arrival.Rate != 65 {
		t.Fatalf("applied %+v, arrival rate %v; want the knee 65 of testdata/sim-knee.json", a, x.Arrival.Rate)
	}
}
