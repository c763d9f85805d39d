package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// A front end that takes settings as text (llmchaos load's flags) hands
// them to the resolver, which parses them, reports what does not parse
// keyed by its field (and nothing missing on top of it), and checks the
// ramp-up and a shard's split against the resolved load.
func TestResolveParsesTextAndChecksTheLoad(t *testing.T) {
	t.Parallel()
	shard, err := ParseShard("1/4")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		give func(g *Given)
		want []string // the problems' messages, fields by path; none: valid
		path []field.Path
	}{
		{"text fields", func(g *Given) {
			g.Set(FieldInputTokens, "uniform:10:20")
			g.Set(FieldStages, "1s:5,2s:0")
			g.Set(FieldCancelAfter, "2s")
			g.Workload.CancelShare = 0.5
		}, nil, nil},
		{"a length that does not parse is not missing too", func(g *Given) {
			g.Set(FieldOutputTokens, "128-256")
			g.Arrival = ArrivalConfig{Rate: 1, Duration: time.Second}
		}, []string{`output_tokens: length distribution "128-256"`}, []field.Path{FieldOutputTokens}},
		{"a ramp-up of an open loop", func(g *Given) {
			g.Preset, g.RampUp = "chat", time.Second
			g.Arrival = ArrivalConfig{Rate: 1, Duration: time.Second}
		}, []string{"ramp_up applies to concurrency (closed loop) only"}, []field.Path{FieldRampUp}},
		{"a negative ramp-up", func(g *Given) {
			g.Preset, g.RampUp = "chat", -time.Second
			g.Arrival = ArrivalConfig{Concurrency: 4, Duration: time.Second}
		}, []string{"ramp_up -1s must not be negative"}, []field.Path{FieldRampUp}},
		{"a closed loop too thin for its shards", func(g *Given) {
			g.Preset, g.Shard = "chat", shard
			g.Arrival = ArrivalConfig{Concurrency: 2, Duration: time.Second}
		}, []string{"shard 1/4: concurrency 2 is split over 4 shards"}, []field.Path{FieldShard}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var g Given
			tt.give(&g)
			res, ps := Resolve(g)
			if len(ps) != len(tt.want) {
				t.Fatalf("got problems %v, want %d: %q", ps, len(tt.want), tt.want)
			}
			for i, p := range ps {
				if msg := p.Message(nil); !strings.Contains(msg, tt.want[i]) || p.Path != tt.path[i] {
					t.Errorf("problem %d: got %s %q, want %s saying %q", i, p.Path, msg, tt.path[i], tt.want[i])
				}
			}
			if tt.want == nil && (res.Workload.InputTokens.String() != "uniform:10:20" || len(res.Arrival.Stages) != 2 || res.Workload.CancelAfter.String() != "fixed:2s") {
				t.Errorf("resolved %+v, %+v: the text settings are not in", res.Workload, res.Arrival)
			}
		})
	}
}

func TestSetRefusesAFieldNotGivenAsText(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("Set of rate did not panic")
		}
	}()
	var g Given
	g.Set(FieldRate, "5")
}
