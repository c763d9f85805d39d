package recording

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// SLO holds per-request service-level objectives for goodput (DistServe,
// vLLM's --goodput): a request is good when it ended ok and met every SLO
// given. A zero field is not given.
type SLO struct {
	TTFT time.Duration // ttft ≤ TTFT; an ok request without a first token misses it
	TPOT time.Duration // tpot ≤ TPOT; requests with ≤ 1 output token have no tpot and meet it
	E2E  time.Duration // e2e ≤ E2E
}

// Given reports whether any SLO is set.
func (s SLO) Given() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2E > 0 }

// Met reports whether res is good: ok and within every SLO given.
func (s SLO) Met(res *Result) bool {
	if res.Outcome != OutcomeOK {
		return false
	}
	if s.TTFT > 0 {
		if d, ok := res.TTFT(); !ok || d > s.TTFT {
			return false
		}
	}
	if s.TPOT > 0 {
		if d, ok := res.TPOT(); ok && d > s.TPOT {
			return false
		}
	}
	if s.E2E > 0 {
		if d, ok := res.E2E(); !ok || d > s.E2E {
			return false
		}
	}
	return true
}

// Options configures a Recorder. The zero value records without
// SLOs and without per-request output.
type Options struct {
	// SLO enables goodput counting.
	SLO SLO
	// SaveRequests, when set, receives one JSON line per Result
	// (--save-requests). Its write errors are sticky: check them with
	// RequestWriter.Flush when the run ends.
	SaveRequests *RequestWriter
	// Metrics is the run's metric table; AddSample accepts samples of the
	// custom metrics registered in it. Nil: no custom metrics.
	Metrics *metrics.Registry
	// IgnoreEOS says the requests asked for exactly max_tokens (vLLM's
	// ignore_eos): finish_reason length is then what was asked for, and
	// not counted as truncation.
	IgnoreEOS bool
}

// Recorder turns Results into HDR histograms and counters per tag tuple and
// a 1-second time series, and tracks in-flight requests.
//
// Concurrency contract: every method is safe for concurrent use. Record and
// the in-flight hooks take one mutex for a short, allocation-free critical
// section (a few hundred ns plus a few ns per ITL gap); with the engine's
// request rates the lock is idle well over 99% of the time, so one lock is
// cheaper than striping and merging. Record does not retain res or its
// ITLMicros slice after it returns.
//
// The engine calls RequestStarted once for each request that leaves the
// schedule to be sent (it will end ok, failed or cancelled, never dropped)
// and RequestEnded when that request gives up its in-flight slot; they feed
// the in-flight gauge and the "sent" count that makes lost requests visible.
type Recorder struct {
	mu        sync.Mutex
	slo       SLO
	ignoreEOS bool
	errMsgs   map[ErrorClass]map[string]int64 // failed results' texts by class, bounded
	reqs      *RequestWriter
	tuples    []*TupleStats
	index     map[Tags]*TupleStats
	last      *TupleStats
	series    *Series
	reg       *metrics.Registry
	gseq      uint64 // gauge samples added, orders Sink.Last across tuples

	sent        int64
	inflight    int64
	inflightMax int64
	lastAt      time.Duration // clock up to which in-flight is integrated
	now         time.Duration // latest clock seen
}

// NewRecorder returns an empty Recorder.
func NewRecorder(opts Options) *Recorder {
	return &Recorder{
		slo:       opts.SLO,
		ignoreEOS: opts.IgnoreEOS,
		reqs:      opts.SaveRequests,
		index:     make(map[Tags]*TupleStats),
		series:    newSeries(true),
		reg:       opts.Metrics,
	}
}

