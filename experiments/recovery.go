package experiments

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// DefaultRecoveryThreshold is what "healthy" means for recovery_time when
// the experiment's steady state has no threshold probe.
const DefaultRecoveryThreshold = "error_rate: rate<0.01"

// InstantaneousFault reports whether a fault of type typ acts in one
// instant (replica.kill, replica.stop, replica.restart: its family's
// descriptor says faults.Instantaneous): its recovery_time runs from the
// injection, without waiting for its revert (which only waits for the owner
// to bring the target back), so that the duration the experiment gave it
// does not count. Every other type is sustained: it acts until its revert,
// and its recovery is also measured from there (time_to_recover).
func InstantaneousFault(typ string) bool {
	t, ok := spec.FaultTypes()[typ]
	return ok && t.Lifetime == faults.Instantaneous
}

// Recovery criteria named in a report's held_last, besides the
// steady-state thresholds (named by their metric and tags, "error_rate").
const (
	CriterionTTFTP99 = "ttft p99"
	CriterionE2EP99  = "e2e p99"
)

// latencyBandSlack is the least a latency bound of the band lies above the
// baseline: the band of a target answering in a millisecond or two would
// otherwise count scheduling jitter as unhealthy.
const latencyBandSlack = 50 * time.Millisecond

// windowFunc returns the aggregate of the recorded seconds that overlap
// [from, to): Recorder.Window while the run goes on, Summary.Window after.
type windowFunc func(from, to time.Duration) *recording.WindowStats

// recoveryJudge decides from a run's 1-second series when the service is
// healthy again (DESIGN §3 recovery_time). The window of Window seconds
// ending at a whole second is healthy when every steady-state threshold
// holds over it and, once the baseline is known (withBaseline), its TTFT
// and E2E p99 are within the latency band of the baseline's; a window in
// which no request finished is quiet: it is no evidence either way and is
// skipped, and so is one in which fewer than minRequests finished
// (recovery.min_requests: too few for its p99 to be more than its slowest
// request). The service has recovered at T when the window ending at T is
// healthy and healthy windows go on, with no unhealthy one between, to one
// ending at T+Hold or later.
type recoveryJudge struct {
	ths    []assertions.Threshold
	window time.Duration
	hold   time.Duration
	// within holds the tags every result of a window carries (its request
	// class, when the workload has one), so that thresholds selecting it
	// are answered.
	within assertions.Tags
	slo    recording.SLO
	// minRequests is recovery.min_requests: a window in which fewer
	// requests finished is quiet (0 or 1: any finished request counts).
	minRequests int
	// band is recovery.latency_band: a window's TTFT and E2E p99 must be at
	// most band times the baseline's (0: no latency criteria).
	band float64
	// latency are the latency criteria, from withBaseline.
	latency []latencyCriterion
}

// latencyCriterion is one latency bound of the band: th over a window
// must hold, unless the window has no data for it.
type latencyCriterion struct {
	name string
	th   assertions.Threshold
}

// withBaseline returns j with its latency criteria set from the baseline
// window base (the load before the first fault): TTFT and E2E p99 at most
// band times the baseline's p99, and never tighter than latencyBandSlack
// above it. A metric the baseline has no data for gets no criterion.
func (j recoveryJudge) withBaseline(base *recording.WindowStats) recoveryJudge {
	j.latency = nil
	if j.band <= 0 || base == nil {
		return j
	}
	src := assertions.WindowSource{Window: base, Within: j.within, SLO: j.slo}
	for _, c := range []struct{ metric, name string }{{"ttft", CriterionTTFTP99}, {"e2e", CriterionE2EP99}} {
		d := src.Distribution(c.metric, j.within)
		if d == nil || d.Count() == 0 {
			continue
		}
		p99 := d.Quantile(99)
		bound := max(p99*j.band, p99+msOf(latencyBandSlack))
		ths, err := assertions.Parse(fmt.Sprintf("%s: p(99)<=%.3fms", c.metric, bound))
		if err != nil || len(ths) != 1 {
			continue // cannot happen: the expression is well formed
		}
		j.latency = append(j.latency, latencyCriterion{name: c.name, th: ths[0]})
	}
	return j
}

