package network

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// BitRate is a rate in bits per second. Its text form is a number with an
// optional unit: bit, kbit, mbit, gbit (powers of 1000, as tc writes them),
// e.g. "1mbit", "512kbit" or "2000000". tc's "bps" (bytes per second) is
// refused because it is too easily read as bits.
type BitRate uint64

// Common rates.
const (
	Kbit BitRate = 1000
	Mbit BitRate = 1000 * Kbit
	Gbit BitRate = 1000 * Mbit
)

// ParseBitRate reads the text form of a BitRate.
func ParseBitRate(s string) (BitRate, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if strings.HasSuffix(t, "bps") {
		return 0, fmt.Errorf("rate %q: write bits per second as bit, kbit, mbit or gbit (tc's bps means bytes)", s)
	}
	units := []struct {
		suffix string
		mult   BitRate
	}{{"gbit", Gbit}, {"mbit", Mbit}, {"kbit", Kbit}, {"bit", 1}}
	mult := BitRate(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("rate %q: want a non-negative number with an optional unit bit, kbit, mbit or gbit", s)
	}
	bits := v * float64(mult)
	if bits >= math.MaxUint64 {
		return 0, fmt.Errorf("rate %q: too large", s)
	}
	return BitRate(math.Round(bits)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (YAML and JSON strings).
func (r *BitRate) UnmarshalText(b []byte) error {
	v, err := ParseBitRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// UnmarshalJSON accepts a string in the text form or a plain number of
// bits per second.
func (r *BitRate) UnmarshalJSON(b []byte) error {
	s := string(b)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	return r.UnmarshalText([]byte(s))
}

// MarshalText writes r in the largest unit that divides it exactly.
func (r BitRate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// String writes r in the largest unit that divides it exactly ("1mbit").
func (r BitRate) String() string {
	switch {
	case r != 0 && r%Gbit == 0:
		return strconv.FormatUint(uint64(r/Gbit), 10) + "gbit"
	case r != 0 && r%Mbit == 0:
		return strconv.FormatUint(uint64(r/Mbit), 10) + "mbit"
	case r != 0 && r%Kbit == 0:
		return strconv.FormatUint(uint64(r/Kbit), 10) + "kbit"
	}
	return strconv.FormatUint(uint64(r), 10) + "bit"
}

// bytesPerSecond is r as tc qdiscs take it.
func (r BitRate) bytesPerSecond() uint64 { return uint64(r) / 8 }

// NetnsBandwidthParams configures network.bandwidth: a tbf (token bucket) qdisc
// at the root of an interface in the target namespace, which shapes what the
// namespace sends through it (egress). Shape a service's responses by
// targeting the service's namespace, its requests by targeting the client's.
//
//	params: {netns: app, interface: veth0, rate: 1mbit}
type NetnsBandwidthParams struct {
	NetnsTarget `json:",inline"`
	// Rate is the shaped rate; at least 8bit (one byte per second).
	Rate BitRate `json:"rate" doc:"shaped rate, as tc writes it (1mbit, 500kbit; at least 8bit)" unit:"bit/s"`
	// BurstBytes is the bucket's size: how much may leave at line speed
	// after an idle spell. Default: 10 ms at Rate, at least 4096.
	BurstBytes int `json:"burst_bytes,omitempty" doc:"token bucket size" unit:"bytes" default:"10 ms at rate, at least 4096"`
	// Latency is the longest a packet may wait in the queue before it is
	// dropped (tc's latency). Default 50ms when LimitBytes is not set.
	Latency time.Duration `json:"latency,omitempty" doc:"longest a packet may wait in the queue (tc latency)" default:"50ms unless limit_bytes is set"`
	// LimitBytes is the queue's size in bytes (tc's limit), instead of
	// Latency.
	LimitBytes int `json:"limit_bytes,omitempty" doc:"queue size (tc limit), instead of latency" unit:"bytes"`
}

// Defaults and bounds of network.bandwidth. tbf holds the burst as a time in
// 32-bit scheduler ticks (64 ns each on current kernels), about 274 s; a
// minute stays well inside.
const (
	maxTBFBurstTime    = time.Minute
	defaultTBFLatency  = 50 * time.Millisecond
	minDefaultTBFBurst = 4096
)

// WithDefaults returns p with its defaults filled in.
func (p NetnsBandwidthParams) WithDefaults() NetnsBandwidthParams {
	if p.BurstBytes == 0 && p.Rate > 0 {
		p.BurstBytes = int(min(max(p.Rate.bytesPerSecond()/100, minDefaultTBFBurst), math.MaxInt32))
	}
	if p.Latency == 0 && p.LimitBytes == 0 {
		p.Latency = defaultTBFLatency
	}
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p NetnsBandwidthParams) Validate() error {
	ps := p.NetnsTarget.problems(true)
	if p.Rate < 8 {
		ps.AddNamed("rate", ": must be at least 8bit (one byte per second), got %s", p.Rate)
	}
	if p.BurstBytes < 1 || p.BurstBytes > math.MaxInt32 {
		ps.AddNamed("burst_bytes", ": must be in 1..%d, got %d", math.MaxInt32, p.BurstBytes)
	} else if bps := p.Rate.bytesPerSecond(); bps > 0 && float64(p.BurstBytes)/float64(bps) > maxTBFBurstTime.Seconds() {
		ps.AddNamed("burst_bytes", ": %d is over %s at %s; tbf's 32-bit tick fields cannot hold it",
			p.BurstBytes, maxTBFBurstTime, p.Rate)
	}
	switch {
	case p.Latency != 0 && p.LimitBytes != 0:
		ps.AddNamed("latency", ", %s: set one of them, not both", field.Path("limit_bytes"))
	case p.Latency < 0:
		ps.AddNamed("latency", ": must be positive, got %s", p.Latency)
	case p.LimitBytes < 0 || p.LimitBytes > math.MaxInt32:
		ps.AddNamed("limit_bytes", ": must be in 1..%d, got %d", math.MaxInt32, p.LimitBytes)
	case p.Latency == 0 && p.LimitBytes == 0:
		ps.Add("", "%s, %s: set one of them", field.Path("latency"), field.Path("limit_bytes"))
	case p.LimitBytes != 0 && p.LimitBytes < p.BurstBytes:
		ps.AddNamed("limit_bytes", ": %d is below burst_bytes %d; the queue must hold a burst", p.LimitBytes, p.BurstBytes)
	}
	return ps.Err()
}

// limitBytes is the queue size: LimitBytes, or what Latency allows at Rate
// plus a burst (tc's formula).
func (p NetnsBandwidthParams) limitBytes() uint32 {
	if p.LimitBytes > 0 {
		return uint32(p.LimitBytes)
	}
	l := float64(p.Rate.bytesPerSecond())*p.Latency.Seconds() + float64(p.BurstBytes)
	return uint32(min(l, math.MaxUint32))
}

// NetnsBandwidth is the network.bandwidth fault.
type NetnsBandwidth struct {
	name string
	p    NetnsBandwidthParams
}

var _ faults.Fault = (*NetnsBandwidth)(nil)

// NewNetnsBandwidth returns the network.bandwidth fault called name, with p's
// defaults applied and validated.
func NewNetnsBandwidth(name string, p NetnsBandwidthParams) (*NetnsBandwidth, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeNetnsBandwidth, name, err)
	}
	return &NetnsBandwidth{name: name, p: p}, nil
}

// Target describes where the fault acts ("netns app dev veth0"), for the
// run's record.
func (f *NetnsBandwidth) Target() string { return f.p.NetnsTarget.label() }

// Params returns the fault's parameters, defaults included.
func (f *NetnsBandwidth) Params() NetnsBandwidthParams { return f.p }

// Inject adds the tbf qdisc at the interface's root under a fresh handle,
// after recording a KindTCQdisc spec in log. It refuses to replace a root
// qdisc that is already there (one that is not the kernel's default), since
// Undo could not give it back. Undo deletes the qdisc if it is still the tbf
// with the rate it set.
func (f *NetnsBandwidth) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undo, err := injectQdisc(ctx, log, f.p.NetnsTarget, qdiscTBF{
		rate:  f.p.Rate.bytesPerSecond(),
		burst: uint32(f.p.BurstBytes),
		limit: f.p.limitBytes(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q on %s: %w", TypeNetnsBandwidth, f.name, f.p.NetnsTarget.label(), err)
	}
	return undo, nil
}

// netnsBandwidthType describes its fault type for Types.
func netnsBandwidthType() faults.Type {
	return netnsType(TypeNetnsBandwidth, "shape what a network namespace sends (tbf qdisc)",
		"netns: app\ninterface: veth0\nrate: 1mbit",
		func(p NetnsBandwidthParams) error { return p.Validate() },
		func(name string, p NetnsBandwidthParams) (faults.Fault, error) { return NewNetnsBandwidth(name, p) })
}
