package sim

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// signalled reports whether s's Ready holds a signal, and consumes it.
func signalled(s *Stream) bool {
	select {
	case <-s.Ready():
		return true
	default:
		return false
	}
}

// TestSinkStreamsAreCollectedNotSignalled: a stream with a sink is handed to
// the caller through TakePublished, once per take in first-publish order,
// and its Ready stays quiet; a stream without one is signalled as before.
func TestSinkStreamsAreCollectedNotSignalled(t *testing.T) {
	for _, latency := range []string{LatencyConstant, LatencyProfile} {
		t.Run(latency, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Latency = latency
			e := newTestEngine(t, cfg)
			var sinks []*Stream
			calls := map[*Stream]int{}
			for range 3 {
				s, err := e.Submit(0, Request{PromptTokens: 20, MaxTokens: 4, IgnoreEOS: true})
				if err != nil {
					t.Fatal(err)
				}
				s.SetSink(func() { calls[s]++ })
				sinks = append(sinks, s)
			}
			plain, err := e.Submit(0, Request{PromptTokens: 20, MaxTokens: 4, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			var taken []*Stream
			plainSignals, takes := 0, 0
			for now := time.Duration(0); ; {
				next, ok := e.Advance(now)
				taken = e.TakePublished(taken[:0])
				if len(taken) > 0 {
					takes++
				}
				seen := map[*Stream]bool{}
				for _, s := range taken {
					if seen[s] {
						t.Fatalf("at %v stream %d taken twice in one take", now, s.ID())
					}
					seen[s] = true
					if !slices.Contains(sinks, s) {
						t.Fatalf("at %v stream %d without a sink was collected", now, s.ID())
					}
					s.deliver()
				}
				if !slices.IsSortedFunc(taken, func(a, b *Stream) int { return int(a.ID()) - int(b.ID()) }) {
					t.Errorf("at %v taken out of publish order: %v", now, ids(taken))
				}
				if signalled(plain) {
					plainSignals++
				}
				if !ok {
					break
				}
				now = next
			}
			for _, s := range sinks {
				if n, fin := s.Progress(); n != 4 || fin != FinishLength {
					t.Errorf("stream %d: %d tokens, %v; want 4, length", s.ID(), n, fin)
				}
				if calls[s] != 4 {
					t.Errorf("stream %d: sink called %d times, want once per token (4)", s.ID(), calls[s])
				}
				if signalled(s) {
					t.Errorf("stream %d with a sink had Ready signalled", s.ID())
				}
			}
			if plainSignals != 4 {
				t.Errorf("stream without a sink: Ready signalled at %d advances, want 4", plainSignals)
			}
			if latency == LatencyConstant && takes != 4 {
				t.Errorf("%d advances delivered tokens, want 4 (the streams are due together)", takes)
			}
		})
	}
}

func ids(ss []*Stream) []uint64 {
	var out []uint64
	for _, s := range ss {
		out = append(out, s.ID())
	}
	return out
}

// TestPublishedListIsBounded: however many tokens are published before a
// take, each stream is collected once; a take empties the list, and taking
// after every Advance keeps it within the number of streams.
func TestPublishedListIsBounded(t *testing.T) {
	cfg := constantConfig()
	e := newTestEngine(t, cfg)
	const streams = 5
	for range streams {
		s, err := e.Submit(0, Request{PromptTokens: 10, MaxTokens: 100, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSink(func() {})
	}
	// 50 tokens each, never taken: five entries.
	e.Advance(cfg.TTFT + 49*cfg.ITL)
	if got := e.TakePublished(nil); len(got) != streams {
		t.Fatalf("after 50 tokens each without a take: %d entries, want %d", len(got), streams)
	}
	if got := e.TakePublished(nil); len(got) != 0 {
		t.Fatalf("a second take found %d entries, want 0", len(got))
	}
	listCap := cap(e.published)
	buf := make([]*Stream, 0, streams)
	for now, ok := e.Advance(0); ok; now, ok = e.Advance(now) {
		buf = e.TakePublished(buf[:0])
		if len(e.published) != 0 || cap(e.published) != listCap || len(buf) > streams {
			t.Fatalf("at %v: list %d (cap %d), taken %d; want 0 (cap %d), ≤ %d", now, len(e.published), cap(e.published), len(buf), listCap, streams)
		}
	}
	if cap(buf) != streams {
		t.Errorf("the caller's buffer grew to %d, want %d", cap(buf), streams)
	}
}

// TestRemovedSinkGetsAWake: a stream collected while it had a sink, whose
// sink is removed before delivery, is told on Ready instead.
func TestRemovedSinkGetsAWake(t *testing.T) {
	cfg := constantConfig()
	e := newTestEngine(t, cfg)
	s, err := e.Submit(0, Request{PromptTokens: 10, MaxTokens: 3, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	called := false
	s.SetSink(func() { called = true })
	e.Advance(cfg.TTFT)
	s.SetSink(nil)
	for _, c := range e.TakePublished(nil) {
		c.deliver()
	}
	if called || !signalled(s) {
		t.Errorf("sink called %v, Ready signalled %v; want false, true", called, !called)
	}
	e.Advance(cfg.TTFT + cfg.ITL)
	if got := e.TakePublished(nil); len(got) != 0 || !signalled(s) {
		t.Errorf("without a sink: %d collected, want 0 and a Ready signal", len(got))
	}
}

// TestLiveRunCallsSinks: on the wall clock, Run calls each sink as its
// stream publishes, up to the end, and on a crash before it returns.
func TestLiveRunCallsSinks(t *testing.T) {
	cfg := constantConfig()
	cfg.ITL = time.Millisecond
	e := newTestEngine(t, cfg)
	l := NewLive(e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()

	type seen struct {
		n   int
		fin Finish
	}
	submit := func(maxTokens int) (*Stream, chan seen) {
		s, err := l.Submit(Request{PromptTokens: 10, MaxTokens: maxTokens, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan seen, maxTokens+1)
		s.SetSink(func() {
			n, fin := s.Progress()
			got <- seen{n, fin}
		})
		if _, fin := s.Progress(); fin != FinishNone {
			// Ended before the sink was set (TTFT + maxTokens ms): it
			// was signalled on Ready.
			t.Skipf("the machine is too busy: a stream ended before the next statement")
		}
		return s, got
	}
	// Runs to its end; tokens published before the sink was set were
	// signalled on Ready.
	_, got := submit(50)
	last := seen{}
	for last.fin == FinishNone {
		select {
		case last = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("sink not called to the stream's end within 10 s; last %+v", last)
		}
	}
	if last.n != 50 || last.fin != FinishLength {
		t.Errorf("last delivery: %+v, want 50 tokens, length", last)
	}

	// Cut by a crash: the sink hears of it before Run returns.
	long, gotLong := submit(1000)
	select {
	case <-gotLong: // the crash hits a running stream
	case <-time.After(10 * time.Second):
		t.Fatal("no token within 10 s")
	}
	l.Crash()
	if err := <-done; err == nil {
		t.Fatal("Run returned nil after a crash")
	}
	for {
		select {
		case v := <-gotLong:
			if v.fin == FinishNone {
				continue
			}
			if v.fin != FinishError || long.Err() == nil {
				t.Errorf("after the crash the sink saw %+v, err %v; want error", v, long.Err())
			}
		default:
			t.Fatal("Run returned before the sink heard of the crash")
		}
		break
	}
}

// TestDeliverAllCallsEverySinkOnce: a batch large enough to be spread over
// several goroutines still calls each stream's sink exactly once, has
// returned only when all are called, and leaves the list cleared.
func TestDeliverAllCallsEverySinkOnce(t *testing.T) {
	for _, n := range []int{1, deliverPerWorker - 1, deliverPerWorker * 2, 1000} {
		calls := make([]atomic.Int32, n)
		d := make([]*Stream, n)
		for i := range d {
			d[i] = &Stream{ready: make(chan struct{}, 1)}
			d[i].SetSink(func() { calls[i].Add(1) })
		}
		deliverAll(d)
		for i := range calls {
			if got := calls[i].Load(); got != 1 {
				t.Fatalf("batch of %d: stream %d's sink called %d times, want 1", n, i, got)
			}
		}
		if i := slices.IndexFunc(d, func(s *Stream) bool { return s != nil }); i >= 0 {
			t.Fatalf("batch of %d: entry %d not cleared", n, i)
		}
	}
}