// windowVerdict is what the judge made of one window: quiet (no finished
// request), or the criteria that did not hold (none: healthy).
type windowVerdict struct {
	quiet  bool
	failed []string
}

// judgeWindow judges the window ending at e.
func (j recoveryJudge) judgeWindow(w windowFunc, e time.Duration) windowVerdict {
	ws := w(e-j.window, e)
	if ws == nil || ws.Counts.Finished() == 0 || ws.Counts.Finished() < int64(j.minRequests) {
		return windowVerdict{quiet: true}
	}
	src := assertions.WindowSource{Window: ws, Within: j.within, SLO: j.slo}
	var v windowVerdict
	for _, o := range assertions.Evaluate(src, j.ths) {
		if !o.OK {
			v.failed = appendOnce(v.failed, o.Metric+o.Tags.String())
		}
	}
	for _, c := range j.latency {
		if o := assertions.Evaluate(src, []assertions.Threshold{c.th})[0]; !o.OK && !o.NoData {
			v.failed = appendOnce(v.failed, c.name)
		}
	}
	return v
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// recoveredAt returns the moment of recovery of a search that starts at
// from and judges windows ending up to end; ok is false when there is none.
func (j recoveryJudge) recoveredAt(w windowFunc, from, end time.Duration) (time.Duration, bool) {
	sc := newRecoveryScan(from)
	return j.advance(w, &sc, end)
}

// recoveryScan is a search for the moment of recovery that goes on as the
// run does: each window is judged once, however often the live check
// looks.
type recoveryScan struct {
	from time.Duration // windows end at whole seconds after this
	next time.Duration // the end of the next window to judge
	// inRun says that the windows since start were healthy or quiet, the
	// one ending at start healthy.
	inRun bool
	start time.Duration
	// judged says that some window had traffic; last is the end of the
	// last window judged (quiet or not).
	judged bool
	last   time.Duration
	// lastFail is, per criterion, the end of the last window it failed.
	lastFail map[string]time.Duration
	order    []string // the criteria of lastFail, as first seen
}

// newRecoveryScan starts a search at from: the first window judged is the
// one ending at the first whole second after from, so that it holds some
// of the time after from.
func newRecoveryScan(from time.Duration) recoveryScan {
	return recoveryScan{from: from, next: from.Truncate(time.Second) + time.Second}
}

// advance judges the windows of sc up to those ending at end and returns
// the moment of recovery once there is one.
func (j recoveryJudge) advance(w windowFunc, sc *recoveryScan, end time.Duration) (time.Duration, bool) {
	hold := j.hold.Truncate(time.Second)
	for ; sc.next <= end; sc.next += time.Second {
		e := sc.next
		v := j.judgeWindow(w, e)
		sc.last = e
		if v.quiet {
			continue // no evidence: neither breaks nor makes a run
		}
		sc.judged = true
		if len(v.failed) > 0 {
			sc.inRun = false
			if sc.lastFail == nil {
				sc.lastFail = map[string]time.Duration{}
			}
			for _, c := range v.failed {
				if _, ok := sc.lastFail[c]; !ok {
					sc.order = append(sc.order, c)
				}
				sc.lastFail[c] = e
			}
			continue
		}
		if !sc.inRun {
			sc.inRun, sc.start = true, e
		}
		if e-sc.start >= hold {
			sc.next += time.Second
			return sc.start, true
		}
	}
	return 0, false
}

// heldLast names the criterion that was the last to hold: the one that
// failed in the latest window before the recovery; "" when none failed.
func (sc *recoveryScan) heldLast() string {
	best, at := "", time.Duration(-1)
	for _, c := range sc.order {
		if t := sc.lastFail[c]; t > at {
			best, at = c, t
		}
	}
	return best
}

// insufficient reports, for a search that found no recovery, whether only
// a lack of traffic kept it from judging: no window had traffic, or the
// healthy run going on would have lasted the hold had its quiet windows
// counted.
func (j recoveryJudge) insufficient(sc *recoveryScan) bool {
	return !sc.judged || (sc.inRun && sc.last-sc.start >= j.hold.Truncate(time.Second))
}

// ceilSecond rounds d up to a whole second.
func ceilSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		return d - r + time.Second
	}
	return d
}

