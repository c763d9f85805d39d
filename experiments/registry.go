package experiments

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
)

// buildFault builds fault f of type ft from its decoded params. A proxy
// fault is one fault per proxy it acts through (each with its own seed),
// injected together.
func buildFault(ft spec.FaultType, env faults.BuildEnv, f spec.Fault, params any, proxies []*runProxy) (faults.Fault, error) {
	if ft.Build == nil {
		return nil, fmt.Errorf("fault %q: type %s has no builder", f.Name, f.Type)
	}
	if ft.Target != spec.TargetProxy {
		return ft.Build(env, params)
	}
	if len(proxies) == 0 {
		return nil, fmt.Errorf("fault %q (%s): no proxy to act through", f.Name, f.Type)
	}
	all := make(multiFault, 0, len(proxies))
	seed := env.Seed
	for i, px := range proxies {
		env.Proxy, env.Seed = px.toxics, seed+uint64(i)
		t, err := ft.Build(env, params)
		if err != nil {
			return nil, err
		}
		all = append(all, t)
	}
	return all, nil
}

// netnsOf returns the network namespace the params of a kernel-level
// fault name, "" for other faults.
func netnsOf(params any) string {
	if p, ok := params.(interface{ Namespace() string }); ok {
		return p.Namespace()
	}
	return ""
}

// multiFault injects several faults as one: all of them or none. Its
// Undo reverts them in reverse order and joins their errors.
type multiFault []faults.Fault

var _ faults.Fault = multiFault(nil)

// Inject implements faults.Fault: when one part fails, the parts already
// injected are reverted before it returns.
func (m multiFault) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undos := make([]faults.Undo, 0, len(m))
	for _, f := range m {
		u, err := f.Inject(ctx, log)
		if err != nil {
			undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRevertTimeout)
			defer cancel()
			return nil, errors.Join(err, joinUndos(undos)(undoCtx))
		}
		undos = append(undos, u)
	}
	return joinUndos(undos), nil
}

// Target describes where the parts act, for the run's record.
func (m multiFault) Target() string {
	parts := make([]string, 0, len(m))
	for _, f := range m {
		if d, ok := f.(interface{ Target() string }); ok {
			parts = append(parts, d.Target())
		}
	}
	return strings.Join(parts, "; ")
}

// joinUndos returns an Undo that runs undos last first and joins their
// errors. Each Undo is idempotent, so the joined one is too.
func joinUndos(undos []faults.Undo) faults.Undo {
	return func(ctx context.Context) error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			if err := undos[i](ctx); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}
