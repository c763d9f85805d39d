package recording

import (
	"testing"
	"time"
)

// longStream is an ok Result sent at sent (> 0: a zero Sent was never sent) whose chunks arrive every itl
// from sent+ttft on, n of them, ending with the last chunk.
func longStream(sent, ttft, itl time.Duration, n int) *Result {
	res := &Result{Scheduled: sent, Dequeued: sent, Sent: sent, FirstToken: sent + ttft,
		Outcome: OutcomeOK, HTTPStatus: 200, ContentChunks: n, OutputTokens: n, UsageReported: true, FinishReason: "stop", OutputChars: n}
	for range n - 1 {
		res.ITLMicros = append(res.ITLMicros, uint32(itl/time.Microsecond))
	}
	res.End = res.FirstToken + time.Duration(n-1)*itl
	return res
}

// streamedPerSecond returns Counts.StreamedTokens of each second of s.
func streamedPerSecond(s *Series) []int64 {
	out := make([]int64, s.Len())
	for i := range out {
		out[i] = s.Second(i).Counts.StreamedTokens
	}
	return out
}

func TestSeriesPlacesChunksOfALongStreamInTheirSeconds(t *testing.T) {
	t.Parallel()
	// A 30 s stream: first token at 0.5 s, then a chunk every 100 ms up to
	// 30.4 s, recorded when it ends (no live events): every second it
	// spans gets its chunks, the ttft its first second, e2e the last.
	r := NewRecorder(Options{})
	res := longStream(1, 500*time.Millisecond, 100*time.Millisecond, 300)
	r.Record(res)
	sum := r.Finish(31 * time.Second)
	got := streamedPerSecond(sum.Series)
	var total int64
	for sec, n := range got {
		total += n
		switch {
		case sec == 0 && n != 5: // 0.5 … 0.9 s
			t.Errorf("second 0: %d tokens, want 5", n)
		case sec >= 1 && sec <= 29 && (n < 9 || n > 11): // 10 a second (±1 for µs rounding of the gaps at a boundary)
			t.Errorf("second %d: %d tokens, want about 10", sec, n)
		case sec == 30 && n < 4:
			t.Errorf("second 30: %d tokens, want 5", n)
		}
	}
	if total != 300 {
		t.Errorf("tokens over the series = %d, want 300", total)
	}
	if _, n, _ := sum.Series.Second(0).Percentiles(MetricTTFT, 50); n != 1 {
		t.Errorf("second 0 ttft count = %d, want 1 (the first token arrived in it)", n)
	}
	if _, n, _ := sum.Series.Second(30).Percentiles(MetricTTFT, 50); n != 0 {
		t.Errorf("second 30 ttft count = %d, want 0", n)
	}
	if _, n, _ := sum.Series.Second(30).Percentiles(MetricE2E, 50); n != 1 {
		t.Errorf("second 30 e2e count = %d, want 1 (it ended then)", n)
	}
	var itl int64
	for i := range sum.Series.Len() {
		_, n, _ := sum.Series.Second(i).Percentiles(MetricITL, 50)
		itl += n
	}
	if itl != 299 {
		t.Errorf("itl gaps over the series = %d, want 299", itl)
	}
	if c := sum.Counts(TagFilter{}); c.StreamedTokens != 300 || c.OutputTokens != 300 {
		t.Errorf("run counts: streamed %d, output %d, want 300 and 300", c.StreamedTokens, c.OutputTokens)
	}
}

