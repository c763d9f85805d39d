package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"
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
