package experiments

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/faults/network"
)

// FaultType is what an experiment needs to know about one fault type to
// check a fault of that type: what it acts on, and how its params decode
// and validate. The runner adds how to build the fault.
type FaultType struct {
	// Target is what the fault acts on: TargetProxy or TargetParams. It
	// decides which FaultTarget keys apply.
	Target string
	// L7 is set for types decided per HTTP request, which need a proxy in
	// ProxyHTTP mode.
	L7 bool
	// NewParams returns an empty params value (a pointer to the type's
	// params struct) for a fault's params to be decoded into, strictly:
	// its yaml (else json) tags are the keys.
	NewParams func() any
	// Check validates decoded params as the fault will run them: the
	// type's defaults are applied to a copy first. It reports every
	// problem, joined, each message starting with the key it is about.
	Check func(params any) error
	// FromSim, when set, fills in (in place) what params leave out and a
	// target.sim run provides: the simulator supervisor's state file, its
	// vGPU directory. Validate calls it with placeholder paths when the
	// experiment's target is sim, the runner with the real ones, before
	// the params are checked and the fault is built.
	FromSim func(params any, env SimEnv)
}

// FaultTypes returns every fault type an experiment may name, by type
// name. It is the one explicit map of built-in fault types (no init()
// registration): the runner extends a copy of it with how to build each.
//
// Today: the fault proxy's toxics (network.latency, network.throttle,
// network.slow_close, network.reset_peer, network.blackhole,
// network.limit_data, and per request http.error, http.ttfb, stream.stall,
// stream.cut, stream.chunk_delay) and the kernel-level faults in a network
// namespace (network.loss, network.partition, network.bandwidth,
// network.delay), the replica faults (replica.kill, replica.stop,
// replica.pause, replica.restart) and the GPU faults (gpu.memory_pressure,
// gpu.hang). Their params are those of faults/network, faults/replica and
// faults/gpu; with a target.sim, replica and GPU faults may leave their
// target out (FromSim: the simulator's replicas and vGPUs).
func FaultTypes() map[string]FaultType {
	types := map[string]FaultType{
		network.TypeProxyLatency:     proxyType(network.TypeProxyLatency, false),
		network.TypeProxyThrottle:    proxyType(network.TypeProxyThrottle, false),
		network.TypeProxySlowClose:   proxyType(network.TypeProxySlowClose, false),
		network.TypeProxyResetPeer:   proxyType(network.TypeProxyResetPeer, false),
		network.TypeProxyBlackhole:   proxyType(network.TypeProxyBlackhole, false),
		network.TypeProxyLimitData:   proxyType(network.TypeProxyLimitData, false),
		network.TypeHTTPError:        proxyType(network.TypeHTTPError, true),
		network.TypeHTTPTTFB:         proxyType(network.TypeHTTPTTFB, true),
		network.TypeStreamStall:      proxyType(network.TypeStreamStall, true),
		network.TypeStreamCut:        proxyType(network.TypeStreamCut, true),
		network.TypeStreamChunkDelay: proxyType(network.TypeStreamChunkDelay, true),

		network.TypeNetnsLoss: netnsType(func() any { return &network.NetnsLossParams{} }, func(p any) error {
			return p.(*network.NetnsLossParams).WithDefaults().Validate()
		}),
		network.TypeNetnsPartition: netnsType(func() any { return &network.NetnsPartitionParams{} }, func(p any) error {
			return p.(*network.NetnsPartitionParams).WithDefaults().Validate()
		}),
		network.TypeNetnsBandwidth: netnsType(func() any { return &network.NetnsBandwidthParams{} }, func(p any) error {
			return p.(*network.NetnsBandwidthParams).WithDefaults().Validate()
		}),
		network.TypeNetnsDelay: netnsType(func() any { return &network.NetnsDelayParams{} }, func(p any) error {
			return p.(*network.NetnsDelayParams).WithDefaults().Validate()
		}),
	}
	maps.Copy(types, replicaFaultTypes())
	maps.Copy(types, gpuFaultTypes())
	return types
}

// faultTypeNames returns the names of FaultTypes, sorted.
func faultTypeNames(types map[string]FaultType) []string {
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// proxyType describes a toxic of the fault proxy. Its params are checked
// the way the proxy will run them: network.NewToxic applies the defaults
// and validates, here against a proxy that takes nothing.
func proxyType(typ string, l7 bool) FaultType {
	return FaultType{
		Target: TargetProxy,
		L7:     l7,
		NewParams: func() any {
			p, err := network.NewProxyParams(typ)
			if err != nil {
				// Unreachable: typ is one of network's own constants,
				// and a test checks that every one of them decodes.
				return &struct{}{}
			}
			return p
		},
		Check: func(params any) error {
			p, ok := params.(network.ProxyParams)
			if !ok {
				return errors.New("params: not the params of a proxy fault")
			}
			_, err := network.NewToxic("check", noProxy{}, p, 0)
			return err
		},
	}
}

func netnsType(newParams func() any, check func(any) error) FaultType {
	return FaultType{Target: TargetParams, NewParams: newParams, Check: check}
}

// noProxy is a network.Toxics that is never added to: NewToxic only needs
// a target to exist in order to check the params.
type noProxy struct{}

var _ network.Toxics = noProxy{}

// AddToxic implements network.Toxics; it is never called by NewToxic.
func (noProxy) AddToxic(context.Context, network.ToxicSpec) error {
	return errors.New("checking params only: no proxy")
}

// RemoveToxic implements network.Toxics.
func (noProxy) RemoveToxic(context.Context, string) error { return nil }

// ControlPath implements network.Toxics.
func (noProxy) ControlPath() string { return "" }

// problemMessages splits a validation error into one message per problem:
// the errors of the first errors.Join found down its chain of wrappers (the
// wrappers only name the fault again), nested joins flattened, or the error
// itself.
func problemMessages(err error) []string {
	for e := err; e != nil; {
		if _, ok := e.(interface{ Unwrap() []error }); ok {
			return joinLeaves(e)
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return []string{oneLine(err.Error())}
}

// joinLeaves returns the messages of the errors joined in e, joins inside
// it flattened.
func joinLeaves(e error) []string {
	j, ok := e.(interface{ Unwrap() []error })
	if !ok {
		return []string{oneLine(e.Error())}
	}
	var out []string
	for _, x := range j.Unwrap() {
		out = append(out, joinLeaves(x)...)
	}
	return out
}

// oneLine joins the lines of a multi-line message with "; ".
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
