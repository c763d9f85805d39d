package script

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// liveInterval is how often the abortOnFail thresholds are checked, as
// `llmchaos load` checks them.
const liveInterval = time.Second

// liveStops checks a script's abortOnFail thresholds while it runs. The
// LLM metrics are judged over the recorder's rolling window
// (assertions.DefaultLiveWindow), as `llmchaos load` and experiments
// judge them; the metrics the script records itself (checks, its Trends,
// Rates, Counters and Gauges) over the run so far, as k6 judges them, since
// the recorder keeps no window of those.
type liveStops struct {
	live   *assertions.Live
	sh     *js.Shared
	slo    recording.SLO
	custom *liveCustom
}

// newLiveStops returns the live check of the abortOnFail thresholds among
// ths; nil when there is none.
func newLiveStops(ths []assertions.Threshold, sh *js.Shared, slo recording.SLO) *liveStops {
	live, err := assertions.NewLive(ths)
	if err != nil || !live.Enabled() {
		return nil
	}
	c := &liveCustom{sinks: map[liveKey]*metrics.Sink{}, names: map[string]metrics.Kind{}}
	for _, th := range ths {
		if m, ok := sh.Metrics.Lookup(th.Metric); th.AbortOnFail && ok && !m.Builtin {
			c.names[m.Name] = m.Kind
		}
	}
	return &liveStops{live: live, sh: sh, slo: slo, custom: c}
}

// run checks the thresholds every liveInterval until done is closed; the
// first failure stops the run with a *StopError. checked, when set, sees
// every check's failures.
func (l *liveStops) run(done <-chan struct{}, stop func(error), checked func(assertions.Outcomes)) {
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		now := l.sh.Clock.Now()
		w := l.sh.Recorder.Window(now-l.live.Window(), now)
		failed := l.live.Check(now, liveSource{win: assertions.WindowSource{Window: w, SLO: l.slo}, custom: l.custom})
		if checked != nil {
			checked(failed)
		}
		if len(failed) > 0 {
			stop(&StopError{Abort: &report.Abort{Cause: report.AbortStopCondition,
				Name: failed[0].Metric + failed[0].Tags.String() + ": " + failed[0].Expr, Detail: describeFailures(failed)}})
			return
		}
	}
}

// describeFailures names failed thresholds and their observed values.
func describeFailures(outs assertions.Outcomes) string {
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = fmt.Sprintf("%s%s: %s observed %s", o.Metric, o.Tags.String(), o.Expr, o.Observed())
	}
	return strings.Join(parts, "; ")
}

// liveKey is one custom metric under one tag tuple.
type liveKey struct {
	name string
	tags recording.Tags
}

// liveCustom keeps the samples so far of the custom metrics that
// abortOnFail thresholds name. Safe for concurrent use.
type liveCustom struct {
	names map[string]metrics.Kind // read-only

	mu    sync.Mutex
	sinks map[liveKey]*metrics.Sink
}

// chain returns a Sample hook that keeps the samples l watches, then
// calls next (when set).
func (l *liveCustom) chain(next func(string, recording.Tags, float64)) func(string, recording.Tags, float64) {
	if len(l.names) == 0 {
		return next
	}
	return func(name string, tags recording.Tags, v float64) {
		if kind, ok := l.names[name]; ok {
			k := liveKey{name, tags}
			l.mu.Lock()
			s := l.sinks[k]
			if s == nil {
				s = metrics.NewSink(kind)
				l.sinks[k] = s
			}
			s.Add(v)
			l.mu.Unlock()
		}
		if next != nil {
			next(name, tags, v)
		}
	}
}

// merged returns a copy of the samples of name under the tuples sel
// matches (nil when none, or when name is not watched).
func (l *liveCustom) merged(name string, sel assertions.Tags) *metrics.Sink {
	kind, ok := l.names[name]
	if !ok {
		return nil
	}
	f := recording.TagFilter{Phase: sel.Phase, Fault: sel.Fault, Class: sel.Class, Endpoint: sel.Endpoint, Scenario: sel.Scenario}
	out := metrics.NewSink(kind)
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, s := range l.sinks {
		if k.name == name && f.Match(k.tags) {
			out.Merge(s)
		}
	}
	return out
}

// liveSource answers the LLM metrics from the window and the watched
// custom metrics from the run so far.
type liveSource struct {
	win    assertions.WindowSource
	custom *liveCustom
}

var _ assertions.Source = liveSource{}

func (s liveSource) Distribution(metric string, sel assertions.Tags) assertions.Distribution {
	if c := s.custom.merged(metric, sel); c != nil {
		if c.Count == 0 || c.Hist == nil {
			return nil
		}
		return sinkDist{c}
	}
	return s.win.Distribution(metric, sel)
}

func (s liveSource) Ratio(metric string, sel assertions.Tags) (hits, total int64) {
	if c := s.custom.merged(metric, sel); c != nil {
		return c.Passes, c.Count
	}
	return s.win.Ratio(metric, sel)
}

func (s liveSource) Counter(metric string, sel assertions.Tags) (int64, time.Duration) {
	if c := s.custom.merged(metric, sel); c != nil {
		// The span for count's per-second rate: the run so far.
		var span time.Duration
		if s.win.Window != nil {
			span = s.win.Window.To
		}
		return int64(math.Round(c.Sum)), span
	}
	return s.win.Counter(metric, sel)
}

func (s liveSource) Value(metric string, sel assertions.Tags) (float64, bool) {
	if c := s.custom.merged(metric, sel); c != nil {
		return c.Last, c.Count > 0
	}
	return s.win.Value(metric, sel)
}

// sinkDist is a Distribution over a custom trend's samples.
type sinkDist struct{ s *metrics.Sink }

func (d sinkDist) Count() int64               { return d.s.Count }
func (d sinkDist) Mean() float64              { return d.s.Mean() }
func (d sinkDist) Min() float64               { return d.s.Min() }
func (d sinkDist) Max() float64               { return d.s.Max() }
func (d sinkDist) Quantile(q float64) float64 { return d.s.Quantile(q) }
