package network

import (
	"context"
	"fmt"

	"github.com/llmchaos/llmchaos/faults"
)

// NetnsPartitionParams configures network.partition: drop every matching packet
// of the target, cutting it off from the network (or only from Peer).
//
//	params: {netns: app, peer: 192.0.2.1}
type NetnsPartitionParams struct {
	NetnsTarget `json:",inline"`
	PacketMatch `json:",inline"`
}

// WithDefaults returns p with its defaults filled in: direction both.
func (p NetnsPartitionParams) WithDefaults() NetnsPartitionParams {
	p.PacketMatch = p.PacketMatch.withDefaults()
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p NetnsPartitionParams) Validate() error {
	ps := append(p.NetnsTarget.problems(false), p.PacketMatch.problems()...)
	return append(ps, rootScopeProblems(p.NetnsTarget, p.PacketMatch)...).Err()
}

// NetnsPartition is the network.partition fault.
type NetnsPartition struct {
	name string
	p    NetnsPartitionParams
}

var _ faults.Fault = (*NetnsPartition)(nil)

// NewNetnsPartition returns the network.partition fault called name, with p's
// defaults applied and validated.
func NewNetnsPartition(name string, p NetnsPartitionParams) (*NetnsPartition, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeNetnsPartition, name, err)
	}
	return &NetnsPartition{name: name, p: p}, nil
}

// Target describes where the fault acts ("netns app dev veth0"), for the
// run's record.
func (f *NetnsPartition) Target() string { return f.p.NetnsTarget.label() }

// Params returns the fault's parameters, defaults included.
func (f *NetnsPartition) Params() NetnsPartitionParams { return f.p }

// Inject creates a table whose chains drop every matching packet, in one
// atomic nftables transaction, after recording a KindNFTTable spec in log.
// Undo deletes the table.
func (f *NetnsPartition) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undo, err := injectNFT(ctx, log, nftPlan{
		fault:     f.name,
		target:    f.p.NetnsTarget,
		match:     f.p.PacketMatch,
		permyriad: 10000,
	})
	if err != nil {
		return nil, fmt.Errorf("%s %q on %s: %w", TypeNetnsPartition, f.name, f.p.NetnsTarget.label(), err)
	}
	return undo, nil
}

// netnsPartitionType describes its fault type for Types.
func netnsPartitionType() faults.Type {
	return netnsType(TypeNetnsPartition, "drop every matching packet in a network namespace (nftables)",
		"netns: app\npeer: 192.0.2.1",
		func(p NetnsPartitionParams) error { return p.Validate() },
		func(name string, p NetnsPartitionParams) (faults.Fault, error) { return NewNetnsPartition(name, p) })
}
