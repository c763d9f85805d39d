package spec

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The fault schedule: warnings about faults whose effects would mix.
// Recovery is judged on the whole service, so a fault injected before the
// previous one's recovery can be seen counts against it; and two faults on
// the same target at once make neither's effect readable.

// scheduled is one fault of the schedule, as far as it is valid.
type scheduled struct {
	i          int
	name       string
	start, end time.Duration
	target     string // what it acts on; "" when it cannot be said
	all        bool   // a proxy fault on every endpoint (or a random share)
	endpoints  []int
}

// schedule warns about faults on the same target that overlap in time, and
// about a fault injected sooner after the previous fault's revert than
// recovery.window + recovery.hold.
func (v *validator) schedule() {
	var fs []scheduled
	for i, f := range v.s.Faults {
		if f.At < 0 || f.Duration <= 0 || f.At.D() > math.MaxInt64-f.Duration.D() {
			continue
		}
		ft, known := v.types[f.Type]
		if !known {
			continue
		}
		fs = append(fs, v.scheduled(i, f, ft))
	}
	slices.SortStableFunc(fs, func(a, b scheduled) int { return cmp.Compare(a.start, b.start) })
	window, hold := v.s.Recovery.Window.D(), v.s.Recovery.Hold.D()
	if window <= 0 {
		window = DefaultRecoveryWindow
	}
	if hold <= 0 {
		hold = DefaultRecoveryHold
	}
	for j, b := range fs {
		p := index("faults", b.i) + ".at"
		for _, a := range fs[:j] {
			if b.start < a.end && sameTarget(a, b) {
				v.iss.warn(p, "%q (from %v to %v) overlaps %q (faults[%d], from %v to %v) on the same target: their effects mix and neither can be read on its own; start it at %v or later", b.name, b.start, b.end, a.name, a.i, a.start, a.end, a.end+window+hold)
			}
		}
		// The fault reverted last before b starts: its recovery needs
		// window + hold with no new fault.
		var prev *scheduled
		for k := range fs[:j] {
			a := &fs[k]
			if a.end <= b.start && (prev == nil || a.end > prev.end) {
				prev = a
			}
		}
		if prev != nil && b.start-prev.end < window+hold {
			v.iss.warn(p, "%q starts %v after %q is reverted, less than recovery.window + recovery.hold (%v + %v): its effects count against %q's recovery; start it at %v or later", b.name, b.start-prev.end, prev.name, window, hold, prev.name, prev.end+window+hold)
		}
	}
}

// scheduled describes fault i for the schedule checks.
func (v *validator) scheduled(i int, f Fault, ft FaultType) scheduled {
	s := scheduled{i: i, name: f.Name, start: f.At.D(), end: f.At.D() + f.Duration.D()}
	if ft.Target == TargetProxy {
		t := f.Target
		switch {
		case t != nil && t.Proxy != "":
			s.target = "proxy " + t.Proxy
		case t != nil && len(t.Endpoints) > 0 && t.Count == 0 && t.Percent == 0:
			s.target, s.endpoints = "endpoints", slices.Sorted(slices.Values(t.Endpoints))
		default:
			s.target, s.all = "endpoints", true
		}
		return s
	}
	// A fault that names its target in params: the family of its type and
	// the params that say where it acts.
	family, _, _ := strings.Cut(f.Type, ".")
	var where []string
	for _, k := range []string{"netns", "interface", "replica", "replicas", "container", "pid", "pid_file", "state_file", "pod", "namespace", "selector", "label_selector", "device", "gpu"} {
		if x, ok := f.Params[k]; ok {
			where = append(where, fmt.Sprintf("%s=%v", k, x))
		}
	}
	s.target = family + " " + strings.Join(where, ",")
	return s
}

// sameTarget reports whether a and b may act on the same thing.
func sameTarget(a, b scheduled) bool {
	if a.target == "" || b.target == "" || a.target != b.target {
		return false
	}
	if a.target != "endpoints" || a.all || b.all {
		return true
	}
	for _, e := range a.endpoints {
		if slices.Contains(b.endpoints, e) {
			return true
		}
	}
	return false
}
