package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SuiteItem is one experiment of a suite, resolved: loaded from its file,
// with the suite's target and the overrides applied, checked again.
type SuiteItem struct {
	// Entry is the index of the suite's entry that lists it (a directory
	// entry lists several).
	Entry int
	// File is the experiment file's path (the suite file's directory
	// joined with the entry's path).
	File string
	// Spec is the experiment with the suite's target and the overrides
	// applied; no defaults filled in.
	Spec *Spec
	// Overrides are the overrides applied: the suite's, the entry's and
	// the extra ones merged.
	Overrides Overrides
	// Tags are the entry's tags and the automatic ones (AutoTags), sorted.
	Tags []string
	// Weight is the entry's weight in the suite's score.
	Weight float64
	// Warnings are the experiment file's warnings that still hold with
	// the suite applied (those the suite brings in are among Resolve's
	// problems).
	Warnings Problems
}

// Resolve loads every experiment the suite lists, in order (a directory
// entry: ExperimentFiles), applies the suite's target, then the suite's
// overrides merged with the entry's and then with extra (the command
// line's, which win), checks each experiment again, and returns the items
// and every problem. A problem of an experiment file is positioned in that
// file; one the suite brings in is positioned in the suite file: a missing
// file at the entry's path, what the suite's target breaks at target, what
// the overrides break at the entry's overrides (or the suite's), naming
// the experiment file and its key. What extra breaks has no position in a
// file (it came from the command line). An item with errors is left out
// of the result.
func (s *Suite) Resolve(extra Overrides) ([]SuiteItem, Problems) {
	var items []SuiteItem
	var ps Problems
	base := filepath.Dir(s.file)
	for i, e := range s.Experiments {
		p := index("experiments", i)
		path := e.Path
		if !filepath.IsAbs(path) && s.file != "" {
			path = filepath.Join(base, path)
		}
		files := []string{path}
		if fi, err := os.Stat(path); err != nil {
			ps = append(ps, s.at(p+".path", SeverityError, "%s: %v", path, errors.Unwrap(err)))
			continue
		} else if fi.IsDir() {
			list, err := ExperimentFiles(path)
			if err != nil {
				ps = append(ps, s.at(p+".path", SeverityError, "directory %s: %v", path, err))
				continue
			}
			if len(list) == 0 {
				ps = append(ps, s.at(p+".path", SeverityError, "directory %s holds no experiment file (*.yaml)", path))
				continue
			}
			files = list
		}
		for _, f := range files {
			it, ips := s.resolveOne(i, f, extra)
			ps = append(ps, ips...)
			if it != nil {
				items = append(items, *it)
			}
		}
	}
	return items, ps
}