func TestStreamEventsAreSeenLiveAndNotCountedTwice(t *testing.T) {
	t.Parallel()
	tags := Tags{Class: "chat"}
	res := longStream(1, 500*time.Millisecond, 100*time.Millisecond, 30)
	res.Tags = tags
	res.LiveEvents = true
	res.OutputTokens = 31 // usage says one more than the chunks: added at the end

	live := NewRecorder(Options{})
	// The client's batches: the first token at once, then a batch per second.
	at := res.FirstToken
	live.StreamEvents(&StreamEvents{Tags: &tags, At: at, FirstToken: true, TTFT: at - res.Sent, Tokens: 1})
	from, n := 0, 0
	for i, g := range res.ITLMicros {
		next := at + time.Duration(g)*time.Microsecond
		if n > 0 && secondOf(next) != secondOf(at) {
			live.StreamEvents(&StreamEvents{Tags: &tags, At: at, Tokens: n, ITLMicros: res.ITLMicros[from:i]})
			from, n = i, 0
		}
		at = next
		n++
	}
	// While the stream runs (before its last batch and its Result), the
	// window of its second second already holds its tokens and gaps.
	w := live.Window(time.Second, 2*time.Second)
	if w.Counts.StreamedTokens != 10 || w.Histogram(MetricITL).Count() != 10 {
		t.Errorf("live window [1s, 2s): %d tokens, %d itl gaps, want 10 and 10", w.Counts.StreamedTokens, w.Histogram(MetricITL).Count())
	}
	if p, ok := live.Window(0, time.Second).Percentile(MetricTTFT, 99); !ok || p < 490*time.Millisecond || p > 510*time.Millisecond {
		t.Errorf("live ttft p99 in second 0 = %v (ok %v), want about 500ms", p, ok)
	}
	if got := live.Snapshot(2500 * time.Millisecond).OutputTokensPerS; got != 10 {
		t.Errorf("live line tok/s at 2.5 s = %v, want 10 (the last complete second)", got)
	}
	live.StreamEvents(&StreamEvents{Tags: &tags, At: at, Tokens: n, ITLMicros: res.ITLMicros[from:]})
	live.Record(res)

	// The same Result recorded late, without live events, gives the same
	// series and the same whole-run histograms.
	late := NewRecorder(Options{})
	res2 := *res
	res2.LiveEvents = false
	late.Record(&res2)
	a, b := live.Finish(4*time.Second), late.Finish(4*time.Second)
	if ga, gb := streamedPerSecond(a.Series), streamedPerSecond(b.Series); len(ga) != len(gb) || ga[0] != gb[0] || ga[1] != gb[1] || ga[2] != gb[2] || ga[3] != gb[3] {
		t.Errorf("tokens per second live %v, late %v: want equal", ga, gb)
	}
	for _, m := range []Metric{MetricTTFT, MetricITL, MetricE2E, MetricTPOT, MetricOutputTokens} {
		ha, hb := a.Histogram(m, TagFilter{}), b.Histogram(m, TagFilter{})
		if ha.TotalCount() != hb.TotalCount() || ha.ValueAtQuantile(99) != hb.ValueAtQuantile(99) {
			t.Errorf("%s: live count %d p99 %d, late count %d p99 %d: want equal", m, ha.TotalCount(), ha.ValueAtQuantile(99), hb.TotalCount(), hb.ValueAtQuantile(99))
		}
	}
	for i := range a.Series.Len() {
		for _, m := range []Metric{MetricTTFT, MetricITL, MetricE2E} {
			_, na, _ := a.Series.Second(i).Percentiles(m, 50)
			_, nb, _ := b.Series.Second(i).Percentiles(m, 50)
			if na != nb {
				t.Errorf("second %d %s: live %d values, late %d", i, m, na, nb)
			}
		}
	}
	if ca, cb := a.Counts(TagFilter{}), b.Counts(TagFilter{}); ca.StreamedTokens != 31 || cb.StreamedTokens != 31 {
		t.Errorf("streamed tokens: live %d, late %d, want 31 (usage)", ca.StreamedTokens, cb.StreamedTokens)
	}
}

func TestStreamedTokensOfAFailedStreamCount(t *testing.T) {
	t.Parallel()
	// A stream cut after 20 chunks: its tokens streamed (they count by
	// event time), though output_tokens counts ok requests only.
	r := NewRecorder(Options{})
	res := longStream(0, 100*time.Millisecond, 100*time.Millisecond, 20)
	res.Outcome, res.Class, res.UsageReported, res.OutputTokens = OutcomeFailed, ClassReset, false, 0
	r.Record(res)
	c := r.Finish(3 * time.Second).Counts(TagFilter{})
	if c.StreamedTokens != 20 || c.OutputTokens != 0 {
		t.Errorf("streamed %d, output %d: want 20 and 0", c.StreamedTokens, c.OutputTokens)
	}
}
