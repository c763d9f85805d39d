package js

import "github.com/grafana/sobek"

// module is one built-in module a script can import: its import name, the
// names it exports (besides default), and the constructor of its object
// for one VU.
type module struct {
	name    string
	exports []string
	new     func(vu *VU) *sobek.Object
}

// moduleTable is the one list of built-in modules: adding a module is one
// file and one row here.
func moduleTable() map[string]module {
	list := []module{
		{name: "k6", exports: []string{"check", "group", "sleep", "fail", "randomSeed"}, new: newK6Module},
		{name: "k6/execution", exports: []string{"vu", "scenario", "instance", "test"}, new: newExecutionModule},
		{name: "k6/metrics", exports: []string{"Trend", "Rate", "Counter", "Gauge"}, new: newMetricsModule},
		{name: "k6/x/llm", exports: []string{"Client"}, new: newLLMModule},
	}
	m := make(map[string]module, len(list))
	for _, mod := range list {
		m[mod.name] = mod
	}
	return m
}

// ModuleNames lists the built-in modules' import names.
func ModuleNames() []string {
	var names []string
	for n := range moduleTable() {
		names = append(names, n)
	}
	return names
}
