package promexpo

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Type is a metric family's type; the values are those of the protobuf
// enum io.prometheus.client.MetricType.
type Type uint8

// The metric types. Summary is only ever parsed, never registered.
const (
	CounterType   Type = 0
	GaugeType     Type = 1
	SummaryType   Type = 2
	UntypedType   Type = 3
	HistogramType Type = 4
)

// String returns the type as the text format's # TYPE line spells it.
func (t Type) String() string {
	switch t {
	case CounterType:
		return "counter"
	case GaugeType:
		return "gauge"
	case SummaryType:
		return "summary"
	case HistogramType:
		return "histogram"
	}
	return "untyped"
}

// Label is one label pair.
type Label struct{ Name, Value string }

// Family is a gathered or parsed metric family.
type Family struct {
	Name, Help string
	Type       Type
	Metrics    []Metric
}

// Metric is one series of a family: its labels sorted by name, and its
// value (counter, gauge, untyped) or histogram.
type Metric struct {
	Labels    []Label
	Value     float64
	Histogram *HistogramValue
	// Quantiles are a parsed summary's; its count and sum are in
	// Histogram.
	Quantiles []Quantile
	// TimestampMs is the sample's timestamp (ms since the epoch) when
	// HasTimestamp; only parsed pages have one.
	TimestampMs  int64
	HasTimestamp bool
	// Created is when the series was created (zero when unknown); the
	// protobuf form carries it for counters and histograms.
	Created time.Time
}

// Label returns the value of the label name and whether m has it.
func (m *Metric) Label(name string) (string, bool) {
	for _, l := range m.Labels {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// Opts names a metric.
type Opts struct {
	Name, Help string
	// ConstLabels are labels with a fixed value on every series of the
	// metric.
	ConstLabels map[string]string
}

// Gatherer is what Handler serves.
type Gatherer interface {
	// Gather returns a snapshot of the families, sorted by name.
	Gather() []Family
}

// Registry holds metric families. Make one with NewRegistry; the nil
// Registry makes metrics that are exported nowhere.
type Registry struct {
	labels   []Label // on every series
	mu       sync.Mutex
	families map[string]*family
}

var _ Gatherer = (*Registry)(nil)

// NewRegistry returns an empty registry whose series all carry labels
// (those with an empty value are left out).
func NewRegistry(labels map[string]string) *Registry {
	r := &Registry{families: make(map[string]*family)}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if labels[k] != "" {
			r.labels = append(r.labels, Label{k, labels[k]})
		}
	}
	return r
}

// family is one registered family and its series.
type family struct {
	name, help string
	typ        Type
	constant   []Label // sorted by name
	labelNames []string
	newChild   func() child

	mu       sync.RWMutex
	children map[string]*entry // by label values joined with 0xff
}

type entry struct {
	values  []string
	created time.Time
	c       child
}

// child is one series' value holder.
type child interface{ fill(*Metric) }

// ErrRegistered is returned (wrapped) when a family of the same name is
// already registered.
var ErrRegistered = errors.New("metric already registered")

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' || colon && c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// newFamily validates o and labels, and registers the family on r unless
// r is nil.
func (r *Registry) newFamily(o Opts, typ Type, labels []string, newChild func() child) (*family, error) {
	if !validName(o.Name, true) {
		return nil, fmt.Errorf("metric name %q: want [a-zA-Z_:][a-zA-Z0-9_:]*", o.Name)
	}
	f := &family{name: o.Name, help: o.Help, typ: typ, labelNames: slices.Clone(labels), newChild: newChild,
		children: make(map[string]*entry)}
	if r != nil {
		f.constant = slices.Clone(r.labels)
	}
	for _, k := range slices.Sorted(maps.Keys(o.ConstLabels)) {
		f.constant = append(f.constant, Label{k, o.ConstLabels[k]})
	}
	seen := make(map[string]bool)
	names := slices.Clone(labels)
	for _, l := range f.constant {
		names = append(names, l.Name)
	}
	for _, n := range names {
		switch {
		case !validName(n, false) || strings.HasPrefix(n, "__"):
			return nil, fmt.Errorf("metric %s: label name %q: want [a-zA-Z_][a-zA-Z0-9_]*, not starting with __", o.Name, n)
		case seen[n]:
			return nil, fmt.Errorf("metric %s: label %q given twice", o.Name, n)
		case typ == HistogramType && n == "le":
			return nil, fmt.Errorf("metric %s: a histogram cannot have the label le", o.Name)
		}
		seen[n] = true
	}
	slices.SortFunc(f.constant, func(a, b Label) int { return cmp.Compare(a.Name, b.Name) })
	if r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, dup := r.families[o.Name]; dup {
			return nil, fmt.Errorf("metric %s: %w", o.Name, ErrRegistered)
		}
		r.families[o.Name] = f
	}
	return f, nil
}

