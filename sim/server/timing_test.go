package server

import (
	"slices"
	"testing"
	"time"
)

// TestStreamTimingTokenTimes: each token takes the time of the write that
// carried it; writes without tokens (head, role, end) carry none.
func TestStreamTimingTokenTimes(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name   string
		writes []StreamWrite
		want   []time.Time
	}{
		{"none", nil, nil},
		{"head only", []StreamWrite{{at(0), 0}}, nil},
		{"one per write", []StreamWrite{{at(0), 0}, {at(50), 1}, {at(60), 2}, {at(61), 2}}, []time.Time{at(50), at(60)}},
		{"two in one write", []StreamWrite{{at(0), 0}, {at(50), 1}, {at(70), 3}}, []time.Time{at(50), at(70), at(70)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&StreamTiming{Writes: tt.writes}).TokenTimes()
			if !slices.EqualFunc(got, tt.want, time.Time.Equal) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
