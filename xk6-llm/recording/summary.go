package recording

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// ClassUnknown counts failed results whose Class is empty or not one of
// ErrorClasses: an engine bug made visible rather than dropped.
const ClassUnknown ErrorClass = "unknown"

// numClassSlots is len(ErrorClasses) plus one slot for ClassUnknown.
const numClassSlots = 19

// classSlot maps an error class to its counter slot: its place in
// ErrorClasses, or the last slot for any other class.
func classSlot(c ErrorClass) int {
	for i, k := range ErrorClasses {
		if k == c {
			return i
		}
	}
	return numClassSlots - 1
}

// slotClass is the inverse of classSlot.
func slotClass(i int) ErrorClass {
	if i >= 0 && i < len(ErrorClasses) {
		return ErrorClasses[i]
	}
	return ClassUnknown
}

// Counts are the counters kept per tag tuple and per second. Rates derive
// from them, so any subset of tuples or seconds can be summed with Add and
// its rates computed afterwards.
type Counts struct {
	OK        int64
	Failed    int64 // includes results with an unknown Outcome
	Cancelled int64
	Dropped   int64

	byClass [numClassSlots]int64 // failed and cancelled results by ErrorClass

	// Integrity counts failed results of an integrity class
	// (IntegrityClasses): answers whose stream was corrupted.
	Integrity int64

	Truncated      int64 // finish_reason == "length", unless ignore_eos asked for it
	Rejected       int64 // HTTP 400, 413 or 422
	Throttled      int64 // HTTP 429
	EmptyOutput    int64 // ok with no content characters
	UsageReported  int64 // results whose final chunk carried usage
	UsageDiffers   int64 // usage reported and completion_tokens != content chunks, by any amount (information)
	UsageMismatch  int64 // usage reported and completion_tokens beyond UsageMismatch's tolerance of the content chunks
	NgramsTotal    int64
	NgramsRepeated int64
	Good           int64 // ok requests that met every SLO given (0 when none given)
	InputTokens    int64 // sum over ok requests (usage, else the client's estimate)
	OutputTokens   int64 // sum over ok requests (usage, else content chunks)
	// Reconnects counts requests sent again on a fresh connection after
	// the server closed a reused keep-alive one under them (not errors).
	Reconnects int64
	// StreamedTokens counts output tokens by event time: each content
	// chunk in the second it arrived, whatever its request's outcome
	// (a request still running, or one that fails later, counts its
	// chunks), plus, for an ok request whose usage reports a count other
	// than its chunks (or a non-streamed answer), the difference in the
	// second it ended. Over a whole run it is OutputTokens plus the chunks
	// of requests that did not end ok. Live windows and the per-second
	// series read output tokens from it (output_tokens_per_s is by event
	// time there); OutputTokens stays the ok requests' count at their end.
	StreamedTokens int64
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.OK += o.OK
	c.Failed += o.Failed
	c.Cancelled += o.Cancelled
	c.Dropped += o.Dropped
	for i := range c.byClass {
		c.byClass[i] += o.byClass[i]
	}
	c.Integrity += o.Integrity
	c.Truncated += o.Truncated
	c.Rejected += o.Rejected
	c.Throttled += o.Throttled
	c.EmptyOutput += o.EmptyOutput
	c.UsageReported += o.UsageReported
	c.UsageDiffers += o.UsageDiffers
	c.UsageMismatch += o.UsageMismatch
	c.NgramsTotal += o.NgramsTotal
	c.NgramsRepeated += o.NgramsRepeated
	c.Good += o.Good
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.Reconnects += o.Reconnects
	c.StreamedTokens += o.StreamedTokens
}

// Class returns how many failed or cancelled results had class cl.
func (c *Counts) Class(cl ErrorClass) int64 { return c.byClass[classSlot(cl)] }

// AddClass adds n results of class cl (used to rebuild counts from a report).
// An integrity class also counts in Integrity.
func (c *Counts) AddClass(cl ErrorClass, n int64) {
	c.byClass[classSlot(cl)] += n
	if IsIntegrity(cl) {
		c.Integrity += n
	}
}