// with returns the child of the label values lvs, creating it.
func (f *family) with(lvs []string) child {
	if len(lvs) != len(f.labelNames) {
		panic(fmt.Sprintf("metric %s: %d label values for the labels %q", f.name, len(lvs), f.labelNames))
	}
	key := strings.Join(lvs, "\xff")
	f.mu.RLock()
	e := f.children[key]
	f.mu.RUnlock()
	if e != nil {
		return e.c
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.children[key]; e != nil {
		return e.c
	}
	e = &entry{values: slices.Clone(lvs), created: time.Now(), c: f.newChild()}
	f.children[key] = e
	return e.c
}

// gather returns the family's snapshot, its series sorted by labels.
func (f *family) gather() Family {
	out := Family{Name: f.name, Help: f.help, Type: f.typ}
	f.mu.RLock()
	entries := slices.Collect(maps.Values(f.children))
	f.mu.RUnlock()
	for _, e := range entries {
		m := Metric{Labels: slices.Clone(f.constant), Created: e.created}
		for i, n := range f.labelNames {
			m.Labels = append(m.Labels, Label{n, e.values[i]})
		}
		slices.SortFunc(m.Labels, func(a, b Label) int { return cmp.Compare(a.Name, b.Name) })
		e.c.fill(&m)
		out.Metrics = append(out.Metrics, m)
	}
	slices.SortFunc(out.Metrics, func(a, b Metric) int {
		for i := range a.Labels {
			if c := cmp.Compare(a.Labels[i].Value, b.Labels[i].Value); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// Gather returns every family that has a series, sorted by name. Safe for
// concurrent use with everything else.
func (r *Registry) Gather() []Family {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	fams := slices.Collect(maps.Values(r.families))
	r.mu.Unlock()
	slices.SortFunc(fams, func(a, b *family) int { return cmp.Compare(a.name, b.name) })
	out := make([]Family, 0, len(fams))
	for _, f := range fams {
		if g := f.gather(); len(g.Metrics) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// Vec is a metric with variable labels: one series per combination of
// label values, made on first use.
type Vec[T child] struct{ f *family }

// WithLabelValues returns the series of the label values, in the order the
// labels were named; it panics when their number is wrong, as that is a
// programming error. Safe for concurrent use.
func (v *Vec[T]) WithLabelValues(lvs ...string) T { return v.f.with(lvs).(T) }

// CounterVec, GaugeVec and HistogramVec are the labelled metrics.
type (
	CounterVec   = Vec[*Counter]
	GaugeVec     = Vec[*Gauge]
	HistogramVec = Vec[*Histogram]
)

// Counter is a value that only goes up.
type Counter struct{ bits atomic.Uint64 }

func (c *Counter) fill(m *Metric) { m.Value = c.Value() }

// Add adds v, which must not be negative (it panics otherwise, as a
// counter that went down is a programming error).
func (c *Counter) Add(v float64) {
	if v < 0 {
		panic(fmt.Sprintf("counter cannot decrease: Add(%v)", v))
	}
	addFloat(&c.bits, v)
}

// Inc adds 1.
func (c *Counter) Inc() { addFloat(&c.bits, 1) }

// Value returns the counter's value.
func (c *Counter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

// Gauge is a value that goes up and down.
type Gauge struct{ bits atomic.Uint64 }

func (g *Gauge) fill(m *Metric) { m.Value = g.Value() }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds v (negative to subtract).
func (g *Gauge) Add(v float64) { addFloat(&g.bits, v) }

// Inc adds 1; Dec subtracts 1.
func (g *Gauge) Inc() { addFloat(&g.bits, 1) }

// Dec subtracts 1.
func (g *Gauge) Dec() { addFloat(&g.bits, -1) }

// Value returns the gauge's value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// single registers a family without labels and returns its one series.
func single[T child](r *Registry, o Opts, typ Type, mk func() child) (T, error) {
	f, err := r.newFamily(o, typ, nil, mk)
	if err != nil {
		var zero T
		return zero, err
	}
	return f.with(nil).(T), nil
}

func newCounter() child { return new(Counter) }
func newGauge() child   { return new(Gauge) }

// Counter registers a counter without variable labels.
func (r *Registry) Counter(o Opts) (*Counter, error) {
	return single[*Counter](r, o, CounterType, newCounter)
}

// CounterVec registers a counter with the variable labels.
func (r *Registry) CounterVec(o Opts, labels ...string) (*CounterVec, error) {
	f, err := r.newFamily(o, CounterType, labels, newCounter)
	if err != nil {
		return nil, err
	}
	return &CounterVec{f}, nil
}

// Gauge registers a gauge without variable labels.
func (r *Registry) Gauge(o Opts) (*Gauge, error) { return single[*Gauge](r, o, GaugeType, newGauge) }

// GaugeVec registers a gauge with the variable labels.
func (r *Registry) GaugeVec(o Opts, labels ...string) (*GaugeVec, error) {
	f, err := r.newFamily(o, GaugeType, labels, newGauge)
	if err != nil {
		return nil, err
	}
	return &GaugeVec{f}, nil
}

// Histogram registers a histogram without variable labels.
func (r *Registry) Histogram(o HistogramOpts) (*Histogram, error) {
	mk, err := o.maker()
	if err != nil {
		return nil, err
	}
	return single[*Histogram](r, o.Opts, HistogramType, mk)
}

// HistogramVec registers a histogram with the variable labels.
func (r *Registry) HistogramVec(o HistogramOpts, labels ...string) (*HistogramVec, error) {
	mk, err := o.maker()
	if err != nil {
		return nil, err
	}
	f, err := r.newFamily(o.Opts, HistogramType, labels, mk)
	if err != nil {
		return nil, err
	}
	return &HistogramVec{f}, nil
}
