package capacity

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// latencyMetrics are the latencies every step records for the curves.
var latencyMetrics = []struct {
	name string
	m    recording.Metric
}{{"ttft", recording.MetricTTFT}, {"e2e", recording.MetricE2E}, {"itl", recording.MetricITL}, {"tpot", recording.MetricTPOT}}

// runStep measures the load d asks for as step index (prev are the steps
// before it): one load through the load pipeline, a warm-up whose results
// are set apart by their phase tag, then the measurement window, whose
// requests alone the SLOs are evaluated on. base is the arrival config
// the search checked (Config.validate): the step sets its load and length.
func runStep(ctx context.Context, cfg Config, base workload.ArrivalConfig, d Decision, index int, prev []Step) (Step, error) {
	st := Step{Index: index, Phase: d.Phase, Load: d.Next, Seed: StepSeed(cfg.Seed, index), Needed: cfg.Length.Requests, CPU: -1, ProcessCPU: -1}
	rate := d.Next
	if cfg.Mode == ModeConcurrency {
		rate = estimateRate(prev, d.Next)
	}
	measure, full := cfg.Length.Measure(rate, d.Full)
	st.Full = full
	st.WarmupS, st.MeasureS = cfg.Warmup.Seconds(), measure.Seconds()

	arr, ps := cfg.stepArrival(base, d.Next, cfg.Warmup+measure)
	if err := ps.Err(); err != nil {
		return st, fmt.Errorf("step %d at %s: %w", index+1, FormatLoad(d.Next), err)
	}
	cv := 0.0
	if cfg.Mode == ModeRate {
		st.Expected = d.Next * measure.Seconds()
		cv = arrivalCV(arr)
	}

	warm := cfg.Warmup
	var (
		machineCPU, procCPU = -1.0, -1.0
	)
	l, err := load.Run(ctx, load.Config{
		Targets: cfg.Targets, Model: cfg.Model, Arrival: arr, Workload: cfg.Workload,
		Seed: st.Seed, Grace: cfg.Grace, Client: cfg.Client,
		Recorder:    recording.Options{SLO: cfg.Goodput},
		NoPreflight: true,
		Tagger: func(at time.Duration, tags *recording.Tags) {
			if at < warm {
				tags.Phase = phaseWarmup
			} else {
				tags.Phase = phaseMeasure
			}
		},
		Alongside: func(l *pipeline.Run) func(engine.RunStats, error) {
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				if !waitUntil(done, l.Clock.Start().Add(warm)) {
					return
				}
				a := readCPU()
				waitUntil(done, l.Clock.Start().Add(warm+measure))
				machineCPU, procCPU = cpuShares(a, readCPU())
			})
			return func(engine.RunStats, error) {
				close(done)
				wg.Wait()
			}
		},
	})
	if err != nil {
		return st, err
	}
	if l.Stats.Interrupted && ctx.Err() != nil {
		return st, context.Cause(ctx)
	}
	st.CPU, st.ProcessCPU = machineCPU, procCPU
	measureStep(&st, cfg, l.Recorder.Finish(l.Stats.End), measure, cv)
	return st, nil
}

