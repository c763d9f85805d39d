package js

// SummaryData is what a script's handleSummary(data) receives at the end
// of a run, in k6's shape and with k6's field names, so handleSummary
// functions written for k6 (and the k6-summary jslib, built in here) read
// it unchanged. The runner fills it from the run's report.
type SummaryData struct {
	RootGroup SummaryGroup             `json:"root_group"`
	Options   SummaryOptions           `json:"options"`
	State     SummaryState             `json:"state"`
	Metrics   map[string]SummaryMetric `json:"metrics"`
	// SetupData is what setup() returned, as JSON; absent when nothing.
	SetupData any `json:"setup_data,omitempty"`
}

// SummaryGroup is a group() of the script (the root group has the empty
// name and path), with the groups it holds and its checks.
type SummaryGroup struct {
	Name   string         `json:"name"`
	Path   string         `json:"path"`
	ID     string         `json:"id"`
	Groups []SummaryGroup `json:"groups"`
	Checks []SummaryCheck `json:"checks"`
}

// SummaryCheck is one check() by name in its group, with how often it
// passed and failed.
type SummaryCheck struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	ID     string `json:"id"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

// SummaryOptions are the options that shape a summary: the trend
// statistics to show (k6's summaryTrendStats, e.g. "avg", "p(95)"), the
// time unit ("" chooses per value; else "s", "ms" or "us") and whether
// colours are off.
type SummaryOptions struct {
	SummaryTrendStats []string `json:"summaryTrendStats"`
	SummaryTimeUnit   string   `json:"summaryTimeUnit"`
	NoColor           bool     `json:"noColor"`
}

// SummaryState is about the run: its length (after init, as k6's) and
// whether standard output and error are terminals.
type SummaryState struct {
	IsStdOutTTY       bool    `json:"isStdOutTTY"`
	IsStdErrTTY       bool    `json:"isStdErrTTY"`
	TestRunDurationMs float64 `json:"testRunDurationMs"`
}

// SummaryMetric is one metric with data (or with thresholds): its k6 type
// ("counter", "gauge", "rate", "trend"), what its values are ("time" for
// durations in milliseconds, else "default"), its values by k6's names
// (a trend's summaryTrendStats; a rate's rate, passes and fails; a
// counter's count and rate per second; a gauge's value) and the outcome
// of each of its thresholds by expression. A threshold on a tag selection
// is a metric of its own, named as k6 names it: "ttft{class:chat}".
type SummaryMetric struct {
	Type       string                      `json:"type"`
	Contains   string                      `json:"contains"`
	Values     map[string]float64          `json:"values"`
	Thresholds map[string]SummaryThreshold `json:"thresholds,omitempty"`
}

// SummaryThreshold is whether a threshold held.
type SummaryThreshold struct {
	OK bool `json:"ok"`
}

// DefaultSummaryTrendStats are k6's default summaryTrendStats.
func DefaultSummaryTrendStats() []string {
	return []string{"avg", "min", "med", "max", "p(90)", "p(95)"}
}
