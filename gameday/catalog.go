package gameday

import (
	yaml "github.com/goccy/go-yaml"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
)

// FaultType is one fault type as the console's catalogue shows it,
// generated from the fault families' own description (faults.Type): the
// form for its params is made from Params.
type FaultType struct {
	Name     string `json:"name"`
	Family   string `json:"family"`
	Summary  string `json:"summary"`
	Lifetime string `json:"lifetime"`
	// Target is "proxy" (it acts through the proxies in front of the
	// endpoints: pick endpoints) or "params" (its params say where).
	Target string `json:"target"`
	L7     bool   `json:"l7,omitempty"`
	// Example is a typical fault's params in YAML; ExampleParams the same
	// decoded, to fill the form with.
	Example       string         `json:"example,omitempty"`
	ExampleParams map[string]any `json:"example_params,omitempty"`
	Params        []Param        `json:"params"`
}

// Param is one key of a fault type's params (faults.Param): dotted for
// the keys of nested mappings (select.mode).
type Param struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Default  string `json:"default,omitempty"`
	Unit     string `json:"unit,omitempty"`
	Doc      string `json:"doc,omitempty"`
	Required bool   `json:"required,omitempty"`
}

func paramsOf(ps []faults.Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.Name, Type: p.Type, Default: p.Default, Unit: p.Unit, Doc: p.Doc, Required: p.Required}
	}
	return out
}

// Catalogue returns every fault type, family by family.
func Catalogue() []FaultType {
	var out []FaultType
	for _, t := range spec.FaultTypeList() {
		ft := FaultType{Name: t.Name, Family: t.Family, Summary: t.Summary, Lifetime: string(t.Lifetime),
			Target: t.Target, L7: t.L7, Example: t.Example, Params: paramsOf(t.Params())}
		if t.Example != "" {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(t.Example), &m); err == nil {
				ft.ExampleParams = m
			}
		}
		out = append(out, ft)
	}
	return out
}
