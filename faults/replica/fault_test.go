package replica

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/faults"
)

// fakeDriver is a Driver over a fixed list of targets that records what is
// applied and undone, and fails Apply for the targets in fail. It is a fake
// behind the narrow Driver interface, for the fault's own logic; the real
// drivers are tested against real processes and containers.
type fakeDriver struct {
	targets []Target
	fail    map[string]bool

	mu      sync.Mutex
	applied map[string]int // target ID → times applied and not undone
	undone  []string
}

func (d *fakeDriver) Targets(context.Context) ([]Target, error) { return d.targets, nil }

func (d *fakeDriver) Apply(_ context.Context, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	if d.fail[t.ID] {
		return nil, errors.New("injected failure")
	}
	if err := log.Will(faults.RevertSpec{Kind: "fake", Data: []byte(`"` + t.ID + `"`)}); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.applied == nil {
		d.applied = map[string]int{}
	}
	d.applied[t.ID]++
	d.mu.Unlock()
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.applied[t.ID]--
			d.undone = append(d.undone, t.ID)
		})
		return nil
	}, nil
}

// left returns the targets applied and not undone.
func (d *fakeDriver) left() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for id, n := range d.applied {
		if n != 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func threeUp() []Target {
	return []Target{{ID: "a", Up: true, Index: 0}, {ID: "b", Up: true, Index: 1}, {ID: "c", Up: true, Index: 2}}
}

func TestPauseUndoesEveryTarget(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{targets: threeUp()}
	var (
		mu  sync.Mutex
		hit []string
	)
	p, err := NewPause("freeze", PauseParams{Params: Params{Target: TargetParams{StateFile: "x"}, Select: faults.Selection{Mode: faults.SelectAll}}},
		testRand(1), WithDriver(d), OnApplied(func(t Target) { mu.Lock(); hit = append(hit, t.ID); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := p.Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(hit)
	if got := d.left(); !slices.Equal(got, []string{"a", "b", "c"}) || !slices.Equal(hit, got) {
		t.Fatalf("applied %v, reported %v; want a, b, c", got, hit)
	}
	if n := len(log.all()); n != 3 {
		t.Errorf("revert specs recorded = %d, want 3 (one before each change)", n)
	}
	for range 2 { // idempotent
		if err := undo(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.left(); len(got) != 0 {
		t.Errorf("left applied after Undo: %v", got)
	}
	if len(d.undone) != 3 {
		t.Errorf("undone %v, want each target once", d.undone)
	}
}

func TestInjectIsAllOrNothing(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{targets: threeUp(), fail: map[string]bool{"b": true}}
	p, err := NewPause("freeze", PauseParams{Params: Params{Target: TargetParams{StateFile: "x"}, Select: faults.Selection{Mode: faults.SelectAll}}},
		testRand(1), WithDriver(d))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := p.Inject(context.Background(), faults.NopLog{})
	if err == nil || undo != nil {
		t.Fatalf("Inject() = %v, %v; want an error and no Undo", undo != nil, err)
	}
	for _, w := range []string{`replica.pause "freeze"`, "b: injected failure"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Inject() error = %q, want it to mention %q", err, w)
		}
	}
	if got := d.left(); len(got) != 0 {
		t.Errorf("targets left applied after a failed Inject: %v, want none", got)
	}
}

func TestKillFailureNamesWhatWasDone(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{targets: threeUp(), fail: map[string]bool{"c": true}}
	k, err := NewKill("boom", KillParams{Params: Params{Target: TargetParams{StateFile: "x"}, Select: faults.Selection{Mode: faults.SelectAll}}},
		testRand(1), WithDriver(d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Inject(context.Background(), faults.NopLog{})
	if err == nil || !strings.Contains(err.Error(), "already done, and undone: a, b") {
		t.Errorf("Inject() error = %v, want it to name a and b as done and undone", err)
	}
	if got := d.left(); len(got) != 0 {
		t.Errorf("targets left applied after a failed kill: %v, want none", got)
	}
}

func TestInjectRefusesSelection(t *testing.T) {
	t.Parallel()
	d := &fakeDriver{targets: []Target{{ID: "a", Up: true}, {ID: "b", Up: false}, {ID: "c", Up: true}}}
	k, err := NewKill("k", KillParams{Params: Params{Target: TargetParams{StateFile: "x"},
		Select: faults.Selection{Mode: faults.SelectOne, MinAvailable: 2}}}, testRand(1), WithDriver(d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Inject(context.Background(), faults.NopLog{})
	if !errors.Is(err, faults.ErrMinAvailable) {
		t.Fatalf("Inject() error = %v, want ErrMinAvailable", err)
	}
	if !strings.Contains(err.Error(), "targets: a up, b down, c up") {
		t.Errorf("Inject() error = %q, want it to list the targets", err)
	}
	if got := d.left(); len(got) != 0 {
		t.Errorf("applied %v after a refused selection, want nothing", got)
	}
}

func TestNewFaultsValidate(t *testing.T) {
	t.Parallel()
	bad := Params{Target: TargetParams{Driver: "nope"}}
	for name, err := range map[string]error{
		TypeKill:    second(NewKill("x", KillParams{Params: bad}, nil)),
		TypeStop:    second(NewStop("x", StopParams{Params: bad}, nil)),
		TypePause:   second(NewPause("x", PauseParams{Params: bad}, nil)),
		TypeRestart: second(NewRestart("x", RestartParams{Params: bad}, nil)),
	} {
		if err == nil || !strings.Contains(err.Error(), name+` "x": target.driver: "nope"`) {
			t.Errorf("New for %s = %v, want a validation error naming the type and fault", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
