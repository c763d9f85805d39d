package report

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// figure returns the run-wide figure of a built-in rate, gauge or counter
// m in d: the field of d.Quality, d.Throughput or d.Requests whose JSON key
// is m.JSONKey (the metric table is the link between a metric and its
// place in run.json). ok is false when d carries no such figure, as
// goodput without an SLO.
func figure(d *Document, m metrics.Metric) (v float64, ok bool) {
	if m.JSONKey == "" {
		return 0, false
	}
	var sections []any
	switch m.Kind {
	case metrics.Rate, metrics.Gauge:
		sections = []any{&d.Quality, &d.Throughput}
	case metrics.Counter:
		sections = []any{&d.Requests}
	}
	for _, s := range sections {
		if v, ok := jsonNumber(s, m.JSONKey); ok {
			return v, true
		}
	}
	return 0, false
}

// jsonNumber returns the number in the field of the struct p points to
// whose JSON key is key: a float64, an int64, or a non-nil *float64.
func jsonNumber(p any, key string) (float64, bool) {
	f := jsonField(reflect.ValueOf(p).Elem(), key)
	if !f.IsValid() {
		return 0, false
	}
	switch x := f.Interface().(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case *float64:
		if x != nil {
			return *x, true
		}
	}
	return 0, false
}

// setRates sets every built-in rate of the metric table in q, the field
// whose JSON key is the row's JSONKey, from the run's counters.
func setRates(q *Quality, all recording.Counts) error {
	v := reflect.ValueOf(q).Elem()
	for _, m := range metrics.Builtin() {
		if m.Kind != metrics.Rate || m.JSONKey == "" {
			continue
		}
		r, err := all.Rate(m.Name)
		if err != nil {
			return fmt.Errorf("report %s: %w", m.Name, err)
		}
		f := jsonField(v, m.JSONKey)
		if !f.IsValid() || f.Kind() != reflect.Float64 {
			return fmt.Errorf("report %s: the quality section has no number %q", m.Name, m.JSONKey)
		}
		f.SetFloat(r)
	}
	return nil
}

// jsonField returns the field of struct v whose JSON key is key; the zero
// Value when there is none.
func jsonField(v reflect.Value, key string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// figureRows returns the rows of the reports' throughput (kind
// metrics.Gauge) or quality (metrics.Rate) table: each built-in metric of
// that kind the reports show by default and d carries, in table order,
// labelled with its ReportLabel; goodput notes its SLO.
func figureRows(d *Document, kind metrics.Kind) []kvRow {
	var rows []kvRow
	for _, m := range metrics.Builtin() {
		if m.Kind != kind || !m.Default {
			continue
		}
		v, ok := figure(d, m)
		if !ok {
			continue
		}
		r := kvRow{Key: m.ReportLabel(), Value: fmtUnit(v, m.Unit)}
		if m.Name == "goodput" {
			r.Note = sloText(d.SLO)
		}
		rows = append(rows, r)
	}
	return rows
}
