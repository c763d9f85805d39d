package script

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// summaryExport is k6's --summary-export file for the summary data d: the
// legacy JSON of k6's summary wrapper, indented by four spaces. It is
// handleSummary's data without options and state, where a group's groups
// and checks are objects by name, a metric is its values (a rate's rate
// renamed value) with, when it has thresholds, "thresholds" mapping each
// expression to whether it FAILED (k6's inverted flag).
func summaryExport(d js.SummaryData, trendStats []string) ([]byte, error) {
	root := ordered{{"root_group", exportGroup(d.RootGroup)}}
	ms := ordered{}
	for _, name := range sortedKeys(d.Metrics) {
		ms = append(ms, kv{name, exportMetric(d.Metrics[name], trendStats)})
	}
	root = append(root, kv{"metrics", ms})
	if d.SetupData != nil {
		root = append(root, kv{"setup_data", d.SetupData})
	}
	b, err := marshalNoEscape(root)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "    "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// exportGroup is g in the legacy shape: groups and checks by name.
func exportGroup(g js.SummaryGroup) ordered {
	groups, checks := ordered{}, ordered{}
	for _, sub := range g.Groups {
		groups = append(groups, kv{sub.Name, exportGroup(sub)})
	}
	for _, c := range g.Checks {
		checks = append(checks, kv{c.Name, ordered{{"name", c.Name}, {"path", c.Path}, {"id", c.ID}, {"passes", c.Passes}, {"fails", c.Fails}}})
	}
	return ordered{{"name", g.Name}, {"path", g.Path}, {"id", g.ID}, {"groups", groups}, {"checks", checks}}
}

// exportMetric is m's values in k6's order (a trend's statistics as
// summaryTrendStats lists them), its thresholds' failure flags, and a
// rate's value last, as k6's wrapper leaves them.
func exportMetric(m js.SummaryMetric, trendStats []string) ordered {
	var order []string
	switch m.Type {
	case "trend":
		order = trendStats
	case "counter":
		order = []string{"count", "rate"}
	case "rate":
		order = []string{"passes", "fails"}
	case "gauge":
		order = []string{"value", "min", "max"}
	}
	out := ordered{}
	for _, k := range order {
		if v, ok := m.Values[k]; ok {
			out = append(out, kv{k, v})
		}
	}
	for _, k := range sortedKeys(m.Values) {
		if !slices.Contains(order, k) && !(m.Type == "rate" && k == "rate") {
			out = append(out, kv{k, m.Values[k]})
		}
	}
	if len(m.Thresholds) > 0 {
		ths := ordered{}
		for _, expr := range sortedKeys(m.Thresholds) {
			ths = append(ths, kv{expr, !m.Thresholds[expr].OK})
		}
		out = append(out, kv{"thresholds", ths})
	}
	if v, ok := m.Values["rate"]; ok && m.Type == "rate" {
		out = append(out, kv{"value", v})
	}
	return out
}

// ordered is a JSON object that keeps its keys' order.
type ordered []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes the object's keys in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(e.k)
		if err != nil {
			return nil, err
		}
		v, err := marshalNoEscape(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalNoEscape is json.Marshal without HTML escapes ("p(95)<5" stays
// as it is, as JavaScript's JSON.stringify writes it).
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// sortedKeys are m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