// faultRecovery is recovery_time{fault:NAME} of one fault.
type faultRecovery struct {
	fault     string
	recovered bool
	// instantaneous says the fault is InstantaneousFault: its recovery is
	// searched from its injection, and it has no time_to_recover.
	instantaneous bool
	// time is from the fault's injection to recovery; meaningful when
	// recovered.
	time time.Duration
	// sinceRevert is time_to_recover, from a sustained fault's revert to
	// recovery (0 when it recovered by the revert's first window);
	// meaningful when recovered and not instantaneous.
	sinceRevert time.Duration
	// heldLast names the recovery criterion that held last, when
	// recovered: "error_rate", "ttft p99", "e2e p99"; "" when every one
	// held from the first window.
	heldLast string
	// insufficient says that recovery could not be judged for lack of
	// traffic (then recovered is false).
	insufficient bool
	// cutBy names the fault that ended the search before recovery was
	// found: one still injected when this one was reverted, or the next
	// one injected after its revert.
	cutBy string
	// at is the moment of recovery on the run clock; meaningful when
	// recovered.
	at time.Duration
	// oom is the time from a replica's out-of-memory exit to its serving
	// again, during or after this fault; ok false when none was seen.
	oom   time.Duration
	oomOK bool
}

// experimentSource is the assertions.Source of an experiment's run: the
// recorded run's SummarySource, plus the metrics the runner computes:
// recovery_time, time_to_recover (sustained faults) and oom_recovery_time
// per fault, in milliseconds. A fault that never recovered counts as +Inf,
// so that any bound on it fails; one whose recovery could not be judged
// for lack of traffic has no value.
//
// With consistency probes it also answers output_consistency,
// output_divergence_at and output_distinct_answers, and every other metric
// of a selection with class:probe from the probes' own recording (probes
// are kept out of the load's figures).
type experimentSource struct {
	*assertions.SummarySource
	recovery []faultRecovery
	// consistency compares the probes' answers and probes is their
	// recording; both nil without probes.
	consistency *consistency
	probes      *assertions.SummarySource
}

var _ assertions.Source = experimentSource{}

// probeSelection reports whether sel selects the probes' own figures.
func (s experimentSource) probeSelection(sel assertions.Tags) bool {
	return s.probes != nil && sel.Class == spec.ProbeClass
}

// Ratio implements assertions.Source.
func (s experimentSource) Ratio(metric string, sel assertions.Tags) (hits, total int64) {
	switch {
	case metric == "output_consistency":
		if s.consistency == nil {
			return 0, 0
		}
		return s.consistency.ratio(sel)
	case s.probeSelection(sel):
		return s.probes.Ratio(metric, sel)
	}
	return s.SummarySource.Ratio(metric, sel)
}

// Counter implements assertions.Source.
func (s experimentSource) Counter(metric string, sel assertions.Tags) (int64, time.Duration) {
	if s.probeSelection(sel) {
		return s.probes.Counter(metric, sel)
	}
	return s.SummarySource.Counter(metric, sel)
}

// Value implements assertions.Source.
func (s experimentSource) Value(metric string, sel assertions.Tags) (float64, bool) {
	if s.probeSelection(sel) {
		return s.probes.Value(metric, sel)
	}
	return s.SummarySource.Value(metric, sel)
}

