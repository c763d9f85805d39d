package field

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPathBuilds(t *testing.T) {
	t.Parallel()
	p := Path("faults").Index(1).Key("params").Key("latency")
	if p != "faults[1].params.latency" {
		t.Errorf("path = %q", p)
	}
	if got := Path("rate").Under("workload"); got != "workload.rate" {
		t.Errorf("Under = %q", got)
	}
	if got := Path("").Under("workload"); got != "workload" {
		t.Errorf("empty Under = %q", got)
	}
}

// Each front end names the fields a message mentions its own way; the
// rest of the message is the rule's.
func TestProblemNamedByFrontEnd(t *testing.T) {
	t.Parallel()
	cause := errors.New("bad sigma")
	p := Errorf("cancel_share", "%s %v needs %s: %w", Path("cancel_share"), 2, Path("cancel_after"), cause)
	flags := func(f Path) string { return "--" + strings.ReplaceAll(string(f), "_", "-") }
	if got, want := p.Message(flags), "--cancel-share 2 needs --cancel-after: bad sigma"; got != want {
		t.Errorf("flags: %q, want %q", got, want)
	}
	if got, want := p.Error(), "cancel_share 2 needs cancel_after: bad sigma"; got != want {
		t.Errorf("plain: %q, want %q", got, want)
	}
	if !errors.Is(p, cause) {
		t.Error("the %w cause is not unwrapped")
	}
	u := p.Under("workload")
	if u.Path != "workload.cancel_share" || u.Message(nil) != "workload.cancel_share 2 needs workload.cancel_after: bad sigma" {
		t.Errorf("Under: %q %q", u.Path, u.Message(nil))
	}
}

// A problem added with its field's name first names the field as the
// front end does, wherever it stands.
func TestAddNamedOpensWithTheField(t *testing.T) {
	t.Parallel()
	var ps Problems
	ps.AddNamed(Path("select").Key("value"), ": %d, want 1 or more", 0)
	if len(ps) != 1 || ps[0].Path != "select.value" || ps[0].Error() != "select.value: 0, want 1 or more" {
		t.Fatalf("AddNamed: %+v (%q)", ps, ps.Error())
	}
	if got, want := ps.Under("faults[0].params")[0].Error(), "faults[0].params.select.value: 0, want 1 or more"; got != want {
		t.Errorf("Under: %q, want %q", got, want)
	}
	if got, want := ps[0].Message(func(f Path) string { return "<" + string(f) + ">" }), "<select.value>: 0, want 1 or more"; got != want {
		t.Errorf("named by a front end: %q, want %q", got, want)
	}
}

func TestOfFindsProblemsThroughJoinsAndWrappers(t *testing.T) {
	t.Parallel()
	var ps Problems
	ps.Add("rate", "%s must be > 0", Path("rate"))
	other := errors.New("disk full")
	err := errors.Join(fmt.Errorf("workload: %w", ps), other)
	got, rest := Of(err)
	if len(got) != 1 || got[0].Path != "rate" || len(rest) != 1 || rest[0] != other {
		t.Errorf("Of = %v, %v", got, rest)
	}
	if Problems(nil).Err() != nil {
		t.Error("no problems is not nil")
	}
}

// Warnings alone are no error; a problem placed in a file says where, a
// warning says so, and a message that does not name its field gets the
// field's path before it.
func TestProblemsErrAndPlaces(t *testing.T) {
	t.Parallel()
	w := Errorf("a", "w")
	w.Warning = true
	warn := Problems{w}
	if warn.Err() != nil {
		t.Errorf("warnings alone are an error")
	}
	e := Errorf("b", "e")
	e.File, e.Line, e.Col = "f.yaml", 3, 7
	named := Errorf("rate", "%s -1 must be > 0", Path("rate"))
	both := append(warn, e, named)
	err := both.Err()
	if err == nil {
		t.Fatal("an error is not an error")
	}
	if got, want := err.Error(), "warning: a: w\nf.yaml:3:7: b: e\nrate -1 must be > 0"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := len(both.Errors()); got != 2 {
		t.Errorf("Errors() has %d, want 2", got)
	}
	if got := both.Warnings(); len(got) != 1 || got[0].Path != "a" {
		t.Errorf("Warnings() = %v, want the one warning", got)
	}
}