// AddSample adds value v of the custom metric name (registered in
// Options.Metrics) under tags: a trend records it in its
// histogram, a rate counts a pass when v is non-zero, a counter adds v and
// a gauge keeps it as its last value. Built-in metrics are recorded from
// Results and are refused here, as is an unregistered name. Safe for
// concurrent use.
func (r *Recorder) AddSample(name string, tags Tags, v float64) error {
	m, ok := r.reg.Lookup(name)
	switch {
	case !ok:
		return fmt.Errorf("add sample: unknown metric %q: register it first", name)
	case m.Builtin:
		return fmt.Errorf("add sample: %q is a built-in metric, recorded from requests", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tuple(tags)
	if t.Custom == nil {
		t.Custom = make(map[string]*metrics.Sink)
	}
	s := t.Custom[name]
	if s == nil {
		s = metrics.NewSink(m.Kind)
		t.Custom[name] = s
	}
	s.Add(v)
	if m.Kind == metrics.Gauge {
		r.gseq++
		s.Seq = r.gseq
	}
	return nil
}

// tuple returns the stats of tags, creating them on first use.
func (r *Recorder) tuple(tags Tags) *TupleStats {
	if r.last != nil && r.last.Tags == tags {
		return r.last
	}
	t := r.index[tags]
	if t == nil {
		t = &TupleStats{Tags: tags}
		r.index[tags] = t
		r.tuples = append(r.tuples, t)
	}
	r.last = t
	return t
}

func (t *TupleStats) record(m Metric, v int64) {
	h := t.Hists[m]
	if h == nil {
		h = NewHistogram(m)
		t.Hists[m] = h
	}
	clampRecord(h, v, histogramMax(m))
}

// endOf is the time a result is attributed to: its End, or for a result
// without one (a dropped request) the latest of its Scheduled and Sent.
func endOf(res *Result) time.Duration {
	if res.End >= res.Scheduled && res.End > 0 {
		return res.End
	}
	return max(res.Scheduled, res.Sent)
}

// Record adds one Result. See the Recorder's concurrency contract.
//
// The per-second series counts the request's outcome, e2e and tpot in the
// second it ended (by completion) and its first token, chunks (ttft, itl,
// Counts.StreamedTokens) in the seconds they arrived (by event time): a
// result with LiveEvents had those given to StreamEvents already; for one
// without, Record places them now, from FirstToken and the ITL gaps.
func (r *Recorder) Record(res *Result) {
	if r.reqs != nil {
		_ = r.reqs.Write(res) // sticky; reported by RequestWriter.Flush
	}
	good := r.slo.Given() && r.slo.Met(res)
	end := endOf(res)
	sec := secondOf(end)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = max(r.now, end)
	r.series.end = max(r.series.end, r.now)

	t := r.tuple(res.Tags)
	t.Counts.addResult(res, good, r.ignoreEOS)
	if res.Outcome == OutcomeFailed && res.Err != "" {
		r.countErrMsg(res.Class, res.Err)
	}
	// Output tokens by event time: the chunks (placed now unless they
	// were given live), then what usage adds to them at the end.
	streamed := int64(res.ContentChunks)
	if !res.LiveEvents {
		streamed = r.placeEvents(t, res)
	}
	if fix := streamedTotal(res) - streamed; fix != 0 {
		t.Counts.StreamedTokens += fix
		r.series.row(sec).c.StreamedTokens += fix
	}
	row := r.series.row(sec)
	row.c.addResult(res, good, r.ignoreEOS)
	sh := r.series.beginHists(sec)
	defer r.series.endHists(sec, sh)

	for _, m := range sampled {
		v, ok := m.Sample(res)
		if !ok {
			continue
		}
		t.record(m, v)
		switch m {
		case MetricE2E:
			sh[1][logBucket(v)]++
		case MetricTPOT:
			sh[3][logBucket(v)]++
		}
	}
	if len(res.ITLMicros) > 0 {
		h := t.Hists[MetricITL]
		if h == nil {
			h = NewHistogram(MetricITL)
			t.Hists[MetricITL] = h
		}
		for _, g := range res.ITLMicros {
			_ = h.RecordValue(min(int64(g), LatencyMaxMicros)) // in range after min
		}
	}
}

// advanceClock integrates the in-flight gauge up to at. Hooks from several
// goroutines may arrive slightly out of order; an earlier at counts as the
// latest time already seen.
func (r *Recorder) advanceClock(at time.Duration) {
	if at > r.lastAt {
		r.series.addArea(r.lastAt, at, r.inflight)
		r.lastAt = at
	}
	r.now = max(r.now, r.lastAt)
	r.series.end = max(r.series.end, r.now)
	r.series.advance(secondOf(r.now))
}

// RequestStarted notes that a request left the schedule to be sent at
// run-clock time at; see the Recorder's contract.
func (r *Recorder) RequestStarted(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceClock(at)
	r.sent++
	r.inflight++
	r.inflightMax = max(r.inflightMax, r.inflight)
	r.series.noteLevel(r.lastAt, r.inflight)
}

// RequestEnded notes that a started request gave up its in-flight slot at
// run-clock time at.
func (r *Recorder) RequestEnded(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceClock(at)
	if r.inflight > 0 {
		r.inflight--
	}
}

// Counts sums the counters of the tuples f selects, live.
func (r *Recorder) Counts(f TagFilter) Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return countsOf(r.tuples, f)
}

// Histogram returns a new HDR histogram merging metric m over the tuples f
// selects, live.
func (r *Recorder) Histogram(m Metric, f TagFilter) *hdrhistogram.Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	return histogramOf(r.tuples, m, f)
}

