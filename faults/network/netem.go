package network

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// NetnsDelayParams configures network.delay: a netem qdisc at the root of an
// interface in the target namespace, delaying what the namespace sends
// through it. It needs a kernel with sch_netem; where there is none, Inject
// fails with ErrNoNetem and the proxy's network.latency fault is the way.
//
//	params: {netns: app, interface: veth0, delay: 100ms, jitter: 20ms}
type NetnsDelayParams struct {
	NetnsTarget `json:",inline"`
	// Delay is added to every packet sent through the interface.
	Delay time.Duration `json:"delay" doc:"delay added to every packet sent through the interface (1µs to 1m)"`
	// Jitter varies the delay uniformly by up to ± Jitter.
	Jitter time.Duration `json:"jitter,omitempty" doc:"uniform variation of the delay, up to ± jitter" default:"0s"`
	// LimitPackets is netem's queue size in packets. Default 1000.
	LimitPackets int `json:"limit_packets,omitempty" doc:"netem queue size" unit:"packets" default:"1000"`
}

// defaultNetemLimit is netem's own default queue size, in packets.
const defaultNetemLimit = 1000

// WithDefaults returns p with its defaults filled in.
func (p NetnsDelayParams) WithDefaults() NetnsDelayParams {
	if p.LimitPackets == 0 {
		p.LimitPackets = defaultNetemLimit
	}
	return p
}

// maxNetemDelay is the longest delay (and jitter) netem's 32-bit tick fields
// hold with room: they overflow at about 274 s with 64 ns ticks.
const maxNetemDelay = time.Minute

// Validate reports every problem with p at once; call it after WithDefaults.
func (p NetnsDelayParams) Validate() error {
	ps := p.NetnsTarget.problems(true)
	if p.Delay < time.Microsecond || p.Delay > maxNetemDelay {
		ps.AddNamed("delay", ": must be in 1µs..%s, got %s", maxNetemDelay, p.Delay)
	}
	if p.Jitter < 0 || p.Jitter > p.Delay {
		ps.AddNamed("jitter", ": must be in 0..delay (%s), got %s", p.Delay, p.Jitter)
	}
	if p.LimitPackets < 1 || p.LimitPackets > math.MaxInt32 {
		ps.AddNamed("limit_packets", ": must be in 1..%d, got %d", math.MaxInt32, p.LimitPackets)
	}
	return ps.Err()
}

// NetnsDelay is the network.delay fault.
type NetnsDelay struct {
	name string
	p    NetnsDelayParams
}

var _ faults.Fault = (*NetnsDelay)(nil)

// NewNetnsDelay returns the network.delay fault called name, with p's defaults
// applied and validated.
func NewNetnsDelay(name string, p NetnsDelayParams) (*NetnsDelay, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeNetnsDelay, name, err)
	}
	return &NetnsDelay{name: name, p: p}, nil
}

// Target describes where the fault acts ("netns app dev veth0"), for the
// run's record.
func (f *NetnsDelay) Target() string { return f.p.NetnsTarget.label() }

// Params returns the fault's parameters, defaults included.
func (f *NetnsDelay) Params() NetnsDelayParams { return f.p }

// Inject adds the netem qdisc at the interface's root under a fresh handle,
// after recording a KindTCQdisc spec in log; like network.bandwidth it
// refuses to replace a root qdisc someone else added. On a kernel without
// sch_netem it fails with an error that wraps ErrNoNetem and changes nothing.
func (f *NetnsDelay) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undo, err := injectQdisc(ctx, log, f.p.NetnsTarget, qdiscNetem{
		latencyUs: uint32(f.p.Delay.Microseconds()),
		jitterUs:  uint32(f.p.Jitter.Microseconds()),
		limit:     uint32(f.p.LimitPackets),
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q on %s: %w", TypeNetnsDelay, f.name, f.p.NetnsTarget.label(), err)
	}
	return undo, nil
}

// netnsDelayType describes its fault type for Types.
func netnsDelayType() faults.Type {
	return netnsType(TypeNetnsDelay, "delay what a network namespace sends (netem qdisc)",
		"netns: app\ninterface: veth0\ndelay: 100ms\njitter: 20ms",
		func(p NetnsDelayParams) error { return p.Validate() },
		func(name string, p NetnsDelayParams) (faults.Fault, error) { return NewNetnsDelay(name, p) })
}
