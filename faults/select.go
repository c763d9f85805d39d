package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/llmchaos/llmchaos/internal/field"
)

// SelectMode says how many of the matching targets a fault acts on.
type SelectMode string

// Selection modes, as in AWS FIS target selection and Chaos Mesh's mode.
const (
	// SelectOne picks one target at random.
	SelectOne SelectMode = "one"
	// SelectAll picks every target that is up.
	SelectAll SelectMode = "all"
	// SelectCount picks Value targets at random.
	SelectCount SelectMode = "count"
	// SelectPercent picks Value percent of the matching targets (up or
	// not), rounded down but at least one, at random.
	SelectPercent SelectMode = "percent"
)

// Selection bounds the blast radius of a fault that acts on some of several
// targets (replicas, GPUs):
//
//	select: {mode: one|all|count|percent, value: N, min_available: M}
//
// Only targets that are up are chosen (killing a replica that is already
// down tests nothing), at random with a seeded *rand.Rand, so a run replays.
// A selection that would leave fewer than MinAvailable targets up is refused
// before anything is done.
type Selection struct {
	// Mode is one, all, count or percent (default one).
	Mode SelectMode `json:"mode,omitempty" yaml:"mode,omitempty" doc:"one, all, count or percent of the matching targets that are up" default:"one"`
	// Value is the count (count mode, at least 1) or the percentage
	// (percent mode, 1 to 100); the other modes take none.
	Value int `json:"value,omitempty" yaml:"value,omitempty" doc:"the count (count mode) or the percentage (percent mode)"`
	// MinAvailable is how many targets must still be up after the fault
	// acts; 0 sets no floor.
	MinAvailable int `json:"min_available,omitempty" yaml:"min_available,omitempty" doc:"targets that must still be up after the fault acts (0: no floor)" default:"0"`
}

// WithDefaults returns s with its defaults filled in: mode one.
func (s Selection) WithDefaults() Selection {
	if s.Mode == "" {
		s.Mode = SelectOne
	}
	return s
}

// Validate reports every problem with s at once (Problems); call it after
// WithDefaults.
func (s Selection) Validate() error { return s.Problems().Err() }

// Problems returns every problem with s, keyed by its field under the
// params (select.value); call it after WithDefaults.
func (s Selection) Problems() field.Problems {
	var ps field.Problems
	switch s.Mode {
	case SelectOne, SelectAll:
		if s.Value != 0 {
			ps.AddNamed("select.value", ": %d given, but mode %s takes no value (only count and percent do)", s.Value, s.Mode)
		}
	case SelectCount:
		if s.Value < 1 {
			ps.AddNamed("select.value", ": %d, mode count needs at least 1", s.Value)
		}
	case SelectPercent:
		if s.Value < 1 || s.Value > 100 {
			ps.AddNamed("select.value", ": %d, mode percent needs 1 to 100", s.Value)
		}
	default:
		ps.AddNamed("select.mode", ": %q, want one, all, count or percent", s.Mode)
	}
	if s.MinAvailable < 0 {
		ps.AddNamed("select.min_available", ": %d must not be negative", s.MinAvailable)
	}
	return ps
}

// String describes s as it is written in an experiment file.
func (s Selection) String() string {
	str := "mode " + string(s.Mode)
	if s.Mode == SelectCount || s.Mode == SelectPercent {
		str += fmt.Sprintf(" value %d", s.Value)
	}
	if s.MinAvailable > 0 {
		str += fmt.Sprintf(" min_available %d", s.MinAvailable)
	}
	return str
}

// Errors a refused selection wraps (compare with errors.Is).
var (
	// ErrNoTargets: nothing matches the fault's target.
	ErrNoTargets = errors.New("no target matches")
	// ErrNotEnoughUp: the selection asks for more targets than are up.
	ErrNotEnoughUp = errors.New("not enough targets are up")
	// ErrMinAvailable: acting on the selection would leave fewer targets up
	// than min_available.
	ErrMinAvailable = errors.New("selection would break min_available")
)

// SelectionError is a refused selection, with the figures that refused it.
type SelectionError struct {
	// Err is ErrNoTargets, ErrNotEnoughUp or ErrMinAvailable.
	Err error
	// Selection is the refused selection.
	Selection Selection
	// Total is the number of matching targets, Up how many of them are up,
	// Want how many the selection picks.
	Total, Up, Want int
}

// Error says why the selection was refused and what the numbers were.
func (e *SelectionError) Error() string {
	switch {
	case errors.Is(e.Err, ErrNoTargets):
		return fmt.Sprintf("select %s: %v", e.Selection, e.Err)
	case errors.Is(e.Err, ErrMinAvailable):
		return fmt.Sprintf("select %s: refused: acting on %d of the %d targets up would leave %d up, fewer than min_available %d (%d match in all)",
			e.Selection, e.Want, e.Up, e.Up-e.Want, e.Selection.MinAvailable, e.Total)
	case e.Up == 0:
		return fmt.Sprintf("select %s: refused: none of the %d targets that match is up", e.Selection, e.Total)
	default:
		return fmt.Sprintf("select %s: refused: it picks %d targets but only %d of the %d that match are up",
			e.Selection, e.Want, e.Up, e.Total)
	}
}

// Unwrap returns the sentinel error.
func (e *SelectionError) Unwrap() error { return e.Err }

// Want returns how many targets s picks out of total matching targets of
// which up are up; it does not check that they are enough.
func (s Selection) Want(total, up int) int {
	switch s.Mode {
	case SelectAll:
		return up
	case SelectCount:
		return s.Value
	case SelectPercent:
		return max(1, total*s.Value/100)
	default:
		return 1
	}
}

// Choose picks the targets a fault acts on from items, all the targets that
// match, in a stable order (the order of the result follows it). up says
// whether a target is up; only those are picked, uniformly at random with
// rng (which may be nil only when nothing is left to chance: mode all, or a
// pick of every target up). It returns a *SelectionError, and picks nothing,
// when nothing matches, when fewer are up than the selection wants, or when
// acting on the pick would leave fewer than s.MinAvailable up. s must be
// valid (WithDefaults, then Validate).
func Choose[T any](s Selection, rng *rand.Rand, items []T, up func(T) bool) ([]T, error) {
	var ups []int
	for i, it := range items {
		if up(it) {
			ups = append(ups, i)
		}
	}
	want := s.Want(len(items), len(ups))
	serr := &SelectionError{Selection: s, Total: len(items), Up: len(ups), Want: want}
	switch {
	case len(items) == 0:
		serr.Err = ErrNoTargets
		return nil, serr
	case want < 1 || want > len(ups):
		serr.Err = ErrNotEnoughUp
		return nil, serr
	case len(ups)-want < s.MinAvailable:
		serr.Err = ErrMinAvailable
		return nil, serr
	}
	if want < len(ups) {
		if rng == nil {
			return nil, fmt.Errorf("select %s: no random source to pick %d of %d targets", s, want, len(ups))
		}
		// A partial Fisher-Yates shuffle: the first want are a uniform pick.
		for i := range want {
			j := i + rng.IntN(len(ups)-i)
			ups[i], ups[j] = ups[j], ups[i]
		}
		ups = ups[:want]
		slices.Sort(ups)
	}
	out := make([]T, len(ups))
	for k, i := range ups {
		out[k] = items[i]
	}
	return out, nil
}
