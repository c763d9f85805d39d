package recording

import (
	"fmt"
	"math"
	"time"
)

// The time series keeps one row per second of run clock. A request's
// outcome, counters, e2e and tpot are attributed to the second in which it
// ENDED (Result.End; a dropped request without an End to the second it was
// scheduled in): by completion. Its first token (ttft), its chunks (itl
// gaps, Counts.StreamedTokens) are attributed to the seconds they ARRIVED
// in: by event time, told to Recorder.StreamEvents as they happen (or
// placed by Record from the Result's times). The metric table's Series
// column says which metric is which. A second's row is final once no
// request still running can end in it; its event-time part is complete
// within a chunk's gap after the second.
//
// Memory: a row holds the Counts, the in-flight max and area, and the four
// per-second LogHistograms (ttft, e2e, itl, tpot) packed into one byte slice
// of varints, about 2 bytes per populated bucket. Only the last openSeconds
// seconds are kept dense (8 × 14 KiB) while results for them may still
// arrive; older seconds are sealed into the packed form. A result for a
// sealed second (Recorded more than 7 s after it ended) is still counted:
// its second is unpacked, updated and packed again, which costs about 10 µs
// and one allocation instead of the usual few hundred ns.
const (
	seriesBlock = 64 // rows are allocated in blocks, never copied
	openSeconds = 8
)

type secRow struct {
	c            Counts
	inflightMax  int64
	inflightArea int64  // ∫ in-flight dt over this second, in ns·requests
	hist         []byte // packed histograms (encodeSecond), immutable once set
}

type openSlot struct {
	sec   int // second held, −1 for none
	dirty bool
	h     secondHists
}

// Series is the 1-second time series of a run. A Series owned by a Recorder
// is guarded by the Recorder's lock; one in a Summary is immutable and safe
// for concurrent reads.
type Series struct {
	blocks       []*[seriesBlock]secRow
	n            int           // seconds in use
	end          time.Duration // clock up to which the series is known (now, or run end)
	open         *[openSeconds]openSlot
	sealedBefore int // seconds < sealedBefore are packed
	scratch      *secondHists
	buf          []byte
}

func newSeries(live bool) *Series {
	s := &Series{}
	if live {
		s.open = new([openSeconds]openSlot)
		for i := range s.open {
			s.open[i].sec = -1
		}
	}
	return s
}

// secondOf is the index of the second containing t.
func secondOf(t time.Duration) int {
	if t < 0 {
		return 0
	}
	return int(t / time.Second)
}

func (s *Series) row(sec int) *secRow {
	for sec >= len(s.blocks)*seriesBlock {
		s.blocks = append(s.blocks, new([seriesBlock]secRow))
	}
	if sec >= s.n {
		s.n = sec + 1
	}
	return &s.blocks[sec/seriesBlock][sec%seriesBlock]
}

func (s *Series) peek(sec int) *secRow {
	if sec < 0 || sec >= s.n {
		return nil
	}
	return &s.blocks[sec/seriesBlock][sec%seriesBlock]
}

func (s *Series) encode(h *secondHists) []byte {
	var packed []byte
	packed, s.buf = encodeSecond(h, s.buf)
	return packed
}

// beginHists returns the dense histograms to record second sec into; the
// caller must call endHists(sec, h) afterwards.
func (s *Series) beginHists(sec int) *secondHists {
	if s.open != nil && sec >= s.sealedBefore {
		s.advance(sec)
		sl := &s.open[sec%openSeconds]
		sl.sec = sec
		sl.dirty = true
		s.row(sec)
		return &sl.h
	}
	if s.scratch == nil {
		s.scratch = new(secondHists)
	} else {
		*s.scratch = secondHists{}
	}
	r := s.row(sec)
	// r.hist was produced by encodeSecond or validated by NewSeries.
	_ = walkSecond(r.hist, func(slot, b int, c uint64) { s.scratch[slot][b] += uint32(c) })
	return s.scratch
}

func (s *Series) endHists(sec int, h *secondHists) {
	if h == s.scratch {
		s.row(sec).hist = s.encode(h)
	}
}

// advance seals the open seconds that fall out of the window of open
// seconds ending at sec.
func (s *Series) advance(sec int) {
	if s.open == nil || sec < s.sealedBefore+openSeconds {
		return
	}
	before := sec - openSeconds + 1
	for i := range s.open {
		if sl := &s.open[i]; sl.sec >= 0 && sl.sec < before {
			s.seal(sl)
		}
	}
	s.sealedBefore = before
}

