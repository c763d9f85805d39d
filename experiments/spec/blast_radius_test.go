package spec

import (
	"strings"
	"testing"
	"time"
)

func TestBlastRadiusTimeline(t *testing.T) {
	base := func() *Spec {
		s := validSpec()
		s.Faults = []Fault{
			{Name: "a", Type: "network.latency", At: Duration(time.Second), Duration: Duration(4 * time.Second), Params: map[string]any{"latency": "100ms"}},
			{Name: "b", Type: "stream.stall", At: Duration(2 * time.Second), Duration: Duration(time.Second), Params: map[string]any{"probability": 0.1, "stall": "1s"}},
			{Name: "c", Type: "stream.stall", At: Duration(5 * time.Second), Duration: Duration(time.Second), Params: map[string]any{"probability": 0.1, "stall": "1s"}},
		}
		return s
	}
	tests := []struct {
		name string
		br   *BlastRadius
		want string // "" → no error about the blast radius
	}{
		{"none", nil, ""},
		{"two at once allowed", &BlastRadius{MaxConcurrentFaults: 2}, ""},
		// c starts as a ends (5 s): the revert comes first.
		{"one at once", &BlastRadius{MaxConcurrentFaults: 1}, "faults[1].at: 2 faults would be injected at once at 2s"},
		{"negative", &BlastRadius{MaxConcurrentFaults: -1}, "blast_radius.max_concurrent_faults: -1 is negative"},
		{"negative floor", &BlastRadius{MinAvailable: -2}, "blast_radius.min_available: -2 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			s.BlastRadius = tt.br
			var got []string
			for _, p := range s.Validate().Errors() {
				if strings.Contains(p.Error(), "blast_radius") || strings.Contains(p.Error(), "at once") {
					got = append(got, p.Error())
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("problems %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("problems %q, want one with %q", got, tt.want)
			}
		})
	}
}

func TestValidateFault(t *testing.T) {
	s := validSpec()
	tests := []struct {
		name string
		f    Fault
		want []string // substrings of the problems, in order; nil: valid
	}{
		{"valid, no duration", Fault{Name: "slow", Type: "network.latency", Params: map[string]any{"latency": "200ms"}}, nil},
		{"unknown type", Fault{Name: "x", Type: "network.latncy"}, []string{`fault.type: unknown fault type "network.latncy"; did you mean "network.latency"?`}},
		{"bad param", Fault{Name: "x", Type: "network.latency", Params: map[string]any{"latency": "soon"}}, []string{"fault.params.latency"}},
		{"bad name", Fault{Name: "a b", Type: "network.latency", Params: map[string]any{"latency": "1ms"}}, []string{"fault.name"}},
		{"endpoint out of range", Fault{Name: "x", Type: "network.latency", Params: map[string]any{"latency": "1ms"}, Target: &FaultTarget{Endpoints: []int{7}}}, []string{"fault.target.endpoints[0]: 7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := s.ValidateFault(tt.f)
			if len(ps) != len(tt.want) {
				t.Fatalf("problems %v, want %d", ps, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(ps[i].Error(), w) {
					t.Errorf("problem %d = %q, want %q in it", i, ps[i].Error(), w)
				}
			}
		})
	}
}
