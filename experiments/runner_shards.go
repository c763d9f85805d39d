package experiments

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// ShardLiveLag is how far behind the run clock the live checks of a
// sharded load look: a shard writes a request line when the request ends
// and flushes its lines every shardjob.FlushEvery, and a pod's log takes
// a moment more to reach the runner.
const ShardLiveLag = time.Second

// DefaultShardStartIn is how far ahead the shards of a sharded load are
// told to start when Options.ShardStartIn is zero: time for the Job's pods
// to be scheduled, pull the image and run the pre-flight check.
const DefaultShardStartIn = 30 * time.Second

// loadShards runs the load as workload.shards shards (see ShardRunner)
// started at one instant, which is the run clock's zero: the faults run
// on their timeline meanwhile, as with a load in this process.
//
// While the shards run, each request line they write is recorded as it
// arrives in a live recorder, shifted onto the run clock and tagged with
// the phase and fault of its send time: the stop conditions, the steady
// state's threshold probes, live recovery and the progress line read it
// ShardLiveLag behind the run clock, so that the lines of a second have
// arrived before it is judged. When ctx ends (a stop condition, Ctrl-C)
// the shards are stopped as Ctrl-C stops a load, and report.
//
// Once every shard has ended, their results are recorded again, exactly,
// in a recorder of their own (each request started at its send and ended
// at its end, in the order of time, as the engine records a load in this
// process), and that one is the run's: phases, recovery, thresholds and
// the verdict come out of it as out of a load in this process.
func (r *run) loadShards(ctx context.Context) (engine.RunStats, error) {
	p := r.p
	n := p.spec.Workload.Shards
	args, err := r.shardLoadArgs()
	if err != nil {
		return engine.RunStats{}, err
	}
	sr := r.opts.Shards
	if sr == nil {
		if sr, err = r.kubeShards(ctx); err != nil {
			return engine.RunStats{}, err
		}
	}
	in := r.opts.ShardStartIn
	if in <= 0 {
		in = DefaultShardStartIn
	}
	// The clock's zero carries a monotonic reading and is the instant
	// every shard starts at (to the millisecond the flag carries).
	now := time.Now()
	start := now.Add(in).Truncate(time.Millisecond)
	clock := recording.NewRunClockAt(now.Add(start.Sub(now)))
	// shift is the shards' clock zero on the run clock: 0, as both start
	// at start; kept for a runner whose clock would start elsewhere.
	shift := start.Sub(clock.Start())
	liveRec := recording.NewRecorder(recording.Options{SLO: p.slo})
	lines := func(_ int, line []byte) {
		if !bytes.HasPrefix(line, []byte("{")) {
			return // a human line, or the report's first
		}
		// Lenient: the report's lines and a shard's stderr are not
		// request lines.
		_ = recording.ReadRequests(bytes.NewReader(line), true, func(res *recording.Result) {
			r.shardResult(res, shift)
			liveRec.Record(res)
		})
	}
	if err := sr.Start(ctx, r.jr, args, n, start, lines); err != nil {
		return engine.RunStats{}, &load.StageError{Stage: load.StageStart, Err: fmt.Errorf("workload.shards: %w", err)}
	}
	r.out.printf("load: %d shards start at %s (in %v)", n, start.UTC().Format(time.RFC3339Nano), time.Until(start).Round(time.Millisecond))
	rec := recording.NewRecorder(recording.Options{SLO: p.slo, SaveRequests: r.opts.SaveRequests})
	t := time.NewTimer(time.Until(start))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		_, _ = sr.Collect(ctx)
		return engine.RunStats{Interrupted: true}, nil
	}
	live, err := assertions.NewLive(p.stops)
	if err != nil {
		return engine.RunStats{}, err
	}
	r.judge.lag = ShardLiveLag
	stop := r.alongside(ctx, &pipeline.Run{Clock: clock, Recorder: liveRec}, live) // the judge stops the shards through ctx
	outs, cerr := sr.Collect(ctx)
	if lost, ok := onlyLost(cerr); ok && len(outs) == n {
		// A shard whose report did not come back whole is counted
		// (run.json's shards_lost, exit 1) and the others recorded: the
		// run is not lost with it.
		r.shardsLost = lost.Lost
		r.out.println(fmt.Sprintf("warning: workload.shards: %v", cerr))
		cerr = nil
	}
	stats, rerr := r.recordShards(rec, outs, shift)
	stats.Interrupted = ctx.Err() != nil
	stats.End = max(stats.End, r.now())
	err = errors.Join(cerr, rerr)
	stop(stats, err)
	r.rec = rec // the exact record, now that nothing reads the live one
	switch {
	case err == nil:
	case stats.Interrupted:
		// An interrupted run reports what the shards that ended recorded.
		r.out.println(fmt.Sprintf("warning: workload.shards: interrupted: %v", err))
	default:
		return stats, fmt.Errorf("load: workload.shards: %w", err)
	}
	return stats, nil
}

