package workload

import (
	"strings"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{"0/1", Shard{0, 1}, ""},
		{"2/8", Shard{2, 8}, ""},
		{" 7 / 8 ", Shard{7, 8}, ""},
		{"8/8", Shard{}, "index 8 is not below the count 8: shards are numbered 0 to 7"},
		{"-1/4", Shard{}, `index "-1"`},
		{"1/0", Shard{}, `count "0"`},
		{"1", Shard{}, "want INDEX/COUNT"},
		{"a/4", Shard{}, `index "a"`},
		{"$JOB_COMPLETION_INDEX/4", Shard{}, "$JOB_COMPLETION_INDEX is an unexpanded variable"},
		{"$(JOB_COMPLETION_INDEX)/4", Shard{}, "$(JOB_COMPLETION_INDEX) is an unexpanded variable"},
		{"0/$N", Shard{}, "$N is an unexpanded variable"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseShard(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseShard(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseShard(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if again, err := ParseShard(got.String()); err != nil || again != got {
				t.Errorf("String %q does not parse back: %v, %v", got.String(), again, err)
			}
		})
	}
}

// TestShardSplit: the parts add up to the whole, differ by at most one, and
// the larger ones come first; Keeps picks exactly Split(n) of n items and
// Global numbers a shard's items as the whole load does.
func TestShardSplit(t *testing.T) {
	t.Parallel()
	for count := 1; count <= 9; count++ {
		for n := 0; n <= 40; n++ {
			sum, prev := 0, n+1
			for i := range count {
				s := Shard{Index: i, Count: count}
				part := s.Split(n)
				if part > prev || part < n/count || part > n/count+1 {
					t.Fatalf("%d split over %d: shard %d gets %d after %d", n, count, i, part, prev)
				}
				prev = part
				sum += part
				kept := 0
				for k := range uint64(n) {
					if s.Keeps(k) {
						if g := s.Global(uint64(kept)); g != k {
							t.Fatalf("shard %s: its item %d is %d of the whole, Global says %d", s, kept, k, g)
						}
						kept++
					}
				}
				if kept != part {
					t.Fatalf("shard %s keeps %d of %d items, Split says %d", s, kept, n, part)
				}
			}
			if sum != n {
				t.Fatalf("%d split over %d adds up to %d", n, count, sum)
			}
		}
	}
	var whole Shard
	if !whole.Whole() || whole.String() != "0/1" || !whole.Keeps(5) || whole.Split(7) != 7 || whole.Global(4) != 4 {
		t.Errorf("the zero Shard is not the whole load: %s", whole)
	}
}

func TestShardCheckSplit(t *testing.T) {
	t.Parallel()
	s := Shard{Index: 0, Count: 4}
	tests := []struct {
		name string
		c    ArrivalConfig
		want []string
	}{
		{"open loop", ArrivalConfig{Rate: 10, Requests: 2, MaxInFlight: 8}, nil},
		{"closed loop", ArrivalConfig{Concurrency: 4, Requests: 4}, nil},
		{"too few users and requests", ArrivalConfig{Concurrency: 3, Requests: 2}, []string{"concurrency 3 is split over 4 shards", "requests 2 of a closed loop"}},
		{"in-flight cap", ArrivalConfig{Rate: 10, Duration: time.Second, MaxInFlight: 3}, []string{"max_in_flight 3 is split over 4 shards"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CheckSplit(tt.c.WithDefaults())
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("CheckSplit = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckSplit = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CheckSplit = %v, want it to say %q", err, w)
				}
			}
		})
	}
	if err := (Shard{}).CheckSplit(ArrivalConfig{Concurrency: 1, Requests: 1}); err != nil {
		t.Errorf("the whole load: %v", err)
	}
}
