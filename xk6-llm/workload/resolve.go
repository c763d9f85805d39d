package workload

import (
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
)

// FieldPreset is the field that names a preset (an experiment's
// workload.preset, llmchaos load's --workload).
const FieldPreset field.Path = "preset"

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
func Resolve(r Given) (Resolved, field.Problems) {
	var (
		wc Config
		ac ArrivalConfig
		ps field.Problems
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
	ps = append(ps, out.Workload.Problems()...)
	ac, aps := out.Arrival.Checked()
	out.Arrival = ac
	ps = append(ps, aps...)
	return out, ps
}