// ErrorsByClass returns the non-zero class counters keyed by class name.
func (c *Counts) ErrorsByClass() map[string]int64 {
	m := make(map[string]int64)
	for i, n := range c.byClass {
		if n != 0 {
			m[string(slotClass(i))] = n
		}
	}
	return m
}

// addResult counts one result. good says whether it met every SLO;
// lengthAsked that the run asked for max_tokens (ignore_eos), so that
// finish_reason length is no truncation.
func (c *Counts) addResult(res *Result, good, lengthAsked bool) {
	switch res.Outcome {
	case OutcomeOK:
		c.OK++
	case OutcomeCancelled:
		c.Cancelled++
		cl := res.Class
		if cl == ClassNone {
			cl = ClassCancelled
		}
		c.byClass[classSlot(cl)]++
	case OutcomeDropped:
		c.Dropped++
	default: // OutcomeFailed, or an engine bug (unknown outcome) made visible
		c.Failed++
		cl := res.Class
		if res.Outcome != OutcomeFailed {
			cl = ClassUnknown
		}
		c.byClass[classSlot(cl)]++
		if IsIntegrity(cl) {
			c.Integrity++
		}
	}
	switch res.HTTPStatus {
	case 400, 413, 422:
		c.Rejected++
	case 429:
		c.Throttled++
	}
	if res.FinishReason == "length" && !lengthAsked {
		c.Truncated++
	}
	if res.UsageReported {
		c.UsageReported++
		if res.OutputTokens != res.ContentChunks {
			c.UsageDiffers++
		}
		if UsageMismatch(res.OutputTokens, res.ContentChunks) {
			c.UsageMismatch++
		}
	}
	c.NgramsTotal += int64(res.NgramsTotal)
	c.NgramsRepeated += int64(res.NgramsRepeated)
	c.Reconnects += int64(res.Reconnects)
	if res.Outcome == OutcomeOK {
		if res.OutputChars == 0 {
			c.EmptyOutput++
		}
		if good {
			c.Good++
		}
		c.InputTokens += int64(inputTokenCount(res))
		c.OutputTokens += int64(res.OutputTokenCount())
	}
}

// UsageMismatch reports whether a request's usage.completion_tokens
// (usageTokens) and the content chunks the client counted (chunks) differ
// by more than the tolerance: more than 2 tokens and more than 5 % of
// usageTokens, |usageTokens − chunks| > max(2, 0.05 × usageTokens).
//
// Smaller differences are normal and only information (Counts.UsageDiffers):
// a server may put two tokens in one chunk, as llama-server does when a
// multi-byte character is split across tokens (one chunk fewer than tokens
// in a few per cent of its requests), or send a chunk without a token. The
// token counts (output_tokens, tpot, throughput) use usage whenever the
// server reported it, so such a difference changes none of them.
func UsageMismatch(usageTokens, chunks int) bool {
	d := math.Abs(float64(usageTokens - chunks))
	return d > math.Max(2, 0.05*float64(usageTokens))
}

// inputTokenCount is usage.prompt_tokens when the server reported it, else
// the client's own estimate of the prompt.
func inputTokenCount(r *Result) int {
	if r.UsageReported && r.InputTokens > 0 {
		return r.InputTokens
	}
	return r.PromptTokensSent
}

// Finished is ok + failed + cancelled: every request that was sent and ended.
func (c *Counts) Finished() int64 { return c.OK + c.Failed + c.Cancelled }

// Scheduled is finished + dropped: every Result recorded.
func (c *Counts) Scheduled() int64 { return c.Finished() + c.Dropped }

func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// ErrorRate is failed / finished (DESIGN §3 error_rate).
func (c *Counts) ErrorRate() float64 { return ratio(c.Failed, c.Finished()) }

