package recording

import (
	"testing"
	"time"
)

func TestLiveRequestRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		live Live
		want string
	}{
		{"first second", Live{}, "-"},
		{"a busy last second", Live{RequestsPerS: 250, RecentOK: 2400, RecentSpan: 10 * time.Second}, "250.0 req/s"},
		{"exactly the count for the last second", Live{RequestsPerS: 10, RecentOK: 40, RecentSpan: 10 * time.Second}, "10.0 req/s"},
		{"a fault's drop shows at once", Live{RequestsPerS: 0, RecentOK: 900, RecentSpan: 10 * time.Second}, "90.0 req/s"},
		{"few in the last second: the window", Live{RequestsPerS: 3, RecentOK: 25, RecentSpan: 10 * time.Second}, "2.5 req/s"},
		{"one per second", Live{RequestsPerS: 1, RecentOK: 10, RecentSpan: 10 * time.Second}, "1.0 req/s"},
		{"under one per second: per minute", Live{RequestsPerS: 0, RecentOK: 3, RecentSpan: 10 * time.Second}, "18.0 req/min"},
		{"one in the window", Live{RequestsPerS: 1, RecentOK: 1, RecentSpan: 10 * time.Second}, "6.0 req/min"},
		{"young run: since the start", Live{RequestsPerS: 0, RecentOK: 1, RecentSpan: 4 * time.Second}, "15.0 req/min"},
		{"none in the window", Live{RecentSpan: 10 * time.Second}, "0 in 10s"},
		{"none since the start", Live{RecentSpan: 3 * time.Second}, "0 in 3s"},
		{"none in the first second", Live{RecentSpan: 400 * time.Millisecond}, "0 in 0.4s"},
		{"the first second: since the start", Live{RecentOK: 12, RecentSpan: 300 * time.Millisecond}, "40.0 req/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.live.RequestRate(); got != tt.want {
				t.Errorf("RequestRate() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRecorderSnapshotRecentWindow checks the window RequestRate reads: the
// current second so far and the 9 before it once the run is longer, the
// whole run before.
func TestRecorderSnapshotRecentWindow(t *testing.T) {
	t.Parallel()
	r := NewRecorder(Options{})
	// One ok request every 5 s, ending at 1.05 s, 6.05 s, 11.05 s, 16.05 s.
	for _, sent := range []time.Duration{time.Second, 6 * time.Second, 11 * time.Second, 16 * time.Second} {
		r.RequestStarted(sent)
		res := recRes(Tags{}, sent, 1, 50_000, 5)
		r.RequestEnded(res.End)
		r.Record(res)
	}
	tests := []struct {
		now      time.Duration
		wantOK   int64
		wantSpan time.Duration
		wantRate string
	}{
		{50 * time.Millisecond, 0, 50 * time.Millisecond, "-"},
		{500 * time.Millisecond, 0, 500 * time.Millisecond, "0 in 0.5s"},
		{1500 * time.Millisecond, 1, 1500 * time.Millisecond, "40.0 req/min"}, // the current second counts as far as it went
		{2500 * time.Millisecond, 1, 2500 * time.Millisecond, "24.0 req/min"},
		{9500 * time.Millisecond, 2, 9500 * time.Millisecond, "12.6 req/min"},
		{17500 * time.Millisecond, 2, 9500 * time.Millisecond, "12.6 req/min"}, // [8 s, 17.5 s): 11.05 s and 16.05 s, no longer 1.05 s and 6.05 s
	}
	for _, tt := range tests {
		l := r.Snapshot(tt.now)
		if l.RecentOK != tt.wantOK || l.RecentSpan != tt.wantSpan || l.RequestRate() != tt.wantRate {
			t.Errorf("at %v: %d ok over %v (%q), want %d over %v (%q)", tt.now, l.RecentOK, l.RecentSpan, l.RequestRate(), tt.wantOK, tt.wantSpan, tt.wantRate)
		}
	}
}
