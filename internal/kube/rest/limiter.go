package rest

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket: qps tokens a second, at most burst kept.
type limiter struct {
	mu     sync.Mutex
	qps    float64
	burst  float64
	tokens float64
	last   time.Time
}

func newLimiter(qps float32, burst int) *limiter {
	return &limiter{qps: float64(qps), burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// wait takes a token, waiting for one until ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.qps)
	l.last = now
	l.tokens--
	var delay time.Duration
	if l.tokens < 0 {
		delay = time.Duration(-l.tokens / l.qps * float64(time.Second))
	}
	l.mu.Unlock()
	if delay == 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		l.mu.Lock()
		l.tokens++ // not taken after all
		l.mu.Unlock()
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
