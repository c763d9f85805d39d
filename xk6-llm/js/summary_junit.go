package js

import (
	"sort"
	"strings"

	"github.com/llmchaos/llmchaos/internal/junit"
)

// JUnitSummaryOptions are jUnit's options, as the k6-summary jslib's: the
// test suite's name (default "k6 thresholds") and the test cases' class
// name (default "Unnamed folder").
type JUnitSummaryOptions struct {
	Name      string `json:"name"`
	Classname string `json:"classname"`
}

// JUnitSummary writes d's thresholds as JUnit XML (internal/junit, the
// document every JUnit file of llmchaos is): one test suite (o.Name), one
// test case per threshold, named "METRIC - EXPR" in class o.Classname,
// with a <failure> when it did not hold.
func JUnitSummary(d SummaryData, o JUnitSummaryOptions) string {
	suite := junit.Suite{Name: cmpOr(o.Name, "k6 thresholds")}
	class := cmpOr(o.Classname, "Unnamed folder")
	metricNames := make([]string, 0, len(d.Metrics))
	for n := range d.Metrics {
		metricNames = append(metricNames, n)
	}
	sort.Strings(metricNames)
	for _, mn := range metricNames {
		m := d.Metrics[mn]
		exprs := make([]string, 0, len(m.Thresholds))
		for e := range m.Thresholds {
			exprs = append(exprs, e)
		}
		sort.Strings(exprs)
		for _, e := range exprs {
			c := junit.Case{Classname: class, Name: mn + " - " + e}
			if !m.Thresholds[e].OK {
				c.Failure = &junit.Problem{Message: "failed: " + mn + " " + e}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
	}
	suite.Tests = len(suite.Cases)
	doc := junit.Suites{Tests: suite.Tests, Failures: suite.Failures, Suites: []junit.Suite{suite}}
	var b strings.Builder
	_ = doc.Write(&b) // a strings.Builder does not fail, and the document always encodes
	return b.String()
}