// measureStep fills st from the recorded step: the counts, rates and
// latencies of the measurement window, the SLOs' values, the client's
// reading and the verdict.
func measureStep(st *Step, cfg Config, sum *recording.Summary, measure time.Duration, cv float64) {
	f := recording.TagFilter{Phase: phaseMeasure}
	c := sum.Counts(f)
	secs := measure.Seconds()
	st.Sent, st.OK, st.Failed, st.Cancelled, st.Dropped = c.Finished(), c.OK, c.Failed, c.Cancelled, c.Dropped
	st.AchievedRPS = float64(st.Sent) / secs
	st.ThroughputRPS = float64(c.OK) / secs
	if sum.SLO.Given() {
		st.GoodputRPS = float64(c.Good) / secs
	}
	st.OutputTokensPerS = float64(c.OutputTokens) / secs
	st.ErrorRate = c.ErrorRate()
	st.Latency = make(map[string]Percentiles, len(latencyMetrics))
	for _, lm := range latencyMetrics {
		if h := sum.Histogram(lm.m, f); h != nil && h.TotalCount() > 0 {
			st.Latency[lm.name] = Percentiles{P50: ms(h, 50), P90: ms(h, 90), P99: ms(h, 99)}
		}
	}
	var lag time.Duration
	if h := sum.Histogram(recording.MetricSendLag, f); h != nil && h.TotalCount() > 0 {
		lag = time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
	}
	st.SendLagP99Ms = float64(lag) / float64(time.Millisecond)

	src := assertions.NewSummarySource(sum, assertions.WithSpan(func(sel assertions.Tags) (time.Duration, bool) {
		return measure, sel.Phase == phaseMeasure && sel.Fault == ""
	}))
	outs := assertions.Evaluate(src, inWindow(cfg.SLOs))
	st.SLOs = make([]SLOValue, len(outs))
	for i, o := range outs {
		th := cfg.SLOs[i]
		st.SLOs[i] = SLOValue{SLO: th.String(), Metric: th.Metric, Bound: th.Expr.Bound(), Value: finite(o.Value), Observed: o.Observed(), NoData: o.NoData, OK: o.OK}
	}
	st.Client = cfg.Limits.Check(ClientReading{
		Expected: st.Expected, CV: cv, Sent: st.Sent, Dropped: st.Dropped, SendLagP99: lag, CPU: st.CPU, ProcessCPU: st.ProcessCPU,
	})
	st.CompletedRPS, st.Saturated = saturation(sum, cfg, st.Sent, measure)
	st.Unanswered = unanswered(c)
	switch {
	case len(st.Client) > 0:
		st.Verdict = ClientLimited
	case st.Saturated != "", st.Unanswered != "":
		st.Verdict = Fail
	case outs.OK():
		st.Verdict = Pass
	default:
		st.Verdict = Fail
	}
}

// inWindow returns the SLOs restricted to the measurement window.
func inWindow(ths []assertions.Threshold) []assertions.Threshold {
	out := make([]assertions.Threshold, len(ths))
	for i, th := range ths {
		th.Tags.Phase = phaseMeasure
		out[i] = th
	}
	return out
}

// ms is a latency histogram's quantile q (0–100) in milliseconds.
func ms(h *hdrhistogram.Histogram, q float64) float64 {
	return float64(h.ValueAtQuantile(q)) / 1000
}

// finite maps ±Inf and NaN, which JSON cannot hold, to 0 (an SLO's NoData
// or its verdict says the rest).
func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

// arrivalCV is the coefficient of variation of an open loop's gaps.
func arrivalCV(a workload.ArrivalConfig) float64 {
	switch a.Arrival {
	case workload.ArrivalConstant:
		return 0
	case workload.ArrivalGamma:
		if a.Burstiness > 0 {
			return 1 / math.Sqrt(a.Burstiness)
		}
	}
	return 1
}

// estimateRate guesses the request rate of a closed loop of users from
// the step measured nearest to it (throughput scales with users until
// the knee, so this errs long past it), or 0 when none was measured yet,
// which makes the step as long as allowed.
func estimateRate(prev []Step, users float64) float64 {
	best, dist := -1, math.Inf(1)
	for i, st := range prev {
		if st.ThroughputRPS > 0 {
			if dd := math.Abs(math.Log(st.Load / users)); dd < dist {
				best, dist = i, dd
			}
		}
	}
	if best < 0 {
		return 0
	}
	return prev[best].ThroughputRPS * users / prev[best].Load
}

// waitUntil waits until at, or until done is closed (it then returns
// false).
func waitUntil(done <-chan struct{}, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// unansweredClasses are the errors of a request the server did not answer:
// no connection, a connection dropped before the answer ended, or no
// answer before the timeout or the step's grace.
var unansweredClasses = []recording.ErrorClass{recording.ClassConnect, recording.ClassReset, recording.ClassTimeout}

// unanswered says how many of a step's requests the server did not
// answer, by class ("3 of 40 requests: connect 2, reset 1"), or "" when it
// answered them all. Such a step does not hold, whatever its SLOs say:
// its percentiles cover only the requests that were answered, and an
// SLO set without an error rate would not see the others at all.
func unanswered(c recording.Counts) string {
	var n int64
	var parts []string
	for _, cl := range unansweredClasses {
		if k := c.Class(cl); k > 0 {
			n += k
			parts = append(parts, fmt.Sprintf("%s %d", cl, k))
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d requests: %s", n, c.Finished(), strings.Join(parts, ", "))
}
