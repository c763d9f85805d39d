package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Params are the parameters every replica fault takes: which replicas
// match, and how many of them it acts on.
//
//	params: {target: {driver: process, state_file: state.json}, select: {mode: one, min_available: 1}}
type Params struct {
	// Target says which replicas match.
	Target TargetParams `json:"target" yaml:"target" doc:"which replicas match: a state file, pid file, process name pattern, containers or pods (required unless the experiment's target is sim or kubernetes; see docs/faults.md's Process targets and docs/kubernetes.md)" required:"false"`
	// Select says how many of those that are up the fault acts on (default
	// one, picked at random with the run's seeded source).
	Select faults.Selection `json:"select,omitzero" yaml:"select,omitempty" doc:"how many of the matching replicas the fault acts on"`
}

// Targets returns the target part of p (promoted to every action's
// params), so a runner can watch the replicas a fault acts on: in
// resolved params, with its defaults filled in (faults.Type.Defaults).
func (p *Params) Targets() *TargetParams { return &p.Target }

// Selection returns the selection part of p (promoted to every action's
// params), so that a dry run can say what the fault would pick: as
// resolved, its defaults filled in by the experiment's resolution
// (faults.Type.Defaults).
func (p *Params) Selection() faults.Selection { return p.Select }

// WithDefaults returns p with its defaults filled in.
func (p Params) WithDefaults() Params {
	p.Target = p.Target.WithDefaults()
	p.Select = p.Select.WithDefaults()
	return p
}

func (p Params) problems() field.Problems {
	ps := p.Target.problems()
	ps = append(ps, p.Select.Problems()...)
	return ps
}

// Option configures a replica fault.
type Option func(*options)

type options struct {
	driver  Driver
	applied func(Target)
	owner   *ProcRef
}

// OwnedBy says that the replicas die with process owner (the runner that
// started the simulator they belong to): the revert of a kill, stop or
// restart records it, and counts the replica as reverted once owner is gone
// (nothing is left that could bring it back, and nothing of it is left
// applied), instead of waiting for a supervisor that ended with the run.
func OwnedBy(owner ProcRef) Option { return func(o *options) { o.owner = &owner } }

// WithDriver makes the fault act through d instead of the driver its target
// parameters name (tests; a runner that shares one driver).
func WithDriver(d Driver) Option { return func(o *options) { o.driver = d } }

// OnApplied makes the fault call fn with every target it acted on, once the
// action is done, so that the run can record which replicas a fault hit.
// fn may be called from several goroutines at once.
func OnApplied(fn func(Target)) Option { return func(o *options) { o.applied = fn } }

// fault is what every replica fault does: list the targets, pick some,
// apply the action to each (at the same moment), and undo it.
type fault struct {
	typ, name string
	p         Params
	act       Action
	rng       *rand.Rand
	o         options
}

func newFault(typ, name string, p Params, act Action, rng *rand.Rand, opts []Option) *fault {
	f := &fault{typ: typ, name: name, p: p, act: act, rng: rng}
	for _, opt := range opts {
		opt(&f.o)
	}
	if f.o.owner != nil {
		f.act.Owner = f.o.owner
	}
	return f
}

// target describes the fault's target for the run's record.
func (f *fault) target() string { return f.p.Target.String() + ", " + f.p.Select.String() }

// inject picks the targets and applies the action to every one of them at
// once. If any fails, the ones that succeeded are undone (a killed or
// stopped process by waiting for its supervisor to bring it back) and the
// error returned. rng is used only here: Inject must not run concurrently with
// itself.
func (f *fault) inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	d := f.o.driver
	if d == nil {
		var err error
		if d, err = Open(f.p.Target); err != nil {
			return nil, f.wrap(err)
		}
	}
	all, err := d.Targets(ctx)
	if err != nil {
		return nil, f.wrap(err)
	}
	picked, err := faults.Choose(f.p.Select, f.rng, all, func(t Target) bool { return t.Up })
	if err != nil {
		return nil, f.wrap(fmt.Errorf("%w; targets: %s", err, describe(all)))
	}
	undos := make([]faults.Undo, len(picked))
	errs := make([]error, len(picked))
	var wg sync.WaitGroup
	for i, t := range picked {
		wg.Go(func() {
			undos[i], errs[i] = d.Apply(ctx, log, t, f.act)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", t, errs[i])
			} else if f.o.applied != nil {
				f.o.applied(t)
			}
		})
	}
	wg.Wait()
	undo := faults.JoinUndos(undos)
	if err := errors.Join(errs...); err != nil {
		var done []string
		for i, t := range picked {
			if errs[i] == nil {
				done = append(done, t.ID)
			}
		}
		undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultBackTimeout)
		uerr := undo(undoCtx)
		cancel()
		if uerr != nil {
			err = errors.Join(err, fmt.Errorf("undo the targets already done (%s): %w: %w", strings.Join(done, ", "), faults.ErrUndoIncomplete, uerr))
		} else if len(done) > 0 {
			err = fmt.Errorf("%w (already done, and undone: %s)", err, strings.Join(done, ", "))
		}
		return nil, f.wrap(err)
	}
	return undo, nil
}

func (f *fault) wrap(err error) error { return fmt.Errorf("%s %q: %w", f.typ, f.name, err) }

// describe lists targets with their state, for errors.
func describe(ts []Target) string {
	if len(ts) == 0 {
		return "none"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		state := "down"
		if t.Up {
			state = "up"
		}
		parts[i] = t.ID + " " + state
	}
	return strings.Join(parts, ", ")
}
