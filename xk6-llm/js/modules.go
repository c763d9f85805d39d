package js

import (
	"sort"

	"github.com/grafana/sobek"
)

// module is one built-in module a script can import: its import name, the
// names it exports (besides default), and the constructor of its object
// for one VU. A specifier that starts with one of prefixes also names it
// (the remote URLs of a jslib that is built in here).
//
// A module k6 removed has removed set, the message k6 gives on its import
// (the import fails with it), and nothing else.
type module struct {
	name     string
	exports  []string
	new      func(vu *VU) *sobek.Object
	prefixes []string
	removed  string
}

// moduleTable is the one list of built-in modules: adding a module is one
// file and one row here.
func moduleTable() map[string]module {
	list := []module{
		{name: "k6", exports: []string{"check", "group", "sleep", "fail", "randomSeed"}, new: newK6Module},
		{name: "k6/data", exports: []string{"SharedArray"}, new: newDataModule},
		{name: "k6/execution", exports: []string{"vu", "scenario", "instance", "test"}, new: newExecutionModule},
		{name: "k6/metrics", exports: []string{"Trend", "Rate", "Counter", "Gauge"}, new: newMetricsModule},
		{name: "k6/x/llm", exports: []string{"Client"}, new: newLLMModule},
		{name: "k6/http", exports: []string{"get", "head", "post", "put", "patch", "del", "options", "request", "batch",
			"expectedStatuses", "setResponseCallback", "asyncRequest"}, new: newHTTPModule},
		{name: "k6/x/sse", exports: []string{"open"}, new: newSSEModule},
		{name: "k6/experimental/sse", exports: []string{"open"}, new: newSSEModule},
		{name: "k6/timers", exports: timerNames, new: newTimersModule},
		{name: "k6/encoding", exports: []string{"b64encode", "b64decode"}, new: newEncodingModule},
		{name: "k6/crypto", exports: cryptoExports(), new: newCryptoModule},
		{name: "k6/html", exports: []string{"parseHTML"}, new: newHTMLModule},
		{name: "k6/x/summary", exports: []string{"textSummary", "jUnit", "humanizeValue"}, new: newSummaryModule, prefixes: []string{summaryJSLib}},
		{name: "k6/experimental/webcrypto", removed: "k6/experimental/webcrypto has been graduated and it's now globally " +
			"available as defined by standard WebAPIs. You just need to remove the import."},
	}
	m := make(map[string]module, len(list))
	for _, mod := range list {
		m[mod.name] = mod
	}
	return m
}

// ModuleNames lists the built-in modules' import names, sorted; the
// modules k6 removed are left out.
func ModuleNames() []string {
	var names []string
	for n, m := range moduleTable() {
		if m.removed == "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
