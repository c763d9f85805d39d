package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
)

// SuiteItem is one experiment of a suite, resolved: loaded from its file,
// with the suite's target and the overrides applied, and resolved once
// (Experiment) as llmchaos run resolves an experiment.
type SuiteItem struct {
	// Entry is the index of the suite's entry that lists it (a directory
	// entry lists several).
	Entry int
	// File is the experiment file's path (the suite file's directory
	// joined with the entry's path).
	File string
	// Experiment is the experiment with the suite's target and the
	// overrides applied, resolved: what the suite runs.
	Experiment *Experiment
	// Overrides are the overrides applied: the suite's, the entry's and
	// the extra ones merged.
	Overrides Overrides
	// Tags are the entry's tags and the automatic ones (AutoTags), sorted.
	Tags []string
	// Weight is the entry's weight in the suite's score.
	Weight float64
	// Warnings are the experiment's warnings with the suite applied: the
	// file's own at their place in it, those the suite brings in where
	// the suite writes what brought them in.
	Warnings field.Problems
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
func (s *Suite) Resolve(extra Overrides) ([]SuiteItem, field.Problems) {
	var items []SuiteItem
	var ps field.Problems
	base := filepath.Dir(s.file)
	for i, e := range s.Experiments {
		p := index("experiments", i)
		path := e.Path
		if !filepath.IsAbs(path) && s.file != "" {
			path = filepath.Join(base, path)
		}
		files := []string{path}
		if fi, err := os.Stat(path); err != nil {
			ps = append(ps, s.at(p+".path", false, "%s: %v", path, errors.Unwrap(err)))
			continue
		} else if fi.IsDir() {
			list, err := ExperimentFiles(path)
			if err != nil {
				ps = append(ps, s.at(p+".path", false, "directory %s: %v", path, err))
				continue
			}
			if len(list) == 0 {
				ps = append(ps, s.at(p+".path", false, "directory %s holds no experiment file (*.yaml)", path))
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

// resolveOne loads the experiment file f of entry i with the suite
// applied to it (the suite's target, its overrides merged with the
// entry's, then extra) and resolves it once.
func (s *Suite) resolveOne(i int, f string, extra Overrides) (*SuiteItem, field.Problems) {
	e := s.Experiments[i]
	p := index("experiments", i)
	if k, err := FileKind(f); err == nil && k == KindSuite {
		return nil, field.Problems{s.at(p+".path", false, "%s is a suite file: a suite lists experiment files (list that suite's experiments here, or pass both suites to llmchaos suite)", f)}
	}
	what := func(q field.Problem) string { return fmt.Sprintf("%s: %s: %s", f, q.Path, q.Message(nil)) }
	var steps []Step
	if s.Target != nil {
		steps = append(steps, Step{
			Apply: func(exp *Spec) error { exp.Target = s.Target.clone(); return nil },
			Blame: func(q field.Problem) field.Problem {
				return s.at("target", q.Warning, "with the suite's target, %s", what(q))
			},
		})
	}
	file := s.Overrides.Merge(e.Overrides)
	oPath := p + ".overrides"
	if e.Overrides.IsZero() {
		oPath = "overrides"
	}
	if !file.IsZero() {
		steps = append(steps, overrideStep(file,
			func(oe *OverrideError) field.Problem { return s.at(oPath+"."+oe.Key, false, "%s: %s", f, oe.Msg) },
			func(q field.Problem) field.Problem {
				return s.at(oPath, q.Warning, "with these overrides, %s", what(q))
			}))
	}
	if !extra.IsZero() {
		steps = append(steps, overrideStep(extra,
			func(oe *OverrideError) field.Problem {
				return problemAt("", 0, 0, "--"+strings.ReplaceAll(oe.Key, "_", "-"), fmt.Sprintf("%s: %s", f, oe.Msg), false)
			},
			func(q field.Problem) field.Problem {
				return problemAt("", 0, 0, "command-line overrides", what(q), q.Warning)
			}))
	}
	x, warns, err := LoadExperiment(f, LoadOptions{Capacity: extra.Capacity, Steps: steps})
	if err != nil {
		var eps field.Problems
		if errors.As(err, &eps) {
			return nil, eps
		}
		return nil, field.Problems{s.at(p+".path", false, "%v", err)}
	}
	return &SuiteItem{
		Entry: i, File: f, Experiment: x, Overrides: file.Merge(extra),
		Tags: mergeTags(e.Tags, AutoTags(&x.Spec)), Weight: e.WeightOrDefault(),
		Warnings: warns,
	}, nil
}

// overrideStep is the step that applies o: an override that cannot apply
// is the problem refused makes of it, one the overrides bring in is placed
// by blame.
func overrideStep(o Overrides, refused func(*OverrideError) field.Problem, blame func(field.Problem) field.Problem) Step {
	return Step{
		Apply: func(exp *Spec) error {
			var ps field.Problems
			if err := o.Apply(exp); err != nil {
				for _, oe := range overrideErrors(err) {
					ps = append(ps, refused(oe))
				}
			}
			return ps.Err()
		},
		Blame: blame,
	}
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

// at returns a problem at key path p of the suite file (a warning when
// warn is set).
func (s *Suite) at(p string, warn bool, format string, args ...any) field.Problem {
	is := issue{path: p, offset: -1, msg: fmt.Sprintf(format, args...), warn: warn}
	if s.doc != nil {
		return s.doc.locate(is)
	}
	return problemAt(s.file, 0, 0, p, is.msg, warn)
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
