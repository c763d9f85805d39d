package network

import (
	"context"
	"fmt"
	"math"

	"github.com/llmchaos/llmchaos/faults"
)

// NetnsLossParams configures network.loss: drop a share of the target's packets
// with an nftables rule in a table that llmchaos owns.
//
// Ingress drops are silent, as on a lossy link. Egress drops happen inside
// the target's own stack, so a UDP sender there sees them as EPERM from
// send, and TCP treats them as local congestion; to make what the target
// sends vanish silently, drop at its peer's ingress instead.
//
//	params: {netns: app, interface: veth0, percent: 20, direction: ingress, protocol: udp, port: 8000}
type NetnsLossParams struct {
	NetnsTarget `json:",inline"`
	PacketMatch `json:",inline"`
	// Percent is the share of matching packets dropped, in (0, 100], with a
	// resolution of 0.01. Each packet is dropped independently (the kernel's
	// numgen random), so the drops are not reproducible from a seed.
	Percent float64 `json:"percent" doc:"share of matching packets dropped, in (0, 100], resolution 0.01" unit:"%"`
}

// WithDefaults returns p with its defaults filled in: direction both.
func (p NetnsLossParams) WithDefaults() NetnsLossParams {
	p.PacketMatch = p.PacketMatch.withDefaults()
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p NetnsLossParams) Validate() error {
	ps := p.NetnsTarget.problems(false)
	ps = append(ps, p.PacketMatch.problems()...)
	ps = append(ps, rootScopeProblems(p.NetnsTarget, p.PacketMatch)...)
	if !(p.Percent > 0 && p.Percent <= 100) || math.IsNaN(p.Percent) {
		ps.AddNamed("percent", ": must be in (0, 100], got %v", p.Percent)
	} else if permyriad(p.Percent) == 0 {
		ps.AddNamed("percent", ": %v rounds to 0 at the 0.01 resolution", p.Percent)
	}
	return ps.Err()
}

// permyriad is percent in hundredths of a percent, the rule's resolution.
func permyriad(percent float64) uint32 {
	return uint32(math.Round(percent * 100))
}

// NetnsLoss is the network.loss fault.
type NetnsLoss struct {
	name string
	p    NetnsLossParams
}

var _ faults.Fault = (*NetnsLoss)(nil)

// NewNetnsLoss returns the network.loss fault called name (the experiment's fault
// name, which also names its nftables table), with p's defaults applied and
// validated.
func NewNetnsLoss(name string, p NetnsLossParams) (*NetnsLoss, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeNetnsLoss, name, err)
	}
	return &NetnsLoss{name: name, p: p}, nil
}

// Target describes where the fault acts ("netns app dev veth0"), for the
// run's record.
func (l *NetnsLoss) Target() string { return l.p.NetnsTarget.label() }

// Params returns the fault's parameters, defaults included.
func (l *NetnsLoss) Params() NetnsLossParams { return l.p }

// Inject creates the table with its drop rules in one atomic nftables
// transaction, after recording a KindNFTTable spec in log. Undo deletes the
// table.
func (l *NetnsLoss) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undo, err := injectNFT(ctx, log, nftPlan{
		fault:     l.name,
		target:    l.p.NetnsTarget,
		match:     l.p.PacketMatch,
		permyriad: permyriad(l.p.Percent),
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q on %s: %w", TypeNetnsLoss, l.name, l.p.NetnsTarget.label(), err)
	}
	return undo, nil
}

// netnsLossType describes its fault type for Types.
func netnsLossType() faults.Type {
	return netnsType(TypeNetnsLoss, "drop a share of packets in a network namespace (nftables)",
		"netns: app\ninterface: veth0\npercent: 20\ndirection: ingress",
		func(p NetnsLossParams) error { return p.Validate() },
		func(name string, p NetnsLossParams) (faults.Fault, error) { return NewNetnsLoss(name, p) })
}
