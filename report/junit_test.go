package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reader's view of JUnit XML, written independently of the writer's
// types: what a CI plugin looks at.
type xSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []xSuite `xml:"testsuite"`
}

type xSuite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Time       float64     `xml:"time,attr"`
	Timestamp  string      `xml:"timestamp,attr"`
	Properties []xProperty `xml:"properties>property"`
	Cases      []xCase     `xml:"testcase"`
}

type xProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xCase struct {
	Classname string    `xml:"classname,attr"`
	Name      string    `xml:"name,attr"`
	Failure   *xProblem `xml:"failure"`
	Error     *xProblem `xml:"error"`
}

type xProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func parseJUnit(t *testing.T, b []byte) xSuites {
	t.Helper()
	if !bytes.HasPrefix(b, []byte(xml.Header)) {
		t.Errorf("no XML declaration: %q", b[:min(len(b), 40)])
	}
	var s xSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b)
	}
	return s
}

func TestJUnitParsesBack(t *testing.T) {
	d := judgedRun(t, false)
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnitFile(path, d); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := parseJUnit(t, b)
	if s.Tests != 5 || s.Failures != 3 || s.Errors != 0 || len(s.Suites) != 1 {
		t.Fatalf("testsuites tests %d failures %d errors %d suites %d, want 5 3 0 1", s.Tests, s.Failures, s.Errors, len(s.Suites))
	}
	su := s.Suites[0]
	if su.Name != "nightly <oom> & recovery" || su.Tests != 5 || su.Failures != 3 || su.Time != 4 || su.Timestamp != "2026-03-14T15:09:26" {
		t.Errorf("testsuite = %+v", su)
	}
	props := map[string]string{}
	for _, p := range su.Properties {
		props[p.Name] = p.Value
	}
	if props["verdict"] != "fail" || props["seed"] != "42" {
		t.Errorf("properties = %v", props)
	}
	want := []struct {
		class, name, observed string
		failed                bool
	}{
		{"ttft", "p(99)<500ms", "", false},
		{"ttft", "p(50)<200ms", "220.031ms", true},
		{"error_rate", "rate<0.01", "0.125", true},
		{"requests_lost", "count==0", "", false},
		{"ttft{phase:recovery}", "p(99)<1s", "no data", true},
	}
	if len(su.Cases) != len(want) {
		t.Fatalf("%d testcases, want %d", len(su.Cases), len(want))
	}
	for i, w := range want {
		c := su.Cases[i]
		if c.Classname != w.class || c.Name != w.name || (c.Failure != nil) != w.failed || c.Error != nil {
			t.Errorf("testcase %d = %+v, want %+v", i, c, w)
			continue
		}
		if w.failed && (!strings.Contains(c.Failure.Message, w.observed) || !strings.Contains(c.Failure.Text, "observed: "+w.observed)) {
			t.Errorf("testcase %d failure %+v does not carry the observed value %q", i, c.Failure, w.observed)
		}
	}
}

func TestJUnitAbortedAndEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, judgedRun(t, true)); err != nil {
		t.Fatal(err)
	}
	s := parseJUnit(t, b.Bytes())
	su := s.Suites[0]
	last := su.Cases[len(su.Cases)-1]
	if su.Tests != 6 || su.Errors != 1 || s.Errors != 1 || last.Error == nil || last.Name != "run not aborted" {
		t.Errorf("aborted run: tests %d errors %d last case %+v, want 6 tests, 1 error for the abort", su.Tests, su.Errors, last)
	}

	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteJUnit(&b, d); err != nil {
		t.Fatal(err)
	}
	s = parseJUnit(t, b.Bytes())
	if s.Tests != 0 || s.Suites[0].Name != "llmchaos" || len(s.Suites[0].Cases) != 0 {
		t.Errorf("run without thresholds = %+v, want one empty suite named llmchaos", s)
	}
}
