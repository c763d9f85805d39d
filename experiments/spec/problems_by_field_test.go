package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/field"
)

// flagNamer names workload.rate as a command line does, to show that a
// problem's message mentions it as a field, not as words.
func flagNamer(p field.Path) string {
	if p == "workload.rate" {
		return "--rate"
	}
	return string(p)
}

// ApplyCapacity reports a capacity file it cannot use as a problem keyed
// by workload.capacity whose message names workload.rate as a field
// (each front end names it its own way), with the cause kept; Resolve
// returns that problem as it is.
func TestCapacityProblemsAreKeyedByField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noKnee := write("below.json", `{"kind":"llmchaos-capacity","version":1,"mode":"rate","unit":"req/s","status":"below_min","knee":{"load":0}}`)
	for _, tt := range []struct {
		name, file, want string
		cause            error
	}{
		{"missing", filepath.Join(dir, "missing.json"), "--rate 50%: capacity file: open", os.ErrNotExist},
		{"not json", write("bad.json", "{"), "--rate 50%: capacity file " + dir + "/bad.json: not a capacity file", nil},
		{"no knee", noKnee, "--rate 50%: " + noKnee + " has no knee (no load held every SLO", errNoKnee},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Parse("e.yaml", []byte(capacityDoc(`{preset: chat, rate: 50%, capacity: `+tt.file+`, duration: 30s}`)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ApplyCapacity(s, tt.file)
			ps, rest := field.Of(err)
			if len(ps) != 1 || len(rest) != 0 || ps[0].Path != "workload.capacity" {
				t.Fatalf("ApplyCapacity: problems %v and other errors %v, want one problem at workload.capacity", ps, rest)
			}
			if got := ps[0].Message(flagNamer); !strings.HasPrefix(got, tt.want) {
				t.Errorf("message named by flags %q, want it to open with %q", got, tt.want)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("error %v does not wrap %v", err, tt.cause)
			}
			_, err = Resolve(s, "")
			if rps, _ := field.Of(err); len(rps) != 1 || rps[0].Path != "workload.capacity" || rps[0].Message(flagNamer) != ps[0].Message(flagNamer) {
				t.Errorf("Resolve: %v, want the capacity problem as it is", rps)
			}
		})
	}
}

// A fault's params that do not decode (a fault injected by hand, which
// no experiment file checked) are problems keyed by their fields under
// the fault, not one line of text.
func TestDecodeParamsProblemsAreKeyedByField(t *testing.T) {
	t.Parallel()
	ft := FaultTypes()["network.latency"]
	_, err := DecodeParamsIn(2, Fault{Name: "slow", Type: ft.Name, Params: map[string]any{"latency": "soon", "jiter": "5ms"}}, ft, TargetEnv{})
	ps, rest := field.Of(err)
	if len(rest) != 0 {
		t.Fatalf("errors without a field: %v", rest)
	}
	got := map[field.Path]bool{}
	for _, p := range ps {
		got[p.Path] = true
	}
	for _, want := range []field.Path{"faults[2].params.latency", "faults[2].params.jiter"} {
		if !got[want] {
			t.Errorf("problems %v: none at %s", ps, want)
		}
	}
}
