package network

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Family is the name of this fault family, as faults.Type.Family.
const Family = "network"

// Types returns the fault types of this family: the one explicit list of
// them (no init() registration). Each type is described in the file of its
// fault; adding one is that file plus one line here.
func Types() []faults.Type {
	return []faults.Type{
		latencyType(),
		throttleType(),
		slowCloseType(),
		resetPeerType(),
		blackholeType(),
		limitDataType(),
		httpErrorType(),
		ttfbType(),
		stallType(),
		cutType(),
		chunkDelayType(),
		duplicateType(),
		dropType(),
		reorderType(),
		spliceType(),
		flipType(),
		resumeType(),
		netnsLossType(),
		netnsPartitionType(),
		netnsBandwidthType(),
		netnsDelayType(),
	}
}

// toxicType describes a toxic of the fault proxy whose params are a P: its
// params are checked the way the proxy will run them (NewToxic validates,
// here against a proxy that takes nothing), and it is built as a toxic in
// the proxy given by the build environment. NewToxic also applies the
// defaults, for toxics built in Go by hand; resolved params have them.
func toxicType[P any, PP interface {
	*P
	ProxyParams
}](name, summary string, l7 bool, lifetime faults.Lifetime, example string) faults.Type {
	return faults.Type{
		Name: name, Family: Family, Summary: summary, Lifetime: lifetime,
		Target: faults.TargetProxy, L7: l7, Example: example,
		NewParams: func() any { return PP(new(P)) },
		Check: func(params any) field.Problems {
			p, ok := params.(ProxyParams)
			if !ok {
				return field.Problems{field.Errorf("", "not the params of a proxy fault")}
			}
			_, err := NewToxic("check", noProxy{}, p, 0)
			return faults.ParamProblems(err)
		},
		Defaults: func(params any) {
			p := PP(params.(*P))
			*p = *p.withDefaults().(PP)
		},
		Build: func(env faults.BuildEnv, params any) (faults.Fault, error) {
			p, ok := params.(ProxyParams)
			if !ok {
				return nil, fmt.Errorf("fault %q: params are not those of a proxy fault", env.Name)
			}
			px, ok := env.Proxy.(Toxics)
			if !ok {
				return nil, fmt.Errorf("fault %q (%s): no proxy to act through", env.Name, name)
			}
			return NewToxic(env.Name, px, p, env.Seed)
		},
		Reverters: ProxyReverters,
	}
}

// netnsType describes a kernel-level fault in a network namespace, whose
// params are a P.
func netnsType[P interface{ WithDefaults() P }](name, summary string, example string, check func(P) error, build func(string, P) (faults.Fault, error)) faults.Type {
	return faults.Type{
		Name: name, Family: Family, Summary: summary, Lifetime: faults.Sustained,
		Target: faults.TargetParams, Example: example,
		NewParams: func() any { return new(P) },
		Check:     func(p any) field.Problems { return faults.ParamProblems(check(*p.(*P))) },
		Defaults:  faults.DefaultsBy[P](),
		Build: func(env faults.BuildEnv, p any) (faults.Fault, error) {
			return build(env.Name, *p.(*P))
		},
		Reverters: KernelReverters,
	}
}

// noProxy is a Toxics that is never added to: NewToxic only needs a target
// to exist in order to check the params.
type noProxy struct{}

var _ Toxics = noProxy{}

// AddToxic implements Toxics; it is never called by NewToxic.
func (noProxy) AddToxic(context.Context, ToxicSpec) error {
	return errors.New("checking params only: no proxy")
}

// RemoveToxic implements Toxics.
func (noProxy) RemoveToxic(context.Context, string) error { return nil }

// ControlPath implements Toxics.
func (noProxy) ControlPath() string { return "" }

// Acted implements Toxics.
func (noProxy) Acted(context.Context, string) (int64, error) { return 0, nil }

// Namespace returns the network namespace the fault acts in, so a runner
// can check that it exists before the run (promoted to every kernel-level
// fault's params).
func (t NetnsTarget) Namespace() string { return t.Netns }