// TruncationRate is finish_reason=length / finished.
func (c *Counts) TruncationRate() float64 { return ratio(c.Truncated, c.Finished()) }

// RejectionRate is HTTP 400/413/422 / finished.
func (c *Counts) RejectionRate() float64 { return ratio(c.Rejected, c.Finished()) }

// ThrottleRate is HTTP 429 / finished.
func (c *Counts) ThrottleRate() float64 { return ratio(c.Throttled, c.Finished()) }

// RepetitionRate is repeated n-grams / n-grams, pooled over all outputs.
func (c *Counts) RepetitionRate() float64 { return ratio(c.NgramsRepeated, c.NgramsTotal) }

// EmptyOutputRate is ok requests without content / ok requests.
func (c *Counts) EmptyOutputRate() float64 { return ratio(c.EmptyOutput, c.OK) }

// UsageMismatchRate is usage mismatches beyond the tolerance (see
// UsageMismatch) / results that reported usage.
func (c *Counts) UsageMismatchRate() float64 { return ratio(c.UsageMismatch, c.UsageReported) }

// IntegrityErrorRate is results failed with an integrity class / finished.
func (c *Counts) IntegrityErrorRate() float64 { return ratio(c.Integrity, c.Finished()) }

// CancelRate is cancelled / finished.
func (c *Counts) CancelRate() float64 { return ratio(c.Cancelled, c.Finished()) }

// DropRate is dropped / scheduled.
func (c *Counts) DropRate() float64 { return ratio(c.Dropped, c.Scheduled()) }

// GoodRate is good / finished: the share of requests that met every SLO.
func (c *Counts) GoodRate() float64 { return ratio(c.Good, c.Finished()) }

// Rate returns the rate called name (DESIGN §3 names: error_rate,
// truncation_rate, rejection_rate, throttle_rate, repetition_rate,
// empty_output_rate, usage_mismatch_rate, integrity_error_rate, cancel_rate, drop_rate,
// good_rate); 0 when its denominator is 0.
func (c *Counts) Rate(name string) (float64, error) {
	hits, total, err := c.RateParts(name)
	if err != nil {
		return 0, err
	}
	return ratio(hits, total), nil
}

// RateParts returns the numerator and denominator of the rate called name
// (see Rate), for callers that need both, such as threshold reports.
func (c *Counts) RateParts(name string) (hits, total int64, err error) {
	switch name {
	case "error_rate":
		return c.Failed, c.Finished(), nil
	case "truncation_rate":
		return c.Truncated, c.Finished(), nil
	case "rejection_rate":
		return c.Rejected, c.Finished(), nil
	case "throttle_rate":
		return c.Throttled, c.Finished(), nil
	case "repetition_rate":
		return c.NgramsRepeated, c.NgramsTotal, nil
	case "empty_output_rate":
		return c.EmptyOutput, c.OK, nil
	case "usage_mismatch_rate":
		return c.UsageMismatch, c.UsageReported, nil
	case "integrity_error_rate":
		return c.Integrity, c.Finished(), nil
	case "cancel_rate":
		return c.Cancelled, c.Finished(), nil
	case "drop_rate":
		return c.Dropped, c.Scheduled(), nil
	case "good_rate":
		return c.Good, c.Finished(), nil
	}
	return 0, 0, fmt.Errorf("unknown rate %q", name)
}

// TagFilter selects tag tuples; an empty field matches any value, so the
// zero TagFilter selects the whole run and TagFilter{Phase: "fault"} merges
// every tuple of the fault phase.
// Extra selects by other tags (encoded by ExtraTags): a tuple must carry
// each of its pairs.
type TagFilter struct {
	Phase    string
	Fault    string
	Class    string
	Endpoint string
	Scenario string
	Extra    string
}

