package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// ClientLimits say when a step measured the client rather than the
// server. A step that exceeds any of them is ClientLimited, whatever its
// SLOs say: a load the client did not deliver tells nothing of the server.
type ClientLimits struct {
	// MinSentShare: the requests sent in the measurement window, against
	// those the schedule asked for, below this share (beyond the arrival
	// process's own randomness, see SentShortfall).
	MinSentShare float64
	// MaxSendLag: the p99 of send lag (actual − scheduled send) above
	// this: the client sends late, so the load it offers is lower and
	// burstier than asked.
	MaxSendLag time.Duration
	// MaxDropShare: arrivals dropped at the in-flight cap (max_in_flight
	// with on_saturation drop) above this share.
	MaxDropShare float64
	// MaxCPU: the client machine's CPU busy above this share of all its
	// CPUs (0 does not check it), when this process (the client) spent
	// at least half of that busy time: a machine kept busy by others (a
	// server on the same machine, other jobs) starves the client too,
	// but that shows as send lag and a shortfall of sent requests, which
	// are checked on their own.
	MaxCPU float64
}

// DefaultClientLimits are the limits `llmchaos capacity` starts from.
func DefaultClientLimits() ClientLimits {
	return ClientLimits{MinSentShare: 0.95, MaxSendLag: 50 * time.Millisecond, MaxDropShare: 0.01, MaxCPU: 0.95}
}

// ClientReading is what a step saw of its client.
type ClientReading struct {
	// Expected is the requests the schedule asked for in the window
	// (rate × window; 0 for a closed loop, whose users send when they
	// can); CV is the coefficient of variation of the arrival process's
	// gaps (0 constant, 1 Poisson, 1/√B gamma).
	Expected float64
	CV       float64
	// Sent and Dropped count the requests of the window.
	Sent, Dropped int64
	SendLagP99    time.Duration
	// CPU is the machine's busy share over the window, ProcessCPU this
	// process's share of the machine; -1 unknown.
	CPU, ProcessCPU float64
}

// Check returns why the client limited the step, or nothing.
func (l ClientLimits) Check(r ClientReading) []string {
	var why []string
	if r.Expected > 0 && l.MinSentShare > 0 {
		if short := SentShortfall(r.Expected, r.CV, l.MinSentShare); float64(r.Sent) < short {
			why = append(why, fmt.Sprintf("sent %d requests of the %s scheduled (%.0f%%): the client fell behind its schedule",
				r.Sent, strconv.FormatFloat(r.Expected, 'f', decimals(r.Expected), 64), 100*float64(r.Sent)/r.Expected))
		}
	}
	if l.MaxSendLag > 0 && r.SendLagP99 > l.MaxSendLag {
		why = append(why, fmt.Sprintf("send lag p99 %v above %v: the client sent late", r.SendLagP99.Round(time.Millisecond), l.MaxSendLag))
	}
	if total := r.Sent + r.Dropped; l.MaxDropShare >= 0 && total > 0 && r.Dropped > 0 && float64(r.Dropped) > l.MaxDropShare*float64(total) {
		why = append(why, fmt.Sprintf("%d arrivals dropped at the in-flight cap (%.1f%%)", r.Dropped, 100*float64(r.Dropped)/float64(total)))
	}
	if l.MaxCPU > 0 && r.CPU >= l.MaxCPU && r.ProcessCPU >= r.CPU/2 {
		why = append(why, fmt.Sprintf("client machine CPU %.0f%% busy, %.0f%% of it this process (limit %.0f%%)", 100*r.CPU, 100*r.ProcessCPU/r.CPU, 100*l.MaxCPU))
	}
	return why
}

// SentShortfall is the fewest requests a window that expects expected
// arrivals may send before the client counts as behind: share of them,
// less one (a window holds a whole number of arrivals) and three standard
// deviations of the arrival count (cv√expected for a renewal process
// whose gaps have coefficient of variation cv), so that a Poisson
// schedule's own randomness is not taken for a slow client.
func SentShortfall(expected, cv, share float64) float64 {
	return share*expected - 1 - 3*cv*math.Sqrt(expected)
}

// decimals is how many decimals show a count that may be fractional.
func decimals(v float64) int {
	if v >= 10 {
		return 0
	}
	return 1
}

// saturation compares what a step's measurement window completed with
// what it was offered. It returns the requests that ended in the window
// (whatever their outcome) per second, and, for an open loop whose queue
// grew through the window beyond its noise, why the step is saturated.
//
// A server that keeps up completes in a window what the window sent, give
// or take the change of the requests in flight between the window's ends.
// One that does not builds a queue: the requests in flight grow, second
// after second, by the excess of the offered rate over the completed one.
// The step is saturated when the completed rate falls short of the offered
// one by more than minGrowth requests over the window and the requests in
// flight (their mean in each second of the window) rise along a line whose
// slope stands more than three standard errors (from the seconds' own
// scatter around it) above zero and accounts for that growth: a swing of
// the requests in flight, which a server that keeps up shows too, leaves no
// such line. A closed loop cannot outrun its server, so only the rate mode
// is judged.
func saturation(sum *recording.Summary, cfg Config, sent int64, measure time.Duration) (completedRPS float64, why string) {
	if sum.Series == nil || measure <= 0 {
		return 0, ""
	}
	// Whole seconds only: the series counts by the second, and a last
	// partial second would hold completions of the grace after the window.
	span := measure
	if span >= time.Second {
		span = span.Truncate(time.Second)
	}
	w := sum.Window(cfg.Warmup, cfg.Warmup+span)
	secs := (w.To - w.From).Seconds()
	if secs <= 0 {
		return 0, ""
	}
	completedRPS = float64(w.Counts.Finished()) / secs
	if cfg.Mode != ModeRate || sent == 0 {
		return completedRPS, ""
	}
	offeredRPS := float64(sent) / measure.Seconds()
	growth := (offeredRPS - completedRPS) * measure.Seconds()
	if growth <= minGrowth {
		return completedRPS, ""
	}
	var ys []float64
	for at := w.From; at < w.To; at += time.Second {
		ys = append(ys, sum.Window(at, at+time.Second).InFlightMean)
	}
	slope, se, ok := trend(ys)
	if !ok || slope <= 0 || slope*secs < minGrowth || slope < 3*se {
		return completedRPS, ""
	}
	return completedRPS, fmt.Sprintf("offered %.2f req/s, completed %.2f req/s: the requests in flight grew by %.1f/s through the %s window",
		offeredRPS, completedRPS, slope, fmtSeconds(measure.Seconds()))
}

// minGrowth is the fewest requests a queue must grow by, over a step's
// window, for the step to count as saturated: the requests in flight at a
// window's two ends differ by one or two even when the server keeps up.
const minGrowth = 2

// trend fits a line to ys (one sample per second) by least squares and
// returns its slope and the slope's standard error; ok is false with fewer
// than four samples.
func trend(ys []float64) (slope, se float64, ok bool) {
	n := float64(len(ys))
	if len(ys) < 4 {
		return 0, 0, false
	}
	var mx, my float64
	for i, y := range ys {
		mx += float64(i)
		my += y
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i, y := range ys {
		dx := float64(i) - mx
		sxx += dx * dx
		sxy += dx * (y - my)
	}
	slope = sxy / sxx
	var rss float64
	for i, y := range ys {
		r := y - (my + slope*(float64(i)-mx))
		rss += r * r
	}
	se = math.Sqrt(rss / (n - 2) / sxx)
	return slope, se, true
}