// Distribution implements assertions.Source.
func (s experimentSource) Distribution(metric string, sel assertions.Tags) assertions.Distribution {
	switch metric {
	case "recovery_time", "oom_recovery_time", "time_to_recover":
	case "output_divergence_at", "output_distinct_answers":
		if s.consistency == nil {
			return nil
		}
		return s.consistency.distribution(metric, sel)
	default:
		if s.probeSelection(sel) {
			return s.probes.Distribution(metric, sel)
		}
		return s.SummarySource.Distribution(metric, sel)
	}
	if sel.Phase != "" || sel.Class != "" || sel.Endpoint != "" {
		return nil // per fault only
	}
	var vs valuesDist
	for _, r := range s.recovery {
		if sel.Fault != "" && sel.Fault != r.fault {
			continue
		}
		switch {
		case metric == "oom_recovery_time" && r.oomOK:
			vs = append(vs, msOf(r.oom))
		case metric == "oom_recovery_time":
		case metric == "time_to_recover" && r.instantaneous:
		case r.insufficient:
		case r.recovered && metric == "time_to_recover":
			vs = append(vs, msOf(r.sinceRevert))
		case r.recovered:
			vs = append(vs, msOf(r.time))
		default:
			vs = append(vs, math.Inf(1))
		}
	}
	if len(vs) == 0 {
		return nil
	}
	slices.Sort(vs)
	return vs
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// valuesDist is a Distribution over a few exact values, sorted.
type valuesDist []float64

var _ assertions.Distribution = valuesDist(nil)

// Count implements assertions.Distribution.
func (v valuesDist) Count() int64 { return int64(len(v)) }

// Mean implements assertions.Distribution.
func (v valuesDist) Mean() float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Min implements assertions.Distribution.
func (v valuesDist) Min() float64 { return v[0] }

// Max implements assertions.Distribution.
func (v valuesDist) Max() float64 { return v[len(v)-1] }

// Quantile implements assertions.Distribution: the nearest-rank value at
// percentile q.
func (v valuesDist) Quantile(q float64) float64 {
	rank := int(math.Ceil(q / 100 * float64(len(v))))
	return v[min(max(rank, 1), len(v))-1]
}

// recoverySearchFrom returns where the search for a fault's recovery
// starts: its injection for an InstantaneousFault, its revert for a
// sustained one; ok is false when the fault was not injected, or a
// sustained one not reverted.
func recoverySearchFrom(rec report.FaultRecord) (time.Duration, bool) {
	switch {
	case rec.InjectedAtS == nil:
		return 0, false
	case InstantaneousFault(rec.Type):
		return durationOf(*rec.InjectedAtS), true
	case rec.RevertedAtS == nil:
		return 0, false
	}
	return durationOf(*rec.RevertedAtS), true
}

// recoverySearchEnd bounds the search for the recovery of fault i of recs,
// which starts at from, to what the live detector sees of it: its own
// recovery phase. The search ends at the first injection of another fault
// after from (or at runEnd); and there is none (end 0) when another fault
// is still in force once fault i is reverted, since the phase after its
// revert is then that fault's. Faults of the timeline planned for the same
// moment and span as fault i act with it and bound nothing. cutBy names the
// fault that bounds the search ("" for the run's end).
func recoverySearchEnd(recs []report.FaultRecord, i int, from, runEnd time.Duration) (end time.Duration, cutBy string) {
	rec := recs[i]
	revert := runEnd
	if rec.RevertedAtS != nil {
		revert = durationOf(*rec.RevertedAtS)
	}
	together := func(o report.FaultRecord) bool {
		return o.By == "" && rec.By == "" && o.PlannedAtS == rec.PlannedAtS && o.PlannedDurationS == rec.PlannedDurationS
	}
	end = runEnd
	for j, o := range recs {
		if j == i || o.InjectedAtS == nil || together(o) {
			continue
		}
		if inj := durationOf(*o.InjectedAtS); inj > from {
			if inj < end {
				end, cutBy = inj, o.Name
			}
			continue
		}
		if o.RevertedAtS == nil || durationOf(*o.RevertedAtS) > revert {
			return 0, o.Name
		}
	}
	return end, cutBy
}

// baselineWindow is the aggregate of the load before the first fault's
// injection, which the latency band is relative to; nil when no fault was
// injected or none was injected after the load began.
func baselineWindow(w windowFunc, recs []report.FaultRecord) *recording.WindowStats {
	first := time.Duration(-1)
	for _, rec := range recs {
		if rec.InjectedAtS != nil && (first < 0 || durationOf(*rec.InjectedAtS) < first) {
			first = durationOf(*rec.InjectedAtS)
		}
	}
	if first <= 0 {
		return nil
	}
	return w(0, first)
}

// heldLastNote is ", X held last" for an event's detail; "" for none.
func heldLastNote(c string) string {
	if c == "" {
		return ""
	}
	return ", " + c + " held last"
}