// Window aggregates the seconds overlapping [from, to) recorded so far;
// see Series.Window. The current second is partial.
func (r *Recorder) Window(from, to time.Duration) *WindowStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.series.Window(from, to)
}

// Live is the one-line-per-second view of a running load.
type Live struct {
	Elapsed          time.Duration
	RequestsPerS     float64       // ok requests that ended in the last complete second
	InFlight         int64         // requests in flight now
	TTFTP99          time.Duration // p99 ttft over the last 10 s (0 when none)
	Errors           int64         // failed requests so far
	ErrorsPerS       float64       // failed requests in the last complete second
	OutputTokensPerS float64       // output tokens streamed in the last complete second (by event time, Counts.StreamedTokens)
	// RecentOK is the number of ok requests that ended over the last
	// RecentSpan: the current second so far and the 9 complete seconds
	// before it, or everything since the start while the run is younger.
	// RequestRate reads a low rate from it.
	RecentOK   int64
	RecentSpan time.Duration
}

// LiveWindow is the window of Live.TTFTP99.
const LiveWindow = 10 * time.Second

// Snapshot returns the live view at run-clock time now.
func (r *Recorder) Snapshot(now time.Duration) Live {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceClock(now)
	l := Live{Elapsed: now, InFlight: r.inflight}
	for _, t := range r.tuples {
		l.Errors += t.Counts.Failed
	}
	if row := r.series.peek(secondOf(now) - 1); row != nil {
		l.RequestsPerS = float64(row.c.OK)
		l.ErrorsPerS = float64(row.c.Failed)
		l.OutputTokensPerS = float64(row.c.StreamedTokens)
	}
	cur := secondOf(now)
	first := max(cur-int(LiveWindow/time.Second)+1, 0)
	for sec := first; sec <= cur; sec++ {
		if row := r.series.peek(sec); row != nil {
			l.RecentOK += row.c.OK
		}
	}
	l.RecentSpan = max(now-time.Duration(first)*time.Second, 0)
	w := r.series.Window(now-LiveWindow, now)
	l.TTFTP99, _ = w.Percentile(MetricTTFT, 99)
	return l
}

// Finish closes the run at run-clock time end and returns its Summary, an
// independent snapshot. The Recorder stays usable (a straggling Result is
// still counted, in the Recorder, not in this Summary).
func (r *Recorder) Finish(end time.Duration) *Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceClock(end)
	r.series.end = end
	if end > 0 {
		r.series.row(secondOf(end - 1)) // one row for every second of the run
	}
	r.series.sealAll()
	series := r.series.copySealed()
	tuples := make([]*TupleStats, len(r.tuples))
	for i, t := range r.tuples {
		tuples[i] = t.clone()
	}
	conc := Concurrency{Max: r.inflightMax}
	if end > 0 {
		var area float64
		for i := range series.n {
			area += float64(series.peek(i).inflightArea)
		}
		conc.Mean = area / float64(end)
	}
	sum := NewSummary(end, r.sent, r.slo, conc, tuples, series)
	sum.Metrics = r.reg
	sum.TopErrors = r.topErrors()
	return sum
}

// maxErrMsgs bounds the distinct error texts kept per class: past it, only
// the texts already seen are counted.
const maxErrMsgs = 64

// countErrMsg counts one failed result's error text. Called with r.mu held.
func (r *Recorder) countErrMsg(cl ErrorClass, msg string) {
	if r.errMsgs == nil {
		r.errMsgs = make(map[ErrorClass]map[string]int64)
	}
	m := r.errMsgs[cl]
	if m == nil {
		m = make(map[string]int64)
		r.errMsgs[cl] = m
	}
	if _, ok := m[msg]; ok || len(m) < maxErrMsgs {
		m[msg]++
	}
}

// topErrors is the most frequent error text of each class (the first in
// byte order among equals). Called with r.mu held.
func (r *Recorder) topErrors() map[ErrorClass]TopError {
	if len(r.errMsgs) == 0 {
		return nil
	}
	out := make(map[ErrorClass]TopError, len(r.errMsgs))
	for cl, m := range r.errMsgs {
		var top TopError
		for msg, n := range m {
			if n > top.Count || (n == top.Count && msg < top.Message) {
				top = TopError{Message: msg, Count: n}
			}
		}
		out[cl] = top
	}
	return out
}