// recordShards records every shard's results in rec: shifted by shift
// onto the run clock, tagged by r.tag from their send time (scheduled
// time for one never sent), and replayed in the order of time as the
// engine reports a load in this process (each sent request started at
// its send, ended and recorded at its end), so that requests in flight
// and the lost-request count come out as for one process. It returns the
// load's account.
func (r *run) recordShards(rec *recording.Recorder, outs []ShardOutput, shift time.Duration) (engine.RunStats, error) {
	var (
		stats engine.RunStats
		errs  []error
		evs   []shardEvent
	)
	for _, o := range outs {
		if o.Doc == nil {
			continue
		}
		var lines int64
		err := recording.ReadRequests(bytes.NewReader(o.Log), true, func(res *recording.Result) {
			lines++
			at := r.shardResult(res, shift)
			if res.Outcome != recording.OutcomeDropped && res.Sent > 0 {
				evs = append(evs, shardEvent{at: res.Sent, res: res, start: true})
			}
			evs = append(evs, shardEvent{at: max(res.End, at), res: res})
			stats.Scheduled++
			stats.End = max(stats.End, res.End)
			stats.ScheduleEnd = max(stats.ScheduleEnd, res.Scheduled) // the last arrival
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", o.Index, err))
		}
		if want := o.Doc.Requests.Scheduled; err == nil && lines != want {
			errs = append(errs, fmt.Errorf("shard %d: %d request lines in its log, its report counts %d requests: the log is cut", o.Index, lines, want))
		}
	}
	slices.SortStableFunc(evs, func(a, b shardEvent) int { return cmp.Compare(a.at, b.at) })
	for _, e := range evs {
		switch {
		case e.start:
			rec.RequestStarted(e.at)
		default:
			if e.res.Outcome != recording.OutcomeDropped && e.res.Sent > 0 {
				rec.RequestEnded(e.at)
			}
			rec.Record(e.res)
		}
	}
	r.shardOutputs = outs
	return stats, errors.Join(errs...)
}

// shardResult shifts a shard's result by shift onto the run clock and
// tags it with the phase and fault of its send time (its scheduled time
// when it was never sent), which it returns.
func (r *run) shardResult(res *recording.Result, shift time.Duration) time.Duration {
	for _, d := range []*time.Duration{&res.Scheduled, &res.Dequeued, &res.Sent, &res.FirstToken, &res.End} {
		if *d != 0 || d == &res.Scheduled {
			*d += shift
		}
	}
	at := res.Sent
	if at == 0 {
		at = res.Scheduled
	}
	r.tag(at, &res.Tags)
	return at
}

// shardEvent is a moment of a shard's result replayed into the recorder:
// its start (send) or its end (recorded).
type shardEvent struct {
	at    time.Duration
	res   *recording.Result
	start bool
}

// kubeShards is the ShardRunner of a Kubernetes target: an Indexed Job in
// its namespace, running Options.ShardImage as Options.ShardServiceAccount.
func (r *run) kubeShards(ctx context.Context) (ShardRunner, error) {
	if r.kube == nil {
		return nil, errors.New("workload.shards: needs target.kubernetes (its shards are the pods of an Indexed Job)")
	}
	if r.opts.ShardImage == "" {
		return nil, errors.New("workload.shards: no llmchaos image for the shard pods: give llmchaos run --shard-image IMAGE")
	}
	sa, err := r.shardServiceAccount(ctx)
	if err != nil {
		return nil, err
	}
	// The journal's revert runs in the guard or `llmchaos recover`,
	// perhaps in another directory.
	access := kube.Access{Kubeconfig: r.kube.t.Kubeconfig, Context: r.kube.t.Context}
	if access.Kubeconfig != "" {
		if abs, err := filepath.Abs(access.Kubeconfig); err == nil {
			access.Kubeconfig = abs
		}
	}
	return &KubernetesShards{Cluster: r.kube.cl, Access: access, Namespace: r.kube.ns, Image: r.opts.ShardImage, RunID: filepath.Base(r.dir), ServiceAccount: sa,
		Env: apiKeyEnv(r.kube.t)}, nil
}

// apiKeyEnv is the environment of the shard pods of target t: its
// api_key_env variable set from the Secret api_key_secret names (none
// when it names none; validation requires one with api_key_env).
func apiKeyEnv(t spec.KubernetesTarget) []corev1.EnvVar {
	name, key, ok := t.SplitAPIKeySecret()
	if !ok || t.APIKeyEnv == "" {
		return nil
	}
	return []corev1.EnvVar{{Name: t.APIKeyEnv, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key},
	}}}
}

