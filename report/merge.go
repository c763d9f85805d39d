package report

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// MergedRun identifies one of the runs a merged document was made of.
type MergedRun struct {
	Name        string    `json:"name,omitempty"`
	ToolVersion string    `json:"tool_version,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	DurationS   float64   `json:"duration_s"`
	Seed        int64     `json:"seed"`
	Verdict     string    `json:"verdict,omitempty"`
	// Shard is the run's part of a sharded load (absent for a whole run).
	Shard *Shard `json:"shard,omitempty"`
}

// Merge combines runs into one document, the basis of sharded load: several
// load generators drive one target at the same time, each saves its run,
// and the merged report describes the whole load.
//
// The runs are taken to be concurrent shards that started together:
//
//   - HDR histograms of the same metric and tag tuple add up bucket by
//     bucket (exactly: every histogram has the same geometry), and so do
//     counters and the sent count; every distribution, rate and count of
//     the merged run is therefore that of all requests together.
//   - the duration is the longest run's, so per-second throughput is the
//     sum of the shards' over the time the load lasted.
//   - the time series is aligned by second offset from each run's start:
//     row t adds every run's row t (counters add, per-second histograms
//     merge, in-flight means add as concurrent loads do). Runs that did not
//     start together are still merged this way; their time series then
//     describes no real second.
//   - in-flight maximum: per second, the sum of the runs' maxima, and the
//     run's maximum the largest of those: an upper bound, since the shards'
//     peaks need not coincide within the second. The mean is exact.
//   - started_at is the earliest start; name, seed, tool version and
//     configuration are the first run's, and merged_from lists every run
//     (with its shard, for the shards of a split load: CheckShards checks
//     that they are one set). The merged run is no shard.
//   - custom metrics: each run's are registered in the merged run's table
//     (a name must have the same kind and unit in every run); per tag tuple
//     a trend's histograms add up, a rate's passes and totals and a
//     counter's sums add, and a gauge keeps the last value of the run that
//     ended last (start + duration; the later argument on a tie) among
//     those that recorded it: gauges of concurrent shards have no common
//     clock finer than that.
//   - the thresholds the runs recorded (each distinct expression once) are
//     evaluated again on the merged run; the verdict is "aborted" when any
//     run was aborted, and abort is the first aborted run's cause.
//   - requests.top_errors keeps, per error class, of the runs' own most
//     frequent messages the one with the largest count, counts of the same
//     message adding over the runs (a run records only its top message per
//     class, so this is exact when the shards agree on it); on a tie the
//     earlier run's.
//   - client_saturated is true when any run's client was saturated (its
//     reason, prefixed "run N: ", is the first such run's) or the merged
//     figures say so.
//
// Runs must share their goodput SLO (else their good counts do not add up)
// and must come from Build, Read or Merge.
func Merge(docs ...*Document) (*Document, error) {
	if len(docs) == 0 {
		return nil, errors.New("merge: no runs")
	}
	var (
		slo       = docs[0].slo()
		sent      int64
		dur       time.Duration
		started   time.Time
		aborted   bool
		area      float64 // ∫ in-flight over the runs, in requests·seconds
		tuples    = map[recording.Tags]*recording.TupleStats{}
		order     []*recording.TupleStats
		ths       []assertions.Threshold
		seenTh    = map[string]bool{}
		merged    = make([]MergedRun, 0, len(docs))
		maxSecond int
		abort     *Abort
		reg       *metrics.Registry
		topErrs   = map[string]map[string]int64{} // class → message → count
		saturated string
	)
	for i, d := range docs {
		if d.run == nil {
			return nil, fmt.Errorf("merge: run %d has no recorded data (not built or read)", i+1)
		}
		if d.slo() != slo {
			return nil, fmt.Errorf("merge: run %d has goodput SLO %s, run 1 has %s: good requests would not add up",
				i+1, sloString(d.slo()), sloString(slo))
		}
		sum := d.run
		sent += sum.Sent
		dur = max(dur, sum.Duration)
		if started.IsZero() || (!d.StartedAt.IsZero() && d.StartedAt.Before(started)) {
			started = d.StartedAt
		}
		aborted = aborted || d.Aborted()
		if abort == nil && d.Aborted() && d.Abort != nil {
			a := *d.Abort
			abort = &a
		}
		if saturated == "" && d.ClientSaturated {
			saturated = fmt.Sprintf("run %d: %s", i+1, d.ClientSaturatedReason)
		}
		for cl, e := range d.Requests.TopErrors {
			if topErrs[cl] == nil {
				topErrs[cl] = map[string]int64{}
			}
			topErrs[cl][e.Message] += e.Count
		}
		var err error
		if reg, err = mergeRegistry(reg, sum.Metrics); err != nil {
			return nil, fmt.Errorf("merge: run %d: %w", i+1, err)
		}
		area += sum.Concurrency.Mean * sum.Duration.Seconds()
		maxSecond = max(maxSecond, sum.Series.Len())
		for _, t := range sum.Tuples {
			m := tuples[t.Tags]
			if m == nil {
				m = &recording.TupleStats{Tags: t.Tags}
				tuples[t.Tags] = m
				order = append(order, m)
			}
			m.Counts.Add(t.Counts)
			for k, h := range t.Hists {
				if h == nil {
					continue
				}
				if m.Hists[k] == nil {
					m.Hists[k] = recording.NewHistogram(recording.Metric(k))
				}
				if dropped := m.Hists[k].Merge(h); dropped != 0 {
					return nil, fmt.Errorf("merge: run %d: %s histogram: %d values out of range", i+1, recording.Metric(k), dropped)
				}
			}
		}
		saved, err := d.SavedThresholds()
		if err != nil {
			return nil, fmt.Errorf("merge: run %d: saved threshold: %w", i+1, err)
		}
		for _, th := range saved {
			if k := th.String(); !seenTh[k] {
				seenTh[k] = true
				ths = append(ths, th)
			}
		}
		merged = append(merged, MergedRun{
			Name: d.Name, ToolVersion: d.ToolVersion, StartedAt: d.StartedAt,
			DurationS: d.DurationS, Seed: d.Seed, Shard: d.Shard, Verdict: d.Verdict,
		})
	}
	mergeCustom(docs, tuples)
	rows, peak, err := mergeSeries(docs, maxSecond, dur)
	if err != nil {
		return nil, err
	}
	series, err := recording.NewSeries(rows, dur)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	conc := recording.Concurrency{Max: peak}
	for _, d := range docs {
		conc.Max = max(conc.Max, d.run.Concurrency.Max)
	}
	if dur > 0 {
		conc.Mean = area / dur.Seconds()
	}
	sum := recording.NewSummary(dur, sent, slo, conc, order, series)
	sum.Metrics = reg
	first := docs[0]
	out, err := Build(Meta{ToolVersion: first.ToolVersion, Name: first.Name, StartedAt: started, Seed: first.Seed, Config: first.Config}, sum)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	out.MergedFrom = merged
	out.Requests.TopErrors = mergeTopErrors(docs, topErrs)
	if saturated != "" && !out.ClientSaturated {
		out.ClientSaturated, out.ClientSaturatedReason = true, saturated
	}
	out.Evaluate(ths, aborted)
	if abort != nil {
		out.SetAbort(abort)
	}
	return out, nil
}

// mergeRegistry adds the custom metrics of a run's table to the merged
// table (nil until a run has custom metrics).
func mergeRegistry(into, from *metrics.Registry) (*metrics.Registry, error) {
	for _, m := range from.Custom() {
		if into == nil {
			into = metrics.NewRegistry()
		}
		if _, err := into.Register(m.Name, m.Kind, m.Unit); err != nil {
			return nil, fmt.Errorf("custom metric: %w", err)
		}
	}
	return into, nil
}

// mergeCustom adds the runs' custom metric samples into the merged tuples.
// The runs are taken in order of their end (start + duration, stable), and
// each run's gauge sequence numbers are shifted past the previous runs', so
// that a gauge keeps the value of the run that ended last.
func mergeCustom(docs []*Document, tuples map[recording.Tags]*recording.TupleStats) {
	idx := make([]int, len(docs))
	for i := range idx {
		idx[i] = i
	}
	end := func(d *Document) time.Time { return d.StartedAt.Add(d.run.Duration) }
	slices.SortStableFunc(idx, func(a, b int) int { return end(docs[a]).Compare(end(docs[b])) })
	var base uint64
	for _, i := range idx {
		var top uint64
		for _, t := range docs[i].run.Tuples {
			m := tuples[t.Tags]
			for name, s := range t.Custom {
				if m.Custom == nil {
					m.Custom = map[string]*metrics.Sink{}
				}
				if m.Custom[name] == nil {
					m.Custom[name] = metrics.NewSink(s.Kind)
				}
				c := s.Clone()
				c.Seq += base
				top = max(top, c.Seq)
				m.Custom[name].Merge(c)
			}
		}
		base = top + 1
	}
}

// mergeTopErrors picks, per class, the most frequent message of the runs
// together; on a tie the one the earliest run reported.
func mergeTopErrors(docs []*Document, counts map[string]map[string]int64) map[string]TopError {
	if len(counts) == 0 {
		return nil
	}
	out := make(map[string]TopError, len(counts))
	for _, d := range docs {
		for cl, e := range d.Requests.TopErrors {
			if n := counts[cl][e.Message]; n > out[cl].Count {
				out[cl] = TopError{Message: e.Message, Count: n}
			}
		}
	}
	return out
}

// slo returns the run's goodput objectives.
func (d *Document) slo() recording.SLO {
	if d.run != nil {
		return d.run.SLO
	}
	return recording.SLO{}
}

func sloString(s recording.SLO) string {
	if !s.Given() {
		return "(none)"
	}
	return assertions.FormatGoodput(s)
}

// mergeSeries adds the runs' time series row by row (second offset from
// each run's start). It returns the rows and the largest per-second sum of
// in-flight maxima.
func mergeSeries(docs []*Document, n int, dur time.Duration) ([]recording.SecondStats, int64, error) {
	rows := make([]recording.SecondStats, 0, n)
	var (
		hist hist4
		buf  []byte
		peak int64
	)
	for sec := range n {
		row := recording.SecondStats{Second: sec}
		var area float64 // in-flight·seconds within this second
		hist.reset()
		for i, d := range docs {
			s := d.run.Series
			if sec >= s.Len() {
				continue
			}
			st := s.Second(sec)
			row.Counts.Add(st.Counts)
			row.InFlightMax += st.InFlightMax
			area += st.InFlightMean * covered(s.End(), sec).Seconds()
			if err := hist.add(st.Hist); err != nil {
				return nil, 0, fmt.Errorf("merge: run %d: second %d: %w", i+1, sec, err)
			}
		}
		if cov := covered(dur, sec); cov > 0 {
			row.InFlightMean = area / cov.Seconds()
		}
		row.Hist, buf = hist.encode(buf)
		peak = max(peak, row.InFlightMax)
		rows = append(rows, row)
	}
	return rows, peak, nil
}

// covered is how much of second sec lies before end.
func covered(end time.Duration, sec int) time.Duration {
	return min(max(end-time.Duration(sec)*time.Second, 0), time.Second)
}

// hist4 is the dense form of one second's packed histograms (ttft, e2e,
// itl, tpot; SCHEMA.md "Per-second histogram packing"), for adding seconds.
type hist4 struct {
	counts [4][recording.LogBuckets]uint64
	any    bool
}

// packVersion is the first byte of a packed second.
const packVersion = 1

func (h *hist4) reset() {
	if h.any {
		*h = hist4{}
	}
}

var errPacked = errors.New("malformed per-second histogram")

// add decodes a packed second into h.
func (h *hist4) add(enc []byte) error {
	if len(enc) == 0 {
		return nil
	}
	if enc[0] != packVersion {
		return fmt.Errorf("%w: version %d", errPacked, enc[0])
	}
	p := enc[1:]
	next := func() (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, fmt.Errorf("%w: truncated", errPacked)
		}
		p = p[n:]
		return v, nil
	}
	for slot := range h.counts {
		n, err := next()
		if err != nil {
			return err
		}
		idx := -1
		for range n {
			delta, err := next()
			if err != nil {
				return err
			}
			c, err := next()
			if err != nil {
				return err
			}
			if delta >= recording.LogBuckets || idx+int(delta)+1 >= recording.LogBuckets {
				return fmt.Errorf("%w: bucket out of range", errPacked)
			}
			idx += int(delta) + 1
			h.counts[slot][idx] += c
			h.any = true
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errPacked, len(p))
	}
	return nil
}

// encode packs h; nil when it holds nothing. buf is scratch space, returned
// grown for reuse; the packed slice is new.
func (h *hist4) encode(buf []byte) (packed, scratch []byte) {
	if !h.any {
		return nil, buf
	}
	buf = append(buf[:0], packVersion)
	for slot := range h.counts {
		n := 0
		for _, c := range h.counts[slot] {
			if c != 0 {
				n++
			}
		}
		buf = binary.AppendUvarint(buf, uint64(n))
		prev := -1
		for i, c := range h.counts[slot] {
			if c == 0 {
				continue
			}
			buf = binary.AppendUvarint(buf, uint64(i-prev-1))
			buf = binary.AppendUvarint(buf, c)
			prev = i
		}
	}
	return append([]byte(nil), buf...), buf
}
