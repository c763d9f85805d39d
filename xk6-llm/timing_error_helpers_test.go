package llm_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// streamRecords collects the server side's own record of each stream
// (server.StreamTiming), by request id, from the server's goroutines.
type streamRecords struct {
	mu   sync.Mutex
	byID map[string]*server.StreamTiming
	want int
	all  chan struct{} // closed when want records have arrived
}

func newStreamRecords(want int) *streamRecords {
	return &streamRecords{byID: make(map[string]*server.StreamTiming, want), want: want, all: make(chan struct{})}
}

// add is the server's StreamTiming hook.
func (s *streamRecords) add(t *server.StreamTiming) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[t.RequestID] = t
	if len(s.byID) == s.want {
		close(s.all)
	}
}

// wait returns the records once all of them have arrived: a stream's record
// is handed over after its last write, so it may trail the client's end of
// the same request by a moment.
func (s *streamRecords) wait(tb testing.TB) map[string]*server.StreamTiming {
	tb.Helper()
	select {
	case <-s.all:
	case <-time.After(10 * time.Second):
		s.mu.Lock()
		defer s.mu.Unlock()
		tb.Fatalf("server recorded %d streams, want %d", len(s.byID), s.want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID
}

// clientView is the client's readings of one request, copied in the
// engine's Observe hook (the engine reuses its Results afterwards).
type clientView struct {
	id          string
	ok          bool
	sent, first time.Duration
	itl         []uint32
}

// clientViews collects clientViews from the engine's goroutines.
type clientViews struct {
	mu   sync.Mutex
	list []clientView
}

// observe is the engine's Observe hook.
func (c *clientViews) observe(res *recording.Result) {
	v := clientView{id: res.RequestID, ok: res.Outcome == recording.OutcomeOK, sent: res.Sent, first: res.FirstToken, itl: slices.Clone(res.ITLMicros)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, v)
}

// timingError is the client's error on every request of a run against the
// server's own record of the same request, both read on one monotonic
// clock (client and server share the test's process). The server's
// record starts when its handler starts, so connection set-up and the
// request's own transfer (the client's Sent is before both) are in ttft;
// first and gap are the response side alone.
type timingError struct {
	// ttft: client TTFT − server TTFT, where the server's is handler
	// start → the write that carried the first token.
	ttft []time.Duration
	// first: when the client read the first token − when the server
	// started the write carrying it (never negative).
	first []time.Duration
	// gap: each client inter-token gap − the server's gap between the
	// writes that carried the same two tokens (two tokens in one write:
	// 0 on the server's side).
	gap []time.Duration
}

// compareTiming pairs the client's views with the server's records by
// request id and returns the client's errors. Every ok request must have a
// record with as many tokens as the client counted chunks.
func compareTiming(tb testing.TB, clock *recording.RunClock, views []clientView, recs map[string]*server.StreamTiming) timingError {
	tb.Helper()
	var e timingError
	for _, v := range views {
		if !v.ok {
			continue
		}
		rec := recs[v.id]
		if rec == nil {
			tb.Errorf("request %s: the server recorded no stream", v.id)
			continue
		}
		tok := rec.TokenTimes()
		if len(tok) == 0 || len(tok) != len(v.itl)+1 {
			tb.Errorf("request %s: server wrote %d tokens, client read %d", v.id, len(tok), len(v.itl)+1)
			continue
		}
		at := func(t time.Time) time.Duration { return t.Sub(clock.Start()) }
		e.ttft = append(e.ttft, (v.first-v.sent)-tok[0].Sub(rec.Received))
		e.first = append(e.first, v.first-at(tok[0]))
		for i, g := range v.itl {
			e.gap = append(e.gap, time.Duration(g)*time.Microsecond-tok[i+1].Sub(tok[i]))
		}
	}
	return e
}

// quantile returns the q-quantile (nearest rank) of d, which it sorts.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// absAll returns |x| for each x of d, in a new slice.
func absAll(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, x := range d {
		out[i] = x.Abs()
	}
	return out
}

// errorFigures summarises one error distribution: |error| p50, p99, max
// and the signed minimum.
type errorFigures struct {
	n                 int
	p50, p99, max, lo time.Duration
}

func figures(d []time.Duration) errorFigures {
	f := errorFigures{n: len(d)}
	if len(d) == 0 {
		return f
	}
	a := absAll(d)
	f.p50, f.p99, f.max, f.lo = quantile(a, 0.5), quantile(a, 0.99), quantile(a, 1), slices.Min(d)
	return f
}

func (f errorFigures) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }
	return fmt.Sprintf("|error| p50 %s ms, p99 %s ms, max %s ms (min signed %s ms, n %d)", ms(f.p50), ms(f.p99), ms(f.max), ms(f.lo), f.n)
}

// wakeProbe measures how late a goroutine of this process wakes: it asks
// for a wake-up every period until ctx ends and records how far past its
// due time each one came. That lateness is the floor of any reader's
// error on a busy machine (a token written while the reader waits for a
// CPU is read that much later), so the client's own share of its error is
// what exceeds it.
func wakeProbe(ctx context.Context, period time.Duration) []time.Duration {
	var late []time.Duration
	due := time.Now().Add(period)
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return late
		case <-t.C:
			late = append(late, time.Since(due))
			due = time.Now().Add(period)
			t.Reset(time.Until(due))
		}
	}
}
