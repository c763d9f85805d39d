package spec

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// readmePath is the fault reference page (docs/faults.md) seen from this
// package's directory.
const readmePath = "../../docs/faults.md"

// The fault reference of docs/faults.md, between its markers, is what
// FaultReference makes of the families' lists now; with -update it is
// rewritten.
func TestREADMEFaultReferenceUpToDate(t *testing.T) {
	const begin, end = "<!-- faults:begin -->\n", "<!-- faults:end -->"
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(readme, []byte(begin))
	j := bytes.Index(readme, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q section", readmePath, strings.TrimSpace(begin), end)
	}
	i += len(begin)
	want := FaultReference()
	if *update {
		out := append(append(append([]byte{}, readme[:i]...), want...), readme[j:]...)
		if err := os.WriteFile(readmePath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := string(readme[i:j]); got != want {
		t.Errorf("docs/faults.md's fault reference is stale: regenerate it with go test ./experiments/spec -run TestREADMEFaultReferenceUpToDate -update")
	}
}

// `llmchaos faults TYPE` shows every param of the type, and a fault block
// that names the type; an unknown type is an error with a suggestion.
func TestWriteFaultType(t *testing.T) {
	var b strings.Builder
	if err := WriteFaultType(&b, "replica.kill"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replica.kill (replica, instantaneous)", "select.mode", "target.state_file", "signal", "SIGKILL", "type: replica.kill"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	err := WriteFaultType(&b, "replica.kil")
	if err == nil || !strings.Contains(err.Error(), "did you mean replica.kill?") {
		t.Errorf("unknown type: err = %v, want a suggestion of replica.kill", err)
	}
}

// `llmchaos faults` lists every fault type, one per row after the header
// (a long summary wraps onto indented lines).
func TestWriteFaultTypes(t *testing.T) {
	var b strings.Builder
	if err := WriteFaultTypes(&b); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(b.String()), "\n") {
		if !strings.HasPrefix(l, " ") {
			lines = append(lines, l)
		}
	}
	if got, want := len(lines), len(FaultTypes())+1; got != want {
		t.Errorf("%d rows, want %d:\n%s", got, want, b.String())
	}
	if !strings.HasPrefix(lines[1], "network.latency ") || !strings.Contains(lines[1], "sustained") {
		t.Errorf("first type line %q, want network.latency, sustained", lines[1])
	}
}

// Every line of `llmchaos faults` and of `llmchaos faults TYPE` fits the
// 120 columns of a terminal: long summaries and param descriptions wrap
// under their column, and no word is lost to the wrapping.
func TestFaultReferenceFitsTheTerminal(t *testing.T) {
	check := func(what, out string, words []string) {
		t.Helper()
		for i, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > refWidth {
				t.Errorf("%s: line %d is %d columns wide:\n%s", what, i+1, n, l)
			}
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, w := range words {
			if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%s lacks %q", what, w)
			}
		}
	}
	var b strings.Builder
	if err := WriteFaultTypes(&b); err != nil {
		t.Fatal(err)
	}
	var summaries []string
	for _, ft := range FaultTypeList() {
		summaries = append(summaries, ft.Summary)
	}
	check("llmchaos faults", b.String(), summaries)
	for _, ft := range FaultTypeList() {
		b.Reset()
		if err := WriteFaultType(&b, ft.Name); err != nil {
			t.Fatal(err)
		}
		var docs []string
		for _, p := range ft.Params() {
			docs = append(docs, p.Doc)
		}
		check("llmchaos faults "+ft.Name, b.String(), docs)
	}
}
