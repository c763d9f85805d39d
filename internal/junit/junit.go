// Package junit is the JUnit XML document every JUnit file llmchaos
// writes is made of, in the shape the usual CI test-report readers accept
// (Jenkins' JUnit plugin, GitLab's junit artifacts, GitHub actions that
// publish test results): a run's (report.WriteJUnit), a suite's
// (suite.WriteJUnit) and a k6-style script's jUnit() summary (xk6-llm/js,
// k6/x/summary). It imports nothing but the standard library, so that the
// script runtime, on the floor below report, shares it.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
)

// Suites is a JUnit document: a <testsuites> root and its test suites.
// Name and Time are left out when empty.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr,omitempty"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>: a run, or one experiment of a suite. Time
// (seconds, "1.500") and Timestamp (its start, UTC, "2006-01-02T15:04:05")
// are left out when empty, and so are Properties when there is none.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       string     `xml:"time,attr,omitempty"`
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	Properties Properties `xml:"properties"`
	Cases      []Case     `xml:"testcase"`
}

// Properties are a test suite's <properties>, left out when there is none.
type Properties []Property

// MarshalXML writes p as a <properties> element of <property> elements,
// or nothing when p is empty.
func (p Properties) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if len(p) == 0 {
		return nil
	}
	return e.EncodeElement(struct {
		Property []Property `xml:"property"`
	}{p}, start)
}

// UnmarshalXML reads a <properties> element into p, so that a document
// written by Write reads back (tests, tools that merge JUnit files).
func (p *Properties) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var v struct {
		Property []Property `xml:"property"`
	}
	if err := d.DecodeElement(&v, &start); err != nil {
		return err
	}
	*p = append(*p, v.Property...)
	return nil
}

// Property is one <property> of a test suite.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one <testcase>: passed, or with one of Failure (it did not
// hold), Error (it could not be judged) or Skipped.
type Case struct {
	Classname string   `xml:"classname,attr"`
	Name      string   `xml:"name,attr"`
	Time      string   `xml:"time,attr,omitempty"`
	Failure   *Problem `xml:"failure,omitempty"`
	Error     *Problem `xml:"error,omitempty"`
	Skipped   *Skipped `xml:"skipped,omitempty"`
}

// Problem is a <failure> or an <error>: its message, its type (left out
// when empty) and its text.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Skipped is a <skipped> with its reason.
type Skipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// Write writes d as an XML document: the XML header, d indented by two
// spaces, and a final newline.
func (d *Suites) Write(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}
