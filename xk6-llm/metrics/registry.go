package metrics

import (
	"fmt"
	"sync"
)

// Registry is a run's table of metrics: the built-ins, then the custom
// metrics registered at run time, in registration order. Its methods are
// safe for concurrent use; a Registry is its owner's (there is no default
// one).
type Registry struct {
	mu    sync.RWMutex
	rows  []Metric
	index map[string]int
}

// NewRegistry returns a Registry holding the built-in metrics.
func NewRegistry() *Registry {
	b := Builtin()
	r := &Registry{rows: b, index: make(map[string]int, len(b))}
	for i, m := range b {
		r.index[m.Name] = i
	}
	return r
}

// Register adds a custom metric and returns its row. name must be a valid
// name (ValidName) that no built-in metric has; unit is free text ("ms"
// makes a trend a duration, in milliseconds). Registering the same name
// again with the same kind and unit returns the existing row, as a script
// that declares a metric in each iteration expects; any other clash is an
// error.
func (r *Registry) Register(name string, kind Kind, unit string) (Metric, error) {
	if err := ValidName(name); err != nil {
		return Metric{}, fmt.Errorf("register metric: %w", err)
	}
	if kind < Trend || kind > Gauge {
		return Metric{}, fmt.Errorf("register metric %q: unknown kind %d (want trend, rate, counter or gauge)", name, kind)
	}
	if kind == Rate && unit == "" {
		unit = UnitRatio
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.index[name]; ok {
		m := r.rows[i]
		switch {
		case m.Builtin:
			return Metric{}, fmt.Errorf("register metric %q: a built-in %s has that name; choose another name", name, m.Kind)
		case m.Kind != kind || m.Unit != unit:
			return Metric{}, fmt.Errorf("register metric %q as a %s in %q: already registered as a %s in %q", name, kind, unit, m.Kind, m.Unit)
		}
		return m, nil
	}
	m := Metric{
		Name: name, Kind: kind, Unit: unit, Default: true,
		JSONKey: name, PromName: PromNameOf(name, kind, unit),
		PromHelp:    fmt.Sprintf("Custom %s %s.", kind, name),
		Description: "custom " + kind.String(),
	}
	r.index[name] = len(r.rows)
	r.rows = append(r.rows, m)
	return m, nil
}

// Lookup returns the metric named name (exact, case-sensitive).
func (r *Registry) Lookup(name string) (Metric, bool) {
	if r == nil {
		return Metric{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.index[name]
	if !ok {
		return Metric{}, false
	}
	return r.rows[i], true
}

// All returns every metric, built-ins first, in a new slice.
func (r *Registry) All() []Metric {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Metric(nil), r.rows...)
}

// Custom returns the custom metrics in registration order, in a new slice.
func (r *Registry) Custom() []Metric {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Metric
	for _, m := range r.rows {
		if !m.Builtin {
			out = append(out, m)
		}
	}
	return out
}