func (s *Series) seal(sl *openSlot) {
	if sl.dirty {
		s.row(sl.sec).hist = s.encode(&sl.h)
		sl.h = secondHists{}
	}
	sl.sec, sl.dirty = -1, false
}

// sealAll packs every open second; later results take the late path.
func (s *Series) sealAll() {
	if s.open == nil {
		return
	}
	for i := range s.open {
		if s.open[i].sec >= 0 {
			s.seal(&s.open[i])
		}
	}
	s.sealedBefore = max(s.sealedBefore, s.n)
}

// addArea integrates a constant in-flight level over [from, to).
func (s *Series) addArea(from, to time.Duration, level int64) {
	if level == 0 || to <= from {
		return
	}
	for t := from; t < to; {
		sec := secondOf(t)
		segEnd := min(time.Duration(sec+1)*time.Second, to)
		r := s.row(sec)
		r.inflightArea += level * int64(segEnd-t)
		r.inflightMax = max(r.inflightMax, level)
		t = segEnd
	}
}

// noteLevel records that in-flight reached level at time at.
func (s *Series) noteLevel(at time.Duration, level int64) {
	r := s.row(secondOf(at))
	r.inflightMax = max(r.inflightMax, level)
}

// copySealed returns an immutable copy; s must be sealed.
func (s *Series) copySealed() *Series {
	c := &Series{n: s.n, end: s.end, blocks: make([]*[seriesBlock]secRow, len(s.blocks))}
	for i, b := range s.blocks {
		nb := *b
		c.blocks[i] = &nb
	}
	return c
}

// Len is the number of seconds in the series (the last one may be partial).
func (s *Series) Len() int { return s.n }

// End is the run-clock time up to which the series is known.
func (s *Series) End() time.Duration { return s.end }

// covered is how much of second i lies before s.end.
func (s *Series) covered(i int) time.Duration {
	return min(max(s.end-time.Duration(i)*time.Second, 0), time.Second)
}

// SecondStats is one row of the time series: the second [Second, Second+1)
// of run clock, with the requests that ended in it and the first tokens
// and chunks that arrived in it.
type SecondStats struct {
	Second       int
	Counts       Counts
	InFlightMax  int64
	InFlightMean float64 // time-weighted over the part of the second before the run end
	// Hist packs the ttft, e2e, itl and tpot LogHistograms of this second
	// (format in report/SCHEMA.md); nil when none had values. Read-only.
	Hist []byte
}

// Second returns row i (0 ≤ i < Len()).
func (s *Series) Second(i int) SecondStats {
	r := s.peek(i)
	if r == nil {
		return SecondStats{Second: i}
	}
	st := SecondStats{Second: i, Counts: r.c, InFlightMax: r.inflightMax, Hist: r.hist}
	if cov := s.covered(i); cov > 0 {
		st.InFlightMean = float64(r.inflightArea) / float64(cov)
	}
	if s.open != nil {
		if sl := &s.open[i%openSeconds]; sl.sec == i && sl.dirty {
			st.Hist, _ = encodeSecond(&sl.h, nil)
		}
	}
	return st
}

