package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// writeTrace writes a trace of n requests, some at the same millisecond,
// with lengths on some lines, and returns its path.
func writeTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	rng := rand.New(rand.NewPCG(9, 9))
	ms := 0.0
	for i := range n {
		if i%5 != 0 {
			ms += rng.Float64() * 20
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "{\"timestamp\": %.3f, \"input_length\": %d, \"output_length\": %d}\n", ms, 50+rng.IntN(500), 1+rng.IntN(64))
		case 1:
			fmt.Fprintf(&b, "{\"timestamp\": %.3f, \"output_length\": %d}\n", ms, 1+rng.IntN(64))
		default:
			fmt.Fprintf(&b, "{\"timestamp\": %.3f}\n", ms)
		}
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// drawSchedule returns every Planned of shard's part of the schedule. The
// workload is built afresh from its config and the seed, as each shard's
// process builds its own.
func drawSchedule(t *testing.T, a workload.ArrivalConfig, w workload.Config, seed uint64, targets int, shard workload.Shard) []Planned {
	t.Helper()
	wl, err := workload.New(w.WithDefaults(), rand.New(rand.NewPCG(seed, SeedStreamWorkloadSetup)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSchedule(ScheduleConfig{Arrival: a.WithDefaults(), Workload: wl, Seed: seed, Targets: targets, Shard: shard})
	if err != nil {
		t.Fatal(err)
	}
	var out []Planned
	for {
		p, ok := s.Next()
		if !ok {
			break
		}
		out = append(out, p)
	}
	if p, ok := s.Next(); ok {
		t.Fatalf("shard %s: Next gave %+v after the end", shard, p)
	}
	return out
}

// TestShardSchedulesUnionIsTheWholeSchedule: for every load shape, seed and
// shard count, the shards' schedules together are the single-process
// schedule, arrival by arrival (index, time, trace lengths, session drawn,
// session id, endpoint), each arrival on exactly one shard, shard i holding
// the arrivals k ≡ i (mod N), in time order.
func TestShardSchedulesUnionIsTheWholeSchedule(t *testing.T) {
	trace := writeTrace(t, 300)
	dataset := filepath.Join("..", "workload", "testdata", "datasets", "sharegpt_small.json")
	synthetic := workload.Config{InputTokens: workload.UniformDist(10, 400), OutputTokens: workload.UniformDist(1, 64)}
	sessions := workload.Config{
		InputTokens: workload.UniformDist(10, 100), OutputTokens: workload.UniformDist(1, 16),
		Turns: workload.UniformDist(1, 4), ThinkTime: workload.FixedDuration(10 * time.Millisecond),
		PrefixCount: 3, PrefixTokens: 50, PrefixShare: 0.5,
		CancelShare: 0.3, CancelAfterTokens: workload.UniformDist(1, 5),
	}
	shapes := []struct {
		name    string
		arrival workload.ArrivalConfig
		w       workload.Config
	}{
		{"poisson", workload.ArrivalConfig{Rate: 200, Duration: 1500 * time.Millisecond}, synthetic},
		{"constant", workload.ArrivalConfig{Rate: 97, Arrival: workload.ArrivalConstant, Requests: 250}, synthetic},
		{"gamma", workload.ArrivalConfig{Rate: 150, Arrival: workload.ArrivalGamma, Burstiness: 0.3, Duration: 2 * time.Second, Requests: 260}, synthetic},
		{"ramp", workload.ArrivalConfig{Ramp: workload.Ramp{From: 10, To: 300}, Duration: 2 * time.Second}, synthetic},
		{"stages", workload.ArrivalConfig{Stages: []workload.Stage{{Duration: time.Second, Target: 100}, {Duration: 0, Target: 300}, {Duration: time.Second, Target: 0}}, StartRate: 20}, synthetic},
		{"trace", workload.ArrivalConfig{TraceFile: trace}, synthetic},
		{"sessions", workload.ArrivalConfig{Rate: 120, Duration: 2 * time.Second}, sessions},
		{"dataset", workload.ArrivalConfig{Rate: 100, Arrival: workload.ArrivalConstant, Requests: 77}, workload.Config{Dataset: dataset}},
	}
	const targets = 3
	for _, shape := range shapes {
		for _, seed := range []uint64{42, 1 << 40} {
			t.Run(fmt.Sprintf("%s/seed=%d", shape.name, seed), func(t *testing.T) {
				whole := drawSchedule(t, shape.arrival, shape.w, seed, targets, workload.Shard{})
				if len(whole) < 50 {
					t.Fatalf("the whole schedule has %d arrivals; the test wants a long one", len(whole))
				}
				for k, p := range whole {
					if p.Index != uint64(k) || p.Endpoint != k%targets {
						t.Fatalf("whole schedule: arrival %d has index %d, endpoint %d", k, p.Index, p.Endpoint)
					}
				}
				for _, n := range []int{1, 2, 3, 7} {
					union := make([]Planned, 0, len(whole))
					for i := range n {
						shard := workload.Shard{Index: i, Count: n}
						part := drawSchedule(t, shape.arrival, shape.w, seed, targets, shard)
						if got, want := len(part), shard.Split(len(whole)); got != want {
							t.Errorf("shard %s has %d arrivals, want %d of %d", shard, got, want, len(whole))
						}
						for j, p := range part {
							if want := shard.Global(uint64(j)); p.Index != want {
								t.Fatalf("shard %s: arrival %d has index %d, want %d", shard, j, p.Index, want)
							}
							if j > 0 && p.Arrival.At < part[j-1].Arrival.At {
								t.Fatalf("shard %s: arrival %d at %v before arrival %d at %v", shard, j, p.Arrival.At, j-1, part[j-1].Arrival.At)
							}
						}
						union = append(union, part...)
					}
					slices.SortFunc(union, func(a, b Planned) int { return int(a.Index) - int(b.Index) })
					if len(union) != len(whole) {
						t.Fatalf("%d shards have %d arrivals together, the whole schedule %d", n, len(union), len(whole))
					}
					for k := range whole {
						if !reflect.DeepEqual(union[k], whole[k]) {
							t.Fatalf("%d shards: arrival %d differs:\nshards: %+v %+v\nwhole:  %+v %+v", n, k, union[k], *union[k].Session, whole[k], *whole[k].Session)
						}
					}
				}
			})
		}
	}
}

// TestScheduleSessionIDs: a multi-turn session's id counts the multi-turn
// sessions of the whole schedule up to it, so a shard's ids are those of
// one process even though the shard never sees the others' sessions.
func TestScheduleSessionIDs(t *testing.T) {
	w := workload.Config{InputTokens: workload.FixedDist(10), Turns: workload.UniformDist(1, 3)}
	a := workload.ArrivalConfig{Rate: 100, Arrival: workload.ArrivalConstant, Requests: 200}
	var last uint64
	multi := 0
	for _, p := range drawSchedule(t, a, w, 5, 1, workload.Shard{}) {
		if len(p.Session.Turns) == 1 {
			if p.SessionID != 0 {
				t.Fatalf("arrival %d: one turn but session id %d", p.Index, p.SessionID)
			}
			continue
		}
		multi++
		if p.SessionID != last+1 {
			t.Fatalf("arrival %d: session id %d after %d", p.Index, p.SessionID, last)
		}
		last = p.SessionID
	}
	if multi < 50 || multi > 150 {
		t.Fatalf("%d multi-turn sessions of 200; want about two thirds", multi)
	}
}

// TestNewScheduleErrors: a closed loop has no schedule; a bad shard or no
// target is refused.
func TestNewScheduleErrors(t *testing.T) {
	wl, err := workload.New(workload.Config{InputTokens: workload.FixedDist(10)}.WithDefaults(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	open := workload.ArrivalConfig{Rate: 10, Requests: 5}.WithDefaults()
	tests := []struct {
		name string
		cfg  ScheduleConfig
		want string
	}{
		{"closed loop", ScheduleConfig{Arrival: workload.ArrivalConfig{Concurrency: 2, Requests: 5}.WithDefaults(), Workload: wl, Targets: 1}, "closed loop"},
		{"shard index too large", ScheduleConfig{Arrival: open, Workload: wl, Targets: 1, Shard: workload.Shard{Index: 3, Count: 3}}, "shard 3/3"},
		{"no target", ScheduleConfig{Arrival: open, Workload: wl}, "no target"},
		{"no workload", ScheduleConfig{Arrival: open, Targets: 1}, "no workload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSchedule(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSchedule = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
