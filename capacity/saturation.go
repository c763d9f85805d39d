package capacity

import (
	"fmt"
	"math"
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
	// CPUs (0 does not check it). When the server runs on the same
	// machine, its CPU counts too: the measurement is then the
	// machine's, not the server's alone.
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
	// CPU is the machine's busy share over the window; -1 unknown.
	CPU float64
}

// Check returns why the client limited the step, or nothing.
func (l ClientLimits) Check(r ClientReading) []string {
	var why []string
	if r.Expected > 0 && l.MinSentShare > 0 {
		if short := SentShortfall(r.Expected, r.CV, l.MinSentShare); float64(r.Sent) < short {
			why = append(why, fmt.Sprintf("sent %d requests of the %.0f scheduled (%.0f%%): the client fell behind its schedule",
				r.Sent, r.Expected, 100*float64(r.Sent)/r.Expected))
		}
	}
	if l.MaxSendLag > 0 && r.SendLagP99 > l.MaxSendLag {
		why = append(why, fmt.Sprintf("send lag p99 %v above %v: the client sent late", r.SendLagP99.Round(time.Millisecond), l.MaxSendLag))
	}
	if total := r.Sent + r.Dropped; l.MaxDropShare >= 0 && total > 0 && r.Dropped > 0 && float64(r.Dropped) > l.MaxDropShare*float64(total) {
		why = append(why, fmt.Sprintf("%d arrivals dropped at the in-flight cap (%.1f%%)", r.Dropped, 100*float64(r.Dropped)/float64(total)))
	}
	if l.MaxCPU > 0 && r.CPU >= l.MaxCPU {
		why = append(why, fmt.Sprintf("client machine CPU %.0f%% busy (limit %.0f%%)", 100*r.CPU, 100*l.MaxCPU))
	}
	return why
}

// SentShortfall is the fewest requests a window that expects expected
// arrivals may send before the client counts as behind: share of them,
// less three standard deviations of the arrival count (cv√expected for a
// renewal process whose gaps have coefficient of variation cv), so that a
// Poisson schedule's own randomness is not taken for a slow client.
func SentShortfall(expected, cv, share float64) float64 {
	return share*expected - 3*cv*math.Sqrt(expected)
}