// Percentiles returns metric m's values (µs) at percentiles ps in this
// second, and how many values it had. Only ttft, e2e, itl and tpot are kept
// per second; other metrics return an error.
func (st SecondStats) Percentiles(m Metric, ps ...float64) (vals []int64, count int64, err error) {
	slot, ok := secondSlot(m)
	if !ok {
		return nil, 0, fmt.Errorf("metric %s is not kept per second", m)
	}
	type bc struct {
		b int
		c uint64
	}
	var buckets []bc
	var total uint64
	err = walkSecond(st.Hist, func(sl, b int, c uint64) {
		if sl == slot {
			buckets = append(buckets, bc{b, c})
			total += c
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("second %d: %w", st.Second, err)
	}
	vals = make([]int64, len(ps))
	if total == 0 {
		return vals, 0, nil
	}
	for i, p := range ps {
		rank := percentileRank(p, total)
		var seen uint64
		for _, x := range buckets {
			seen += x.c
			if seen >= rank {
				vals[i] = logBucketValue(x.b)
				break
			}
		}
	}
	return vals, int64(total), nil
}

// maxLoadedSecond bounds the rows NewSeries accepts (10 days of run), so
// that a corrupt file cannot make it allocate without limit.
const maxLoadedSecond = 10 * 24 * 3600

// NewSeries rebuilds a sealed series from its rows (e.g. from a saved
// report); end is the run duration. Rows must have increasing Second
// indexes, none more than a minute past end; missing seconds are empty.
func NewSeries(rows []SecondStats, end time.Duration) (*Series, error) {
	s := newSeries(false)
	s.end = end
	prev := -1
	for _, st := range rows {
		if st.Second <= prev {
			return nil, fmt.Errorf("time series: second %d after second %d", st.Second, prev)
		}
		if st.Second > maxLoadedSecond || st.Second > secondOf(end)+60 {
			return nil, fmt.Errorf("time series: second %d is beyond the run (%v)", st.Second, end)
		}
		prev = st.Second
		if err := walkSecond(st.Hist, func(int, int, uint64) {}); err != nil {
			return nil, fmt.Errorf("time series: second %d: %w", st.Second, err)
		}
		r := s.row(st.Second)
		r.c = st.Counts
		r.inflightMax = st.InFlightMax
		r.inflightArea = int64(math.Round(st.InFlightMean * float64(s.covered(st.Second))))
		if len(st.Hist) > 0 {
			r.hist = st.Hist
		}
	}
	return s, nil
}

// WindowStats aggregates the seconds of a window: counts, rates,
// in-flight and low-precision percentiles (1.6% relative error) of ttft,
// e2e, itl and tpot.
type WindowStats struct {
	From, To     time.Duration // second-aligned bounds covered (To is clipped to the series end)
	Counts       Counts
	InFlightMax  int64
	InFlightMean float64
	hists        [numSecondMetrics]LogHistogram
}

// Window aggregates the seconds that overlap [from, to): from rounds down
// and to up to whole seconds, and the window is clipped to [0, End()). Each
// request counts in the second it ended in; its first token and chunks in
// the seconds they arrived in.
func (s *Series) Window(from, to time.Duration) *WindowStats {
	ws := &WindowStats{}
	from = max(from, 0)
	to = min(to, s.end)
	first := secondOf(from)
	ws.From = time.Duration(first) * time.Second
	ws.To = ws.From
	if to <= from {
		return ws
	}
	last := int((to+time.Second-1)/time.Second) - 1
	ws.To = min(time.Duration(last+1)*time.Second, s.end)
	var area int64
	for i := first; i <= last && i < s.n; i++ {
		r := s.peek(i)
		ws.Counts.Add(r.c)
		ws.InFlightMax = max(ws.InFlightMax, r.inflightMax)
		area += r.inflightArea
		if s.open != nil {
			if sl := &s.open[i%openSeconds]; sl.sec == i && sl.dirty {
				for m := range sl.h {
					for b, c := range sl.h[m] {
						if c != 0 {
							ws.hists[m].addBucket(b, uint64(c))
						}
					}
				}
				continue
			}
		}
		_ = walkSecond(r.hist, func(slot, b int, c uint64) { ws.hists[slot].addBucket(b, c) })
	}
	if d := ws.To - ws.From; d > 0 {
		ws.InFlightMean = float64(area) / float64(d)
	}
	return ws
}

// Seconds is the window's length in seconds.
func (w *WindowStats) Seconds() float64 { return (w.To - w.From).Seconds() }

// Histogram returns the window's histogram of m (µs), or nil for metrics
// not kept per second (only ttft, e2e, itl and tpot are).
func (w *WindowStats) Histogram(m Metric) *LogHistogram {
	slot, ok := secondSlot(m)
	if !ok {
		return nil
	}
	return &w.hists[slot]
}

// Percentile returns metric m at percentile p over the window; ok is false
// when m is not kept per second or had no values in the window.
func (w *WindowStats) Percentile(m Metric, p float64) (d time.Duration, ok bool) {
	h := w.Histogram(m)
	if h == nil || h.Count() == 0 {
		return 0, false
	}
	return time.Duration(h.ValueAtPercentile(p)) * time.Microsecond, true
}

func (w *WindowStats) perSecond(n int64) float64 {
	if s := w.Seconds(); s > 0 {
		return float64(n) / s
	}
	return 0
}

// RequestsPerSecond is ok requests per second over the window.
func (w *WindowStats) RequestsPerSecond() float64 { return w.perSecond(w.Counts.OK) }

// OutputTokensPerSecond is output tokens streamed per second, by event
// time (Counts.StreamedTokens): tokens of requests still running count.
func (w *WindowStats) OutputTokensPerSecond() float64 { return w.perSecond(w.Counts.StreamedTokens) }

// GoodputPerSecond is requests that met every SLO per second.
func (w *WindowStats) GoodputPerSecond() float64 { return w.perSecond(w.Counts.Good) }
