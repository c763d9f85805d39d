package history

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSince reads a --since value as the start of the span it selects,
// counted back from now: a number of days or weeks ("30d", "2w"), a Go
// duration ("12h", "90m"), or a date or time ("2026-01-31",
// "2026-01-31T02:00:00Z"). "" is the zero time (no bound).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v < 0 {
				return time.Time{}, fmt.Errorf("--since %q: want a span such as 30d, 2w or 12h, or a date such as 2026-01-31", s)
			}
			return now.Add(-time.Duration(v * float64(u.unit))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: must not be negative", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a span such as 30d, 2w or 12h, or a date such as 2026-01-31", s)
}
