package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestLiveLineLowRate checks that a progress line at a low rate shows the
// rate over the recent window, not the last second's "0.0 req/s".
func TestLiveLineLowRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		live recording.Live
		want string
	}{
		{"high rate: the last second", recording.Live{Elapsed: 30 * time.Second, RequestsPerS: 120, RecentOK: 1150, RecentSpan: 10 * time.Second}, "120.0 req/s"},
		{"one request every 5 s", recording.Live{Elapsed: 30 * time.Second, RecentOK: 2, RecentSpan: 10 * time.Second}, "12.0 req/min"},
		{"nothing ends", recording.Live{Elapsed: 30 * time.Second, RecentSpan: 10 * time.Second}, "0 in 10s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := liveLine(tt.live)
			if !strings.Contains(got, tt.want) || strings.Contains(got, " 0.0 req/s") {
				t.Errorf("liveLine = %q, want it to show %q", got, tt.want)
			}
		})
	}
}
