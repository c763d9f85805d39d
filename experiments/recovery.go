package experiments

import (
	"math"
	"slices"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	llm "github.com/llmchaos/llmchaos/xk6-llm"
)

// DefaultRecoveryThreshold is what "healthy" means for recovery_time when
// the experiment's steady state has no threshold probe.
const DefaultRecoveryThreshold = "error_rate: rate<0.01"

// windowFunc returns the aggregate of the recorded seconds that overlap
// [from, to): Recorder.Window while the run goes on, Summary.Window after.
type windowFunc func(from, to time.Duration) *llm.WindowStats

// recoveryJudge decides from a run's 1-second series when the service is
// healthy again (DESIGN §3 recovery_time): the window of Window seconds
// ending at a whole second is healthy when it holds at least one finished
// request and every steady-state threshold holds over it; the service has
// recovered at T when the windows ending at T, T+1s, ..., T+Hold are all
// healthy.
type recoveryJudge struct {
	ths    []assertions.Threshold
	window time.Duration
	hold   time.Duration
	// within holds the tags every result of a window carries (its request
	// class, when the workload has one), so that thresholds selecting it
	// are answered.
	within assertions.Tags
	slo    llm.SLO
}

// healthy reports whether the window ending at e holds.
func (j recoveryJudge) healthy(w windowFunc, e time.Duration) bool {
	ws := w(e-j.window, e)
	if ws == nil || ws.Counts.Finished() == 0 {
		return false // no traffic is no evidence of health
	}
	return assertions.Evaluate(assertions.WindowSource{Window: ws, Within: j.within, SLO: j.slo}, j.ths).OK()
}

// recoveredAt returns the first whole second T at or after from such that
// the windows ending at T, T+1s, ..., T+hold are all healthy, with T+hold
// at or before end; ok is false when there is none.
func (j recoveryJudge) recoveredAt(w windowFunc, from, end time.Duration) (time.Duration, bool) {
	sc := newRecoveryScan(from)
	return j.advance(w, &sc, end)
}

// recoveryScan is a search for the moment of recovery that goes on as the
// run does: each window is judged once, however often the live check
// looks.
type recoveryScan struct {
	from time.Duration // the revert: windows end at whole seconds from here
	next time.Duration // the end of the next window to judge
	run  int           // healthy windows in a row before next
}

func newRecoveryScan(from time.Duration) recoveryScan {
	return recoveryScan{from: from, next: ceilSecond(from)}
}

// advance judges the windows of sc up to those ending at end and returns
// the moment of recovery once there is one.
func (j recoveryJudge) advance(w windowFunc, sc *recoveryScan, end time.Duration) (time.Duration, bool) {
	need := int(j.hold/time.Second) + 1
	for ; sc.next <= end; sc.next += time.Second {
		if !j.healthy(w, sc.next) {
			sc.run = 0
			continue
		}
		sc.run++
		if sc.run >= need {
			return sc.next - time.Duration(need-1)*time.Second, true
		}
	}
	return 0, false
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
	// time is from the fault's injection to recovery; meaningful when
	// recovered.
	time time.Duration
	// oom is the time from a replica's out-of-memory exit to its serving
	// again, during or after this fault; ok false when none was seen.
	oom   time.Duration
	oomOK bool
}

// experimentSource is the assertions.Source of an experiment's run: the
// recorded run's SummarySource, plus the metrics the runner computes:
// recovery_time and oom_recovery_time per fault, in milliseconds. A fault
// that never recovered counts as +Inf, so that any bound on it fails.
type experimentSource struct {
	*assertions.SummarySource
	recovery []faultRecovery
}

var _ assertions.Source = experimentSource{}

// Distribution implements assertions.Source.
func (s experimentSource) Distribution(metric string, sel assertions.Tags) assertions.Distribution {
	switch metric {
	case "recovery_time", "oom_recovery_time":
	default:
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
