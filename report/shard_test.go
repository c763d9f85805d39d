package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestCheckShards(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 500_000_000, time.UTC)
	shard := func(i, n int, seed int64, at time.Time) *Document {
		return &Document{Seed: seed, Shard: &Shard{Index: i, Count: n, StartAt: at}}
	}
	whole := &Document{Seed: 7}
	tests := []struct {
		name     string
		docs     []*Document
		partial  bool
		wantErr  []string
		wantWarn []string
	}{
		{"whole runs: nothing to check", []*Document{whole, {Seed: 8}}, false, nil, nil},
		{"one set", []*Document{shard(1, 3, 7, start), shard(0, 3, 7, start), shard(2, 3, 7, start)}, false, nil, nil},
		{"a single shard of one", []*Document{shard(0, 1, 7, start)}, false, nil, nil},
		{"shards and a whole run", []*Document{shard(0, 2, 7, start), whole}, false,
			[]string{"a.json is a shard", "b.json is not", "not both"}, nil},
		{"seeds differ", []*Document{shard(0, 2, 7, start), shard(1, 2, 8, start)}, false,
			[]string{"b.json has seed 8, a.json seed 7"}, nil},
		{"counts differ", []*Document{shard(0, 2, 7, start), shard(1, 3, 7, start)}, false,
			[]string{"b.json is shard 1/3, a.json shard 0/2"}, nil},
		{"a shard twice", []*Document{shard(0, 2, 7, start), shard(0, 2, 7, start), shard(1, 2, 7, start)}, false,
			[]string{"shard 0/2 is given 2 times (a.json, b.json)"}, nil},
		{"missing shards", []*Document{shard(0, 4, 7, start), shard(2, 4, 7, start)}, false,
			[]string{"shards 1/4, 3/4 are missing", "only 2 of the load's 4 shards", "--partial"}, nil},
		{"missing shard, partial", []*Document{shard(0, 3, 7, start), shard(2, 3, 7, start)}, true,
			nil, []string{"shard 1/3 is missing"}},
		{"start instants differ", []*Document{shard(0, 2, 7, start), shard(1, 2, 7, start.Add(time.Second))}, false,
			[]string{"different instants", "a.json at 2025-03-01T12:00:00.5Z", "b.json at 2025-03-01T12:00:01.5Z"}, nil},
		{"no start instant", []*Document{shard(0, 2, 7, time.Time{}), shard(1, 2, 7, start)}, false,
			nil, []string{"a.json started without --start-at"}},
		{"every problem at once", []*Document{shard(0, 2, 7, start), shard(0, 2, 9, start.Add(time.Hour))}, false,
			[]string{"seed 9", "shard 0/2 is given 2 times", "different instants"}, nil},
	}
	names := []string{"a.json", "b.json", "c.json"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warns, err := CheckShards(names, tt.docs, tt.partial)
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("CheckShards: %v, want no error", err)
			}
			if len(tt.wantErr) > 0 && err == nil {
				t.Fatalf("CheckShards: no error, want %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			all := strings.Join(warns, "\n")
			if len(tt.wantWarn) == 0 && len(warns) > 0 {
				t.Errorf("warnings %q, want none", warns)
			}
			for _, w := range tt.wantWarn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q do not say %q", warns, w)
				}
			}
		})
	}
	if _, err := CheckShards(nil, []*Document{shard(0, 2, 7, start), shard(0, 2, 7, start)}, false); err == nil || !strings.Contains(err.Error(), "run 1, run 2") {
		t.Errorf("without names: %v, want the runs named by position", err)
	}
}

// TestShardRoundTrip: a shard's report keeps its shard through a file, and
// the merged report lists each input's shard in merged_from and is itself
// no shard.
func TestShardRoundTrip(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var docs []*Document
	for i := range 2 {
		d := synthRun(t, uint64(i+1), 1, 100, recording.Tags{Class: "chat"})
		d.Shard = &Shard{Index: i, Count: 2, StartAt: start}
		docs = append(docs, saveAndRead(t, d))
	}
	for i, d := range docs {
		if d.Shard == nil || *d.Shard != (Shard{Index: i, Count: 2, StartAt: start}) {
			t.Errorf("run %d read back with shard %+v", i, d.Shard)
		}
	}
	m, err := Merge(docs...)
	if err != nil {
		t.Fatal(err)
	}
	m = saveAndRead(t, m)
	if m.Shard != nil {
		t.Errorf("the merged run is shard %s", m.Shard)
	}
	for i, r := range m.MergedFrom {
		if r.Shard == nil || r.Shard.Index != i || r.Shard.Count != 2 || !r.Shard.StartAt.Equal(start) {
			t.Errorf("merged_from[%d].shard = %+v", i, r.Shard)
		}
	}
	if got, want := m.Requests.Scheduled, docs[0].Requests.Scheduled+docs[1].Requests.Scheduled; got != want {
		t.Errorf("merged scheduled %d, want the shards' sum %d", got, want)
	}
	whole := synthRun(t, 3, 1, 10, recording.Tags{Class: "chat"})
	if b, err := json.Marshal(whole); err != nil || strings.Contains(string(b), `"shard"`) {
		t.Errorf("a whole run's JSON has a shard field (or does not encode: %v)", err)
	}
}
