package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// liveLog is a LiveSink that forwards to a Recorder and keeps what it was
// told, and whether the request had ended (Do returned) by then.
type liveLog struct {
	rec   *recording.Recorder
	ended *atomic.Bool

	mu   sync.Mutex
	evs  []recording.StreamEvents
	late int // batches told after Do returned
}

func (l *liveLog) StreamEvents(ev *recording.StreamEvents) {
	l.rec.StreamEvents(ev)
	l.mu.Lock()
	defer l.mu.Unlock()
	e := *ev
	e.ITLMicros = append([]uint32(nil), ev.ITLMicros...)
	l.evs = append(l.evs, e)
	if l.ended.Load() {
		l.late++
	}
}

// TestClientLiveEventsOfALongStream streams 15 chunks 100 ms apart over a
// run clock whose zero lies 0.85 s back, so that the stream spans the
// seconds 0, 1 and 2: the sink hears the first token at once and each
// second's chunks while the stream runs, the Recorder's series credits
// every second the stream spans, and Record does not count them again.
func TestClientLiveEventsOfALongStream(t *testing.T) {
	const chunks, itl = 15, 100 * time.Millisecond
	clock := recording.NewRunClockAt(time.Now().Add(-850 * time.Millisecond))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, roleChunk)
		for i := range chunks {
			if i > 0 && !srvWait(r, itl) {
				return
			}
			writeSSE(w, contentChunk("tok"))
		}
		writeSSE(w, finishChunk("length"), usageChunk(5, chunks), "[DONE]")
	}))
	defer srv.Close()

	rec := recording.NewRecorder(recording.Options{})
	var ended atomic.Bool
	sink := &liveLog{rec: rec, ended: &ended}
	c := newTestClient(t, Options{Clock: clock})
	res := recording.Result{Seq: 1, Scheduled: clock.Now()}
	req := chatRequest()
	req.MaxTokens = chunks
	c.DoCall(context.Background(), srv.URL+"/v1", req, &res, Call{Live: sink})
	ended.Store(true)
	if res.Outcome != recording.OutcomeOK || res.ContentChunks != chunks || !res.LiveEvents {
		t.Fatalf("result: %v %s %q, %d chunks, live %v; want ok, %d chunks, live", res.Outcome, res.Class, res.Err, res.ContentChunks, res.LiveEvents, chunks)
	}
	rec.Record(&res)

	sink.mu.Lock()
	evs, late := sink.evs, sink.late
	sink.mu.Unlock()
	if late != 0 {
		t.Errorf("%d batches told after Do returned, want none", late)
	}
	if len(evs) == 0 || !evs[0].FirstToken || evs[0].Tokens != 1 || evs[0].At != res.FirstToken || evs[0].TTFT != res.FirstToken-res.Sent {
		t.Fatalf("first batch %+v: want the first token alone, at once (FirstToken %v, TTFT %v)", evs[0], res.FirstToken, res.FirstToken-res.Sent)
	}
	var tokens, gaps int
	secs := map[time.Duration]int{}
	for i, ev := range evs {
		tokens += ev.Tokens
		gaps += len(ev.ITLMicros)
		secs[ev.At.Truncate(time.Second)] += ev.Tokens
		if i > 0 && ev.FirstToken {
			t.Errorf("batch %d also claims the first token", i)
		}
		if i > 1 && evs[i-1].At.Truncate(time.Second) == ev.At.Truncate(time.Second) {
			t.Errorf("batches %d and %d are of the same second %v: want one batch per second", i-1, i, ev.At.Truncate(time.Second))
		}
	}
	if tokens != chunks || gaps != chunks-1 {
		t.Errorf("batches told %d tokens and %d gaps, want %d and %d", tokens, gaps, chunks, chunks-1)
	}
	first, last := res.FirstToken.Truncate(time.Second), res.End.Truncate(time.Second)
	if first == last {
		t.Fatalf("stream from %v to %v stayed within one second: the clock offset did not work", res.FirstToken, res.End)
	}
	sum := rec.Finish(res.End + time.Millisecond)
	var total int64
	for s := first; s <= last; s += time.Second {
		n := sum.Series.Second(int(s / time.Second)).Counts.StreamedTokens
		if n == 0 {
			t.Errorf("second %v: no tokens, want the stream's chunks of that second (%d told)", s, secs[s])
		}
		total += n
	}
	if c := sum.Counts(recording.TagFilter{}); total != chunks || c.StreamedTokens != chunks || c.OutputTokens != chunks {
		t.Errorf("series tokens %d, run streamed %d, output %d: want %d each (nothing counted twice)", total, c.StreamedTokens, c.OutputTokens, chunks)
	}
	if h := sum.Histogram(recording.MetricITL, recording.TagFilter{}); h.TotalCount() != chunks-1 {
		t.Errorf("itl histogram holds %d gaps, want %d", h.TotalCount(), chunks-1)
	}
	if w := sum.Window(0, time.Hour); w.Histogram(recording.MetricITL).Count() != chunks-1 || w.Histogram(recording.MetricTTFT).Count() != 1 {
		t.Errorf("series: %d itl gaps, %d ttfts, want %d and 1", w.Histogram(recording.MetricITL).Count(), w.Histogram(recording.MetricTTFT).Count(), chunks-1)
	}
}