// ParseTagFilter builds a filter from tags: phase, fault, class (also
// given as k6's name, recorded as the class), endpoint and scenario select
// their fields, any other key the extra tags a script's samples carry.
func ParseTagFilter(tags map[string]string) (TagFilter, error) {
	var f TagFilter
	extra := map[string]string{}
	for k, v := range tags {
		switch k {
		case "phase":
			f.Phase = v
		case "fault":
			f.Fault = v
		case "class", "name": // k6's name tag is recorded as the class
			f.Class = v
		case "endpoint":
			f.Endpoint = v
		case "scenario":
			f.Scenario = v
		case "":
			return TagFilter{}, errors.New("a tag with an empty key")
		default:
			extra[k] = v
		}
	}
	f.Extra = ExtraTags(extra)
	return f, nil
}

// Match reports whether t is selected by f.
func (f TagFilter) Match(t Tags) bool {
	return (f.Phase == "" || f.Phase == t.Phase) &&
		(f.Fault == "" || f.Fault == t.Fault) &&
		(f.Class == "" || f.Class == t.Class) &&
		(f.Endpoint == "" || f.Endpoint == t.Endpoint) &&
		(f.Scenario == "" || f.Scenario == t.Scenario) &&
		ExtraIncludes(t.Extra, f.Extra)
}

// TupleStats holds everything recorded for one tag tuple: the counters and
// one HDR histogram per metric (nil until a value is recorded).
type TupleStats struct {
	Tags   Tags
	Counts Counts
	Hists  [NumMetrics]*hdrhistogram.Histogram
	// Custom holds the samples of custom metrics by name (nil when none).
	Custom map[string]*metrics.Sink
}

func (t *TupleStats) clone() *TupleStats {
	c := &TupleStats{Tags: t.Tags, Counts: t.Counts}
	if t.Custom != nil {
		c.Custom = make(map[string]*metrics.Sink, len(t.Custom))
		for n, s := range t.Custom {
			c.Custom[n] = s.Clone()
		}
	}
	for m, h := range t.Hists {
		if h != nil {
			c.Hists[m] = h.Clone()
		}
	}
	return c
}

func compareTags(a, b Tags) int {
	return cmp.Or(cmp.Compare(a.Phase, b.Phase), cmp.Compare(a.Fault, b.Fault),
		cmp.Compare(a.Class, b.Class), cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.Scenario, b.Scenario),
		cmp.Compare(a.Extra, b.Extra))
}

// countsOf sums the counters of the tuples f selects.
func countsOf(ts []*TupleStats, f TagFilter) Counts {
	var c Counts
	for _, t := range ts {
		if f.Match(t.Tags) {
			c.Add(t.Counts)
		}
	}
	return c
}

// histogramOf merges metric m of the tuples f selects into a new histogram.
func histogramOf(ts []*TupleStats, m Metric, f TagFilter) *hdrhistogram.Histogram {
	h := NewHistogram(m)
	for _, t := range ts {
		if f.Match(t.Tags) && t.Hists[m] != nil {
			h.Merge(t.Hists[m])
		}
	}
	return h
}

// Requests is the run's request accounting (JSON report "requests").
type Requests struct {
	Scheduled int64 // Results recorded: ok + failed + cancelled + dropped
	Sent      int64 // RequestStarted calls
	OK        int64
	Failed    int64
	Cancelled int64
	Dropped   int64
	// Lost is sent − (ok + failed + cancelled): requests that left the
	// schedule and never came back as a Result. Must be 0.
	Lost          int64
	ErrorsByClass map[string]int64
	// Reconnects counts requests sent again on a fresh connection after
	// the server closed a reused keep-alive one (per endpoint: Counts of
	// the endpoint's tuples).
	Reconnects int64
}

// Throughput is the run-level throughput: ok requests and their tokens per
// second of run, and goodput (requests that met every SLO per second).
type Throughput struct {
	RequestsPerS     float64
	InputTokensPerS  float64
	OutputTokensPerS float64
	TotalTokensPerS  float64
	GoodputPerS      float64
}

// Concurrency is in-flight requests over the run: the maximum and the
// time-weighted mean.
type Concurrency struct {
	Max  int64
	Mean float64
}

