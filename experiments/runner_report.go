package experiments

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// finish builds the run's report: the load's summary, the experiment's
// timeline, faults, recovery, events and steady state, the thresholds'
// outcomes (recovery_time and oom_recovery_time included) and the verdict.
// rec is nil when no load ran.
func (r *run) finish(rec *recording.Recorder, stats engine.RunStats) (*Outcome, error) {
	p := r.p
	loaded := rec != nil
	if rec == nil {
		rec = recording.NewRecorder(recording.Options{SLO: p.slo})
	}
	sum := rec.Finish(stats.End)
	end := sum.Duration
	abort := r.judge.aborted()
	notSteady := abort != nil && abort.Cause == AbortNotSteady
	if loaded && end > 0 && len(p.steady.ths) > 0 && !notSteady {
		w := p.spec.Recovery.Window.D()
		r.judge.addAfter(p.steady.checkThresholds(sum.Window(end-w, end), p.judge.within, p.slo))
	}
	started := time.Now()
	if c := r.clock.Load(); c != nil {
		started = c.Start()
	}
	doc, err := report.Build(report.Meta{
		ToolVersion: r.opts.ToolVersion, Name: p.spec.Metadata.Name, StartedAt: started,
		Seed: int64(p.seed), Config: r.configRecord(),
	}, sum)
	if err != nil {
		return nil, err
	}
	doc.Experiment = &report.Experiment{Name: p.spec.Metadata.Name, Description: p.spec.Metadata.Description, File: p.file}
	if p.file != "" {
		if b, err := os.ReadFile(p.file); err == nil {
			// The file may hold header values: secrets never reach a report
			// (values of 8 bytes or more are secrets, as the client takes them).
			text := string(b)
			if t := p.spec.Target.Client(); t != nil {
				for _, v := range t.Headers {
					if len(v) >= 8 {
						text = strings.ReplaceAll(text, v, report.Redacted)
					}
				}
			}
			if m, err := report.Redact(map[string]any{"spec": text}); err == nil {
				doc.Experiment.Spec, _ = m["spec"].(string)
			}
		}
	}
	if loaded {
		doc.Phases = r.tl.records(end)
	}
	recs := r.judge.recoveries(sum)
	r.judge.settleRecoveries(recs, end)

	doc.Faults = r.faults.records()
	doc.ShardsLost = r.shardsLost
	doc.SteadyState = r.judge.steadyState()
	abort = r.judge.aborted()
	aborted := abort != nil
	out := &Outcome{Doc: doc, Aborted: aborted, Refused: r.faults.refusedNames(), Shards: r.shardReports()}
	if aborted {
		out.AbortReason, out.AbortDetail = abort.Cause, abort.Reason()
	}

	for _, fr := range recs {
		rr := report.RecoveryRecord{Fault: fr.fault, Recovered: fr.recovered, Instantaneous: fr.instantaneous,
			HeldLast: fr.heldLast, InsufficientTraffic: fr.insufficient, CutBy: fr.cutBy}
		if fr.recovered {
			rr.RecoveryTimeS = report.Seconds(fr.time)
			if !fr.instantaneous {
				rr.TimeToRecoverS = report.Seconds(fr.sinceRevert)
			}
		}
		if fr.oomOK {
			rr.OOMRecoveryTimeS = report.Seconds(fr.oom)
		}
		doc.Recovery = append(doc.Recovery, rr)
	}
	src := experimentSource{SummarySource: assertions.NewSummarySource(sum, assertions.WithSpan(doc.PhaseSpan)), recovery: recs}
	if r.probes != nil {
		c := compareProbes(r.probes.cfg.Prompts, r.probes.results())
		doc.Consistency = c.record(r.probes.cfg, doc.Phases)
		src.consistency = c
		src.probes = assertions.NewSummarySource(r.probes.rec.Finish(end), assertions.WithSpan(doc.PhaseSpan))
	}
	doc.SetThresholds(assertions.Evaluate(src, p.thresholds), aborted)
	if aborted {
		a := *abort
		doc.SetAbort(&a)
	}
	r.obs.observeDoc(doc, end)
	if !aborted && doc.ShardsLost > 0 {
		// The figures leave the lost shards' requests out: the run cannot
		// read as a pass (nor as a plain threshold failure), whatever its
		// thresholds say of the rest.
		doc.SetAbort(&report.Abort{Cause: report.AbortError,
			Detail: fmt.Sprintf("%d shard(s) of workload.shards handed back no report whole: the figures leave their requests out", doc.ShardsLost)})
		aborted = true
	}
	if !aborted && !allOK(doc.SteadyState.After) {
		doc.Verdict = report.VerdictFail
		r.obs.event(report.EventSourceSteadyState, "not_steady_after", "", failedProbes(doc.SteadyState.After))
	}
	doc.Events = r.obs.eventLog()
	doc.GPU = append(doc.GPU, r.obs.gpuRecords()...)
	slices.SortStableFunc(doc.Events, func(a, b report.EventRecord) int { return cmp.Compare(a.AtS, b.AtS) })
	return out, nil
}

func durationOf(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// oomExit says that a replica event is an out-of-memory death: the docker
// driver's oom, or a simulator replica that exited with status 3 (how
// `llmchaos sim` ends when its replica runs out of GPU memory).
func oomExit(e replica.Event) bool {
	return e.Kind == replica.EventOOM || (e.Kind == replica.EventExit && strings.HasSuffix(e.Detail, "exit status 3"))
}

// oomRecovery returns the longest time from a replica's out-of-memory
// death in [from, to) of the run clock (whose zero is start) to that
// replica serving again; ok is false when no replica died of OOM then or
// none served again.
func oomRecovery(evs []replica.Event, start time.Time, from, to time.Duration) (time.Duration, bool) {
	var longest time.Duration
	found := false
	for i, e := range evs {
		at := e.At.Sub(start)
		if !oomExit(e) || at < from || at >= to {
			continue
		}
		for _, h := range evs[i+1:] {
			if h.Replica == e.Replica && h.Kind == replica.EventHealthy && !h.At.Before(e.At) {
				longest, found = max(longest, h.At.Sub(e.At)), true
				break
			}
		}
	}
	return longest, found
}
