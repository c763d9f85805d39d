package workload

import (
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Fields of a load beyond the workload's and the load shape's: the
// preset's name (an experiment's workload.preset, llmchaos load's
// --workload), a closed loop's ramp-up and the shard of a split load
// (llmchaos load's --ramp-up and --shard).
const (
	FieldPreset field.Path = "preset"
	FieldRampUp field.Path = "ramp_up"
	FieldShard  field.Path = "shard"
)

// Given is a workload as a front end gives it: a preset (or none), and
// the settings given on top of it, without defaults. Both front ends of a
// workload, an experiment's workload: mapping and llmchaos load's flags,
// resolve through Resolve, so that presets and defaults apply in one place.
type Given struct {
	Preset   string
	Workload Config
	Arrival  ArrivalConfig
	// NoCancel says the cancel share was set to 0: no cancels, whatever
	// the preset plans (a zero share is otherwise "not set").
	NoCancel bool
	// RampUp is the time a closed loop's virtual users start over (0: all
	// at once); it applies to a closed loop only.
	RampUp time.Duration
	// Shard is the part of the load this process sends (the zero Shard:
	// all of it); the load must split over its count.
	Shard Shard

	// parsed are the problems of the settings given as text (Set), and
	// unparsed their fields.
	parsed   field.Problems
	unparsed map[field.Path]bool
}

// textFields are the fields a front end may give as text (Set): their
// parsers, and where the value goes.
var textFields = map[field.Path]func(g *Given, text string) error{
	FieldRamp:              func(g *Given, s string) (err error) { g.Arrival.Ramp, err = ParseRamp(s); return err },
	FieldStages:            func(g *Given, s string) (err error) { g.Arrival.Stages, err = ParseStages(s); return err },
	FieldThinkTime:         func(g *Given, s string) (err error) { g.Arrival.ThinkTime, err = ParseDurationDist(s); return err },
	FieldInputTokens:       func(g *Given, s string) (err error) { g.Workload.InputTokens, err = ParseDist(s); return err },
	FieldOutputTokens:      func(g *Given, s string) (err error) { g.Workload.OutputTokens, err = ParseDist(s); return err },
	FieldTurns:             func(g *Given, s string) (err error) { g.Workload.Turns, err = ParseDist(s); return err },
	FieldCancelAfterTokens: func(g *Given, s string) (err error) { g.Workload.CancelAfterTokens, err = ParseDist(s); return err },
	FieldSessionThinkTime:  func(g *Given, s string) (err error) { g.Workload.ThinkTime, err = ParseDurationDist(s); return err },
	FieldCancelAfter:       func(g *Given, s string) (err error) { g.Workload.CancelAfter, err = ParseDurationDist(s); return err },
}

// requestField marks the text fields of the request shape (Config), not
// of the load shape.
var requestField = map[field.Path]bool{FieldInputTokens: true, FieldOutputTokens: true, FieldTurns: true,
	FieldCancelAfterTokens: true, FieldSessionThinkTime: true, FieldCancelAfter: true}

// TextField reports whether field f may be given as text (Set).
func TextField(f field.Path) bool { _, ok := textFields[f]; return ok }

// Set sets field f from text, as a command line gives it: a ramp R0:R1,
// stages DURATION:TARGET,..., a length distribution (512, uniform:100:300)
// or a duration distribution (1s, exponential:3s). Text that does not
// parse is a problem of f, which Resolve returns first. Set panics for a
// field that is not given as text (TextField): a front end's bug.
func (g *Given) Set(f field.Path, text string) {
	set, ok := textFields[f]
	if !ok {
		panic("workload: " + string(f) + " is not set from text")
	}
	if err := set(g, text); err != nil {
		g.parsed.AddNamed(f, ": %w", err)
		if g.unparsed == nil {
			g.unparsed = map[field.Path]bool{}
		}
		g.unparsed[f] = true
	}
}

// Resolved is a workload resolved and checked: the preset's configs
// with the settings given on top and the defaults filled in; the arrival
// config, when valid, is marked Checked.
type Resolved struct {
	Workload Config
	Arrival  ArrivalConfig
}

// Resolve resolves r: the preset's configs (if any), r's settings on top
// (Overlay's rules: a load shape given replaces the preset's), then the
// defaults. It returns every problem of the result keyed by field; the
// configs are returned even then. An unknown preset is a problem of
// FieldPreset, and the problems that follow are those of the workload
// without it.
//
// The settings given as text that did not parse (Set) come first, and
// when one of the request shape's did, no field of it is reported missing
// on top; the ramp-up is checked against
// the load shape, and a shard against the resolved load when nothing else
// is wrong.
func Resolve(r Given) (Resolved, field.Problems) {
	var (
		wc Config
		ac ArrivalConfig
		ps = append(field.Problems(nil), r.parsed...)
	)
	if r.Preset != "" {
		p, err := LookupPreset(r.Preset)
		if err != nil {
			var names []string
			for _, p := range Presets() {
				names = append(names, p.Name)
			}
			ps.Add(FieldPreset, "%s %q: unknown (want one of %s)", FieldPreset, r.Preset, strings.Join(names, ", "))
		} else {
			wc, ac = p.Workload, p.Arrival
		}
	}
	uw := r.Workload
	if r.NoCancel {
		uw.CancelShare, uw.CancelAfter, uw.CancelAfterTokens = 0, DurationDist{}, Dist{}
	}
	wc = wc.Overlay(uw)
	if r.NoCancel {
		wc.CancelShare, wc.CancelAfter, wc.CancelAfterTokens = 0, DurationDist{}, Dist{}
	}
	out := Resolved{Workload: wc.WithDefaults(), Arrival: ac.Overlay(r.Arrival).WithDefaults()}
	// A request setting that did not parse was the user's way to give
	// the workload: none is missing on top of it.
	given := false
	for f := range r.unparsed {
		given = given || requestField[f]
	}
	for _, p := range out.Workload.Problems() {
		if !p.Missing || !given {
			ps = append(ps, p)
		}
	}
	ac, aps := out.Arrival.Checked()
	out.Arrival = ac
	ps = append(ps, aps...)
	switch {
	case r.RampUp < 0:
		ps.AddNamed(FieldRampUp, " %v must not be negative", r.RampUp)
	case r.RampUp > 0 && out.Arrival.Mode() != ModeClosed:
		ps.Add(FieldRampUp, "%s applies to %s (closed loop) only", FieldRampUp, FieldConcurrency)
	}
	if len(ps) == 0 {
		sp, _ := field.Of(r.Shard.CheckSplit(out.Arrival))
		for _, p := range sp {
			ps = append(ps, field.Problem{Path: FieldShard, Format: "%s %s: " + p.Format, Args: append([]any{FieldShard, r.Shard}, p.Args...)})
		}
	}
	return out, ps
}