// Summary is a finished (or loaded) run: accounting, per-tuple counters and
// HDR histograms, and the 1-second time series. It is a snapshot: recording
// more results into the Recorder does not change it. Safe for concurrent
// reads.
type Summary struct {
	Duration    time.Duration
	Sent        int64
	SLO         SLO
	Concurrency Concurrency
	Tuples      []*TupleStats // sorted by tags
	Series      *Series
	// Metrics is the run's metric table, with its custom metrics; nil when
	// the run had none.
	Metrics *metrics.Registry
	// TopErrors holds, per error class, the most frequent error text of the
	// failed results (nil when none failed with a text).
	TopErrors map[ErrorClass]TopError
}

// TopError is an error text and how many failed results carried it.
type TopError struct {
	Message string
	Count   int64
}

// Custom merges the samples of custom metric name over the tuples f
// selects; nil when there are none.
func (s *Summary) Custom(name string, f TagFilter) *metrics.Sink {
	var out *metrics.Sink
	for _, t := range s.Tuples {
		c := t.Custom[name]
		if c == nil || !f.Match(t.Tags) {
			continue
		}
		if out == nil {
			out = metrics.NewSink(c.Kind)
		}
		out.Merge(c)
	}
	return out
}

// Counts sums the counters of the tuples f selects.
func (s *Summary) Counts(f TagFilter) Counts { return countsOf(s.Tuples, f) }

// Histogram returns a new histogram merging metric m over the tuples f
// selects (µs for latencies, tokens for token counts). Never nil.
func (s *Summary) Histogram(m Metric, f TagFilter) *hdrhistogram.Histogram {
	return histogramOf(s.Tuples, m, f)
}

// Distribution summarises metric m over the tuples f selects.
func (s *Summary) Distribution(m Metric, f TagFilter) Distribution {
	return Summarize(s.Histogram(m, f))
}

// Window aggregates the seconds [from, to) of the time series; see
// Series.Window.
func (s *Summary) Window(from, to time.Duration) *WindowStats { return s.Series.Window(from, to) }

// Requests returns the run's request accounting.
func (s *Summary) Requests() Requests {
	c := s.Counts(TagFilter{})
	return Requests{
		Scheduled:     c.Scheduled(),
		Sent:          s.Sent,
		OK:            c.OK,
		Failed:        c.Failed,
		Cancelled:     c.Cancelled,
		Dropped:       c.Dropped,
		Lost:          s.Sent - c.Finished(),
		ErrorsByClass: c.ErrorsByClass(),
		Reconnects:    c.Reconnects,
	}
}

// Throughput returns rates over the whole run duration; zero for a zero
// duration.
func (s *Summary) Throughput() Throughput {
	c := s.Counts(TagFilter{})
	d := s.Duration.Seconds()
	if d <= 0 {
		return Throughput{}
	}
	return Throughput{
		RequestsPerS:     float64(c.OK) / d,
		InputTokensPerS:  float64(c.InputTokens) / d,
		OutputTokensPerS: float64(c.OutputTokens) / d,
		TotalTokensPerS:  float64(c.InputTokens+c.OutputTokens) / d,
		GoodputPerS:      float64(c.Good) / d,
	}
}

// sortTuples orders tuples by tags so reports are deterministic.
func sortTuples(ts []*TupleStats) {
	slices.SortFunc(ts, func(a, b *TupleStats) int { return compareTags(a.Tags, b.Tags) })
}

// NewSummary assembles a Summary from parts, e.g. when loading a saved run.
// Tuples are sorted; a nil series is replaced by an empty one.
func NewSummary(duration time.Duration, sent int64, slo SLO, conc Concurrency, tuples []*TupleStats, series *Series) *Summary {
	sortTuples(tuples)
	if series == nil {
		series = newSeries(false)
		series.end = duration
	}
	return &Summary{Duration: duration, Sent: sent, SLO: slo, Concurrency: conc, Tuples: tuples, Series: series}
}
