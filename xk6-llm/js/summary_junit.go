package js

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strings"
)

// JUnitSummaryOptions are jUnit's options, as the k6-summary jslib's: the
// test suite's name (default "k6 thresholds") and the test cases' class
// name (default "Unnamed folder").
type JUnitSummaryOptions struct {
	Name      string `json:"name"`
	Classname string `json:"classname"`
}

// JUnitSummary writes d's thresholds as JUnit XML: one test case per
// threshold, named "METRIC - EXPR", failed when it did not hold.
func JUnitSummary(d SummaryData, o JUnitSummaryOptions) string {
	name := cmpOr(o.Name, "k6 thresholds")
	class := cmpOr(o.Classname, "Unnamed folder")
	metricNames := make([]string, 0, len(d.Metrics))
	for n := range d.Metrics {
		metricNames = append(metricNames, n)
	}
	sort.Strings(metricNames)
	var cases strings.Builder
	tests, failures := 0, 0
	for _, mn := range metricNames {
		m := d.Metrics[mn]
		exprs := make([]string, 0, len(m.Thresholds))
		for e := range m.Thresholds {
			exprs = append(exprs, e)
		}
		sort.Strings(exprs)
		for _, e := range exprs {
			tests++
			fmt.Fprintf(&cases, `    <testcase name="%s" classname="%s"`, xmlText(mn+" - "+e), xmlText(class))
			if m.Thresholds[e].OK {
				cases.WriteString(" />\n")
				continue
			}
			failures++
			fmt.Fprintf(&cases, ">\n      <failure message=\"%s\" />\n    </testcase>\n", xmlText("failed: "+mn+" "+e))
		}
	}
	return fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"%d\" failures=\"%d\">\n"+
		"  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\">\n%s  </testsuite>\n</testsuites>\n",
		tests, failures, xmlText(name), tests, failures, cases.String())
}

// xmlText escapes s for an XML attribute.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