// resolveOne loads the experiment file f of entry i and applies the suite
// to it.
func (s *Suite) resolveOne(i int, f string, extra Overrides) (*SuiteItem, Problems) {
	e := s.Experiments[i]
	p := index("experiments", i)
	if k, err := FileKind(f); err == nil && k == KindSuite {
		return nil, Problems{s.at(p+".path", SeverityError, "%s is a suite file: a suite lists experiment files (list that suite's experiments here, or pass both suites to llmchaos suite)", f)}
	}
	exp, warns, err := LoadWith(f, LoadOptions{Capacity: extra.Capacity})
	if err != nil {
		var eps Problems
		if errors.As(err, &eps) {
			return nil, eps
		}
		return nil, Problems{s.at(p+".path", SeverityError, "%v", err)}
	}
	var ps Problems
	seen := problemSet(exp.Validate())
	// Each step's new problems are the step's doing: they are shown where
	// the step is written.
	step := func(where func(Problem) Problem) bool {
		now := exp.Validate()
		bad := false
		for _, q := range now {
			if seen[q.Path+"\x00"+q.Msg] {
				continue
			}
			seen[q.Path+"\x00"+q.Msg] = true
			ps = append(ps, where(q))
			bad = bad || q.Severity == SeverityError
		}
		return !bad
	}
	what := func(q Problem) string { return fmt.Sprintf("%s: %s: %s", f, q.Path, q.Msg) }
	if s.Target != nil {
		t := *s.Target
		exp.Target = t.clone()
		if !step(func(q Problem) Problem { return s.at("target", q.Severity, "with the suite's target, %s", what(q)) }) {
			return nil, ps
		}
	}
	file := s.Overrides.Merge(e.Overrides)
	oPath := p + ".overrides"
	if e.Overrides.IsZero() {
		oPath = "overrides"
	}
	if err := file.Apply(exp); err != nil {
		for _, oe := range overrideErrors(err) {
			ps = append(ps, s.at(oPath+"."+oe.Key, SeverityError, "%s: %s", f, oe.Msg))
		}
		return nil, ps
	}
	if !step(func(q Problem) Problem { return s.at(oPath, q.Severity, "with these overrides, %s", what(q)) }) {
		return nil, ps
	}
	if !extra.IsZero() {
		if err := extra.Apply(exp); err != nil {
			for _, oe := range overrideErrors(err) {
				ps = append(ps, Problem{Path: "--" + strings.ReplaceAll(oe.Key, "_", "-"), Msg: fmt.Sprintf("%s: %s", f, oe.Msg)})
			}
			return nil, ps
		}
		if !step(func(q Problem) Problem {
			return Problem{Path: "command-line overrides", Msg: what(q), Severity: q.Severity}
		}) {
			return nil, ps
		}
	}
	// The file's own warnings (with their positions) that still hold once
	// the suite is applied; the suite's own doing is in ps.
	still := problemSet(exp.Validate())
	var kept Problems
	for _, w := range warns {
		if still[w.Path+"\x00"+w.Msg] {
			kept = append(kept, w)
		}
	}
	return &SuiteItem{
		Entry: i, File: f, Spec: exp, Overrides: file.Merge(extra),
		Tags: mergeTags(e.Tags, AutoTags(exp)), Weight: e.WeightOrDefault(),
		Warnings: kept,
	}, ps
}

// problemSet keys problems by path and message.
func problemSet(ps Problems) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[p.Path+"\x00"+p.Msg] = true
	}
	return m
}

// overrideErrors returns the *OverrideErrors joined in err.
func overrideErrors(err error) []*OverrideError {
	var out []*OverrideError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, overrideErrors(e)...)
		}
		return out
	}
	if oe, ok := errors.AsType[*OverrideError](err); ok {
		return []*OverrideError{oe}
	}
	return []*OverrideError{{Key: "overrides", Msg: err.Error()}}
}

// at returns a problem at key path p of the suite file.
func (s *Suite) at(p string, sev Severity, format string, args ...any) Problem {
	is := issue{path: p, offset: -1, msg: fmt.Sprintf(format, args...), sev: sev}
	if s.doc != nil {
		return s.doc.locate(is)
	}
	return Problem{File: s.file, Path: p, Msg: is.msg, Severity: sev}
}

// clone returns a copy of t that shares nothing mutable with it.
func (t Target) clone() Target {
	out := t
	if t.Sim != nil {
		sim := *t.Sim
		out.Sim = &sim
	}
	if t.LLM != nil {
		llm := *t.LLM
		llm.URLs = slices.Clone(t.LLM.URLs)
		if t.LLM.Headers != nil {
			llm.Headers = make(map[string]string, len(t.LLM.Headers))
			for k, v := range t.LLM.Headers {
				llm.Headers[k] = v
			}
		}
		out.LLM = &llm
	}
	return out
}

// AutoTags returns the tags an experiment has without being given any:
// its target kind (sim or llm), and each fault's family and type prefix
// (network, stream, http, replica, gpu...), sorted and unique.
func AutoTags(s *Spec) []string {
	var tags []string
	switch {
	case s.Target.Sim != nil:
		tags = append(tags, "sim")
	case s.Target.LLM != nil:
		tags = append(tags, "llm")
	}
	types := FaultTypes()
	for _, f := range s.Faults {
		if ft, ok := types[f.Type]; ok && ft.Family != "" {
			tags = append(tags, ft.Family)
		}
		if pre, _, ok := strings.Cut(f.Type, "."); ok {
			tags = append(tags, pre)
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// mergeTags returns the union of two tag lists, sorted.
func mergeTags(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
