package recording

import "time"

// StreamEvents is what happened to one running request within one second
// of run clock, told to the Recorder (and live exporters) as it happens
// rather than when the request ends: its first token and its content
// chunks. A client batches a request's chunks per second, so that a stream
// costs one call per second it spans (and one at its first token), not one
// per token.
type StreamEvents struct {
	// Tags are the request's tags (Result.Tags); read during the call only.
	Tags *Tags
	// At is when the last of these events happened; every one of them
	// happened in the second that contains At.
	At time.Duration
	// FirstToken reports that the request's first content chunk is among
	// these events; TTFT is then its time to first token.
	FirstToken bool
	TTFT       time.Duration
	// Tokens counts the content chunks that arrived.
	Tokens int
	// ITLMicros are the gaps (µs) that end at these chunks: one per chunk
	// but the request's first. It aliases the Result's slice and is valid
	// during the call only.
	ITLMicros []uint32
}

// StreamEvents adds a running request's events to the per-second series
// (ttft and itl histograms, Counts.StreamedTokens) and its tag tuple's
// StreamedTokens, in the second they happened, at once: live windows,
// stop conditions and the live line see a stream while it runs. The
// request's Result must then carry LiveEvents, so that Record does not
// count them again. Safe for concurrent use; it does not retain ev.
func (r *Recorder) StreamEvents(ev *StreamEvents) {
	sec := secondOf(ev.At)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = max(r.now, ev.At)
	r.series.end = max(r.series.end, r.now)
	if ev.Tokens != 0 {
		r.tuple(*ev.Tags).Counts.StreamedTokens += int64(ev.Tokens)
		r.series.row(sec).c.StreamedTokens += int64(ev.Tokens)
	}
	if !ev.FirstToken && len(ev.ITLMicros) == 0 {
		return
	}
	sh := r.series.beginHists(sec)
	if ev.FirstToken {
		sh[0][logBucket(micros(ev.TTFT))]++
	}
	for _, g := range ev.ITLMicros {
		sh[2][logBucket(int64(g))]++
	}
	r.series.endHists(sec, sh)
}

// streamedTotal is what a result adds to StreamedTokens over the run: an
// ok request's output tokens (usage when reported), else the content
// chunks that arrived.
func streamedTotal(res *Result) int64 {
	if res.Outcome == OutcomeOK {
		return int64(res.OutputTokenCount())
	}
	return int64(res.ContentChunks)
}

// placeEvents puts the first token and the chunks of a result that was not
// given live into the seconds they arrived in: chunk i at FirstToken plus
// the first i gaps (to the microsecond). It returns the chunks it placed.
// Called with r.mu held.
func (r *Recorder) placeEvents(t *TupleStats, res *Result) int64 {
	if res.FirstToken == 0 || res.Outcome == OutcomeDropped {
		return 0
	}
	at := res.FirstToken
	sec := secondOf(at)
	sh := r.series.beginHists(sec)
	if d, ok := res.TTFT(); ok && res.Sent > 0 {
		sh[0][logBucket(micros(d))]++
	}
	var n, placed int64 = 1, 1
	for _, g := range res.ITLMicros {
		at += time.Duration(g) * time.Microsecond
		if s := secondOf(at); s != sec {
			r.series.row(sec).c.StreamedTokens += n
			r.series.endHists(sec, sh)
			sec, n = s, 0
			sh = r.series.beginHists(sec)
		}
		sh[2][logBucket(int64(g))]++
		n++
		placed++
	}
	r.series.row(sec).c.StreamedTokens += n
	r.series.endHists(sec, sh)
	t.Counts.StreamedTokens += placed
	return placed
}
