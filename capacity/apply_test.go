package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
)

// experiment writes an experiment file with the given workload next to a
// copy of the capacity fixture changed by edit, and loads it.
func experiment(t *testing.T, workload string, edit func(*Result)) (*spec.Spec, string) {
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
	s, _, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return s, file
}

func TestApplySetsTheShareOfTheKnee(t *testing.T) {
	s, file := experiment(t, "{preset: chat, rate: 80%, capacity: capacity.json, duration: 30s}", nil)
	a, ok, err := ApplyOwn(s, file)
	if err != nil || !ok {
		t.Fatalf("ApplyOwn: %v, %v", ok, err)
	}
	if a.Knee != 65 || a.Rate != 52 || s.Workload.Rate.PerSecond != 52 {
		t.Errorf("applied %+v, rate %v; want 80%% of 65 = 52", a, s.Workload.Rate)
	}
	if _, ac, err := s.Workload.Configs(); err != nil || ac.Rate != 52 {
		t.Errorf("configs after Apply: rate %v, %v", ac.Rate, err)
	}
	// The fixture measured a custom workload, the experiment sends chat.
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], `measured with workload "known"`) {
		t.Errorf("warnings = %q", a.Warnings)
	}
	if got := a.String(); !strings.HasPrefix(got, "80% of the knee 65 req/s (") || !strings.HasSuffix(got, "): 52 req/s") {
		t.Errorf("String() = %q", got)
	}
}

func TestApplyRefusesWhatItCannotUse(t *testing.T) {
	tests := []struct {
		name     string
		workload string
		edit     func(*Result)
		wantOK   bool
		wantErr  string
		wantWarn string
	}{
		{"a rate per second is left alone", "{preset: chat, rate: 20, duration: 30s}", nil, false, "", ""},
		{"a concurrency knee", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Mode, r.Unit = ModeConcurrency, "users" },
			false, "measured the knee in concurrency mode", ""},
		{"no knee", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Status, r.Knee = StatusBelowMin, Knee{Hi: 13} },
			false, "has no knee", ""},
		{"a client-limited knee", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Status = StatusClientLimited },
			true, "", "is a lower bound: the client"},
		{"not a capacity file", "{rate: 50%, capacity: capacity.json, duration: 30s, input_tokens: 16}", func(r *Result) { r.Kind = "llmchaos-report" },
			false, "not a capacity file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, file := experiment(t, tt.workload, tt.edit)
			before := s.Workload.Rate
			a, ok, err := ApplyOwn(s, file)
			if ok != tt.wantOK || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ok %v, err %v; want ok %v, err %q", ok, err, tt.wantOK, tt.wantErr)
			}
			if !ok && s.Workload.Rate != before {
				t.Errorf("the rate changed to %v without being applied", s.Workload.Rate)
			}
			if tt.wantWarn != "" && (len(a.Warnings) == 0 || !strings.Contains(strings.Join(a.Warnings, "\n"), tt.wantWarn)) {
				t.Errorf("warnings %q lack %q", a.Warnings, tt.wantWarn)
			}
		})
	}
}

// Apply takes the file it is given over the one the experiment names, as
// the suite's --capacity does.
func TestApplyTakesTheFileGiven(t *testing.T) {
	s, _ := experiment(t, "{rate: 100%, capacity: nowhere.json, duration: 30s, input_tokens: 16}", nil)
	a, ok, err := Apply(s, "testdata/sim-knee.json")
	if err != nil || !ok || a.Rate != 65 || len(a.Warnings) != 0 {
		t.Fatalf("Apply: %+v, %v, %v", a, ok, err)
	}
}