// shardLoadArgs are the `llmchaos load` flags of every shard: the
// target, the model, the seed, and the workload as the experiment
// resolved it (the plan's configs: its preset, its defaults and a rate
// from its capacity file already in them), so that a shard resolves
// nothing the runner did not. Workload keys a shard cannot take yet are
// refused by validation.
func (r *run) shardLoadArgs() ([]string, error) {
	p := r.p
	w, wc, ac := p.spec.Workload, p.wc, p.ac
	var a []string
	add := func(flag, v string) { a = append(a, flag, v) }
	if r.followsPods() {
		a = append(a, r.shardKubeArgs()...)
	} else {
		for _, e := range r.endpoints {
			add("--target", e.load)
		}
	}
	add("--model", r.model)
	if k := r.kube; k != nil {
		// The key's variable: the runner's environment for local shards,
		// the Secret's value in the Job's pods (KubernetesShards.Env).
		if k.t.APIKeyEnv != "" {
			add("--api-key-env", k.t.APIKeyEnv)
		}
		for _, h := range slices.Sorted(maps.Keys(k.t.Headers)) {
			add("--header", h+":"+k.t.Headers[h])
		}
	}
	add("--seed", strconv.FormatInt(int64(p.seed), 10))
	float := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch ac.Mode() {
	case workload.ModeRate:
		add("--rate", float(ac.Rate))
	case workload.ModeClosed:
		// A preset's closed loop (validation refuses one written
		// with shards): each shard runs its share of the users.
		add("--concurrency", strconv.Itoa(ac.Concurrency))
	default:
		return nil, fmt.Errorf("workload.shards: the load's shape is %s, which shards do not take yet", ac.Mode())
	}
	for _, s := range []struct{ flag, v string }{
		{"--think-time", ac.ThinkTime.String()},
		{"--class", wc.Name}, {"--api", string(wc.API)}, {"--arrival", string(ac.Arrival)}, {"--on-saturation", string(ac.OnSaturation)},
		{"--input-tokens", wc.InputTokens.String()}, {"--output-tokens", wc.OutputTokens.String()}, {"--turns", wc.Turns.String()},
		{"--cancel-after-tokens", wc.CancelAfterTokens.String()}, {"--session-think-time", wc.ThinkTime.String()},
		{"--cancel-after", wc.CancelAfter.String()},
	} {
		if s.v != "" {
			add(s.flag, s.v)
		}
	}
	for _, f := range []struct {
		flag string
		v    float64
	}{{"--burstiness", ac.Burstiness}, {"--prefix-share", wc.PrefixShare}} {
		if f.v != 0 {
			add(f.flag, float(f.v))
		}
	}
	for _, i := range []struct {
		flag string
		v    int
	}{{"--requests", ac.Requests}, {"--max-in-flight", ac.MaxInFlight}, {"--min-tokens", wc.MinTokens}, {"--prefix-count", wc.PrefixCount}, {"--prefix-tokens", wc.PrefixTokens}} {
		if i.v != 0 {
			add(i.flag, strconv.Itoa(i.v))
		}
	}
	if ac.Duration != 0 {
		add("--duration", ac.Duration.String())
	}
	if wc.CancelShare != 0 {
		add("--cancel-rate", float(100*wc.CancelShare)+"%")
	}
	if wc.IgnoreEOS {
		a = append(a, "--ignore-eos")
	}
	// The client's settings, which are not the workload's configs.
	for _, d := range []struct {
		flag string
		v    spec.Duration
	}{{"--timeout", w.Timeout}, {"--ttft-timeout", w.TTFTTimeout}, {"--idle-timeout", w.IdleTimeout}} {
		if d.v != 0 {
			add(d.flag, d.v.String())
		}
	}
	add("--grace", w.Grace.D().String())
	if r.opts.NoPreflight || w.PreflightOff() {
		a = append(a, "--no-preflight")
	}
	return a, nil
}

// onlyLost returns the LostError err is, or wraps alone (not joined with
// another error).
func onlyLost(err error) (*shardjob.LostError, bool) {
	for err != nil {
		if l, ok := err.(*shardjob.LostError); ok {
			return l, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			// errors.Join of one error (shardjob.Run joins its Job's
			// deletion error, nil when it went well).
			errs := u.Unwrap()
			if len(errs) != 1 {
				return nil, false
			}
			err = errs[0]
		default:
			return nil, false
		}
	}
	return nil, false
}

// shardReports are the shards' reports, by index, once a sharded load
// ended (nil otherwise).
func (r *run) shardReports() []*report.Document {
	var docs []*report.Document
	for _, o := range r.shardOutputs {
		docs = append(docs, o.Doc)
	}
	return docs
}
