package recording

import (
	"fmt"
	"time"
)

// liveRateMinCount is the count of ok requests in the last complete second
// from which RequestRate shows that second alone: enough for the figure to
// mean something, and it follows a fault at once.
const liveRateMinCount = 10

// RequestRate writes the rate of ok requests for a progress line, readable
// at any rate: over the last complete second when that second saw at
// least 10 (so the figure moves with the load), else over RecentSpan (the
// last 10 s, or since the start), where a rate under 1 req/s is written in
// requests per minute and none at all as "0 in 10s". In the run's first
// tenth of a second it is "-". It never reads "0.0 req/s" while requests
// end.
func (l Live) RequestRate() string {
	if l.RequestsPerS >= liveRateMinCount {
		return fmt.Sprintf("%.1f req/s", l.RequestsPerS)
	}
	if l.RecentSpan < 100*time.Millisecond {
		return "-"
	}
	rate := float64(l.RecentOK) / l.RecentSpan.Seconds()
	switch {
	case rate >= 1:
		return fmt.Sprintf("%.1f req/s", rate)
	case l.RecentOK > 0:
		return fmt.Sprintf("%.1f req/min", rate*60)
	case l.RecentSpan < time.Second:
		return fmt.Sprintf("0 in %.1fs", l.RecentSpan.Seconds())
	default:
		return fmt.Sprintf("0 in %.0fs", l.RecentSpan.Seconds())
	}
}
