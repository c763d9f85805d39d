package junit

import (
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
)

// TestWrite: a document is written with its header, indented, with the
// empty optional attributes and elements left out, and text escaped.
func TestWrite(t *testing.T) {
	d := &Suites{Tests: 2, Failures: 1, Suites: []Suite{{
		Name: "run <1>", Tests: 2, Failures: 1,
		Properties: []Property{{Name: "seed", Value: "7"}},
		Cases: []Case{
			{Classname: "ttft", Name: "p(99)<500ms"},
			{Classname: "e2e", Name: "max<2s", Time: "0", Failure: &Problem{Message: "observed 3s & more", Type: "threshold", Text: "observed: 3s\n"}},
		},
	}}}
	var b strings.Builder
	if err := d.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" failures="1" errors="0" skipped="0">
  <testsuite name="run &lt;1&gt;" tests="2" failures="1" errors="0" skipped="0">
    <properties>
      <property name="seed" value="7"></property>
    </properties>
    <testcase classname="ttft" name="p(99)&lt;500ms"></testcase>
    <testcase classname="e2e" name="max&lt;2s" time="0">
      <failure message="observed 3s &amp; more" type="threshold">observed: 3s&#xA;</failure>
    </testcase>
  </testsuite>
</testsuites>
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	var back Suites
	if err := xml.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatal(err)
	}
	back.XMLName = xml.Name{}
	if !reflect.DeepEqual(&back, d) {
		t.Errorf("read back %+v, want %+v", back, *d)
	}
}

// TestWriteLeavesOutEmptyProperties: a suite without properties has no
// <properties> element.
func TestWriteLeavesOutEmptyProperties(t *testing.T) {
	var b strings.Builder
	if err := (&Suites{Suites: []Suite{{Name: "s"}}}).Write(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "properties") {
		t.Errorf("an empty property list was written:\n%s", b.String())
	}
}
