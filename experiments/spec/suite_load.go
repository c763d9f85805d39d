package spec

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
)

// LoadSuite reads the suite file at path, decodes it strictly and
// validates it, as Load does an experiment file: every problem at once,
// each with the file's name, line and column; a nil suite and a field.Problems
// error when there is an error; warnings returned with a valid suite. It
// checks the suite file itself; Resolve loads and checks the experiments
// it lists.
func LoadSuite(path string) (*Suite, field.Problems, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("suite: %w", err)
	}
	return ParseSuite(path, data)
}

// ParseSuite does what LoadSuite does with a file's contents; name is the
// file name used in problems and the base of the experiments' paths.
func ParseSuite(name string, data []byte) (*Suite, field.Problems, error) {
	doc, ps := readDocument(name, data, docSuite)
	if doc == nil {
		return nil, nil, ps.Err()
	}
	s := &Suite{doc: doc, file: name}
	ps = doc.problems(doc.decode(s, func(dec *decoder) issues { return s.check(dec.zeros) }))
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return s, ps, nil
}

// Validate checks a suite without changing it and returns every problem,
// in path order (positions too when it was loaded from a file); nil when
// there is none. It does not read the experiments: Resolve does.
func (s *Suite) Validate() field.Problems {
	ps := s.problems(s.check(nil))
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// problems turns issues into field.Problems, located in the suite's file when
// it has one.
func (s *Suite) problems(iss issues) field.Problems {
	if s.doc != nil {
		return s.doc.problems(iss)
	}
	ps := make(field.Problems, len(iss))
	for i, is := range iss {
		ps[i] = problemAt(s.file, 0, 0, is.path, is.msg, is.warn)
	}
	sortProblems(ps)
	return ps
}

// tagRE is what a tag may look like.
var tagRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

// check runs the suite's checks; zeros are the paths of explicit zeros
// in its file (nil for a suite built in code).
func (s *Suite) check(zeros map[string]bool) issues {
	var iss issues
	switch s.APIVersion {
	case APIVersion:
	case "":
		iss.add("apiVersion", "missing: write apiVersion: %s", APIVersion)
	default:
		iss.add("apiVersion", "%q is not supported: write apiVersion: %s", s.APIVersion, APIVersion)
	}
	switch s.Kind {
	case KindSuite:
	case "":
		iss.add("kind", "missing: write kind: %s", KindSuite)
	case KindExperiment:
		iss.add("kind", "this is an experiment file (kind: %s): run it with llmchaos run, or list its path under a suite's experiments", KindExperiment)
	default:
		iss.add("kind", "%q is not supported: write kind: %s", s.Kind, KindSuite)
	}
	switch m := s.Metadata; {
	case m.Name == "":
		iss.add("metadata.name", "missing: name the suite (it names its reports and output directory)")
	case !nameRE.MatchString(m.Name):
		iss.add("metadata.name", "%q: use lower-case letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 63 characters", m.Name)
	}
	if s.Target != nil {
		v := &validator{s: &Spec{Target: *s.Target}, types: FaultTypes(), faults: map[string]int{}, proxies: map[string]Proxy{}, lookupEnv: os.LookupEnv}
		v.dec = newDecoder(&v.iss)
		v.target()
		iss = append(iss, v.iss...)
	}
	checkOverrides(&iss, "overrides", s.Overrides, zeros)
	if len(s.Experiments) == 0 {
		iss.add("experiments", "no experiments: list at least one, as - {path: quickstart.yaml}")
	}
	for i, e := range s.Experiments {
		p := index("experiments", i)
		if strings.TrimSpace(e.Path) == "" {
			iss.add(p+".path", "missing: give the experiment file, relative to the suite file")
		}
		checkOverrides(&iss, p+".overrides", e.Overrides, zeros)
		checkTags(&iss, p+".tags", e.Tags)
		switch {
		case e.Weight < 0 || math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0):
			iss.add(p+".weight", "%g: want a weight above 0 (default 1)", e.Weight)
		case zeros[p+".weight"]:
			iss.add(p+".weight", "0 would leave the experiment out of the score: give a weight above 0, or leave it out for 1")
		}
	}
	if s.Settle < 0 {
		iss.add("settle", "%v is negative", s.Settle)
	}
	switch {
	case s.HealthTimeout < 0:
		iss.add("health_timeout", "%v is negative", s.HealthTimeout)
	case zeros["health_timeout"]:
		iss.add("health_timeout", "0s would skip every experiment after the first: leave it out for %v", DefaultSuiteHealthTimeout)
	}
	checkTags(&iss, "tags.include", s.Tags.Include)
	checkTags(&iss, "tags.exclude", s.Tags.Exclude)
	return iss
}

// checkTags checks a list of tags.
func checkTags(iss *issues, p string, tags []string) {
	for j, t := range tags {
		if !tagRE.MatchString(t) {
			iss.add(index(p, j), "%q: a tag is lower-case letters, digits, '.', '_' and '-', starting and ending with a letter or digit", t)
		}
	}
}

// checkOverrides checks the values of overrides at path p, as far as they
// can be checked without the experiment they apply to (Resolve checks the
// rest).
func checkOverrides(iss *issues, p string, o Overrides, zeros map[string]bool) {
	zero := func(key, what string) {
		if zeros[p+"."+key] {
			iss.add(p+"."+key, "0 %s: leave the key out to keep the experiment's", what)
		}
	}
	switch {
	case o.Rate < 0 || o.Rate > MaxRate || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		iss.add(p+".rate", "%g: want requests per second above 0, at most %g", o.Rate, float64(MaxRate))
	default:
		zero("rate", "requests per second would send nothing")
	}
	switch {
	case o.Duration < 0:
		iss.add(p+".duration", "%v is negative", o.Duration)
	default:
		zero("duration", "would end the load at once")
	}
	switch {
	case o.TimeScale < 0 || o.TimeScale > MaxTimeScale || math.IsNaN(o.TimeScale):
		iss.add(p+".time_scale", "%g: want a factor above 0, at most %d", o.TimeScale, MaxTimeScale)
	default:
		zero("time_scale", "would scale every time to nothing")
	}
	for _, key := range []string{"window", "hold"} {
		d := o.Recovery.Window
		if key == "hold" {
			d = o.Recovery.Hold
		}
		if d < 0 {
			iss.add(p+".recovery."+key, "%v is negative", d)
		} else {
			zero("recovery."+key, "")
		}
	}
	if b := o.Recovery.LatencyBand; b != 0 && (b < 1 || math.IsNaN(b) || math.IsInf(b, 0)) {
		iss.add(p+".recovery.latency_band", "%g: want 1 or more", b)
	}
	keys := make([]string, 0, len(o.Thresholds))
	for k := range o.Thresholds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		kp := child(p+".thresholds", k)
		if _, _, err := assertions.ParseKey(k); err != nil {
			for _, m := range problemMessages(err) {
				iss.addKey(kp, "%s", m)
			}
			continue
		}
		es := o.Thresholds[k]
		if len(es) == 0 {
			iss.add(kp, "no expressions: list at least one, such as [\"p(99)<500ms\"]")
		}
		prefix := len(strings.TrimSpace(k)) + len(": ")
		for j, e := range es {
			q := index(kp, j) + ".threshold"
			if strings.TrimSpace(e.Threshold) == "" {
				iss.add(q, "empty expression: write one such as \"p(99)<500ms\"")
				continue
			}
			_, err := assertions.ParseEntries(k, []assertions.Entry{{Threshold: e.Threshold}})
			pes := assertions.ParseErrors(err)
			for _, pe := range pes {
				iss.addAt(q, false, max(pe.Offset-prefix, 0), fmt.Sprintf("%s in %q", pe.Msg, e.Threshold))
			}
			if err != nil && len(pes) == 0 {
				for _, m := range problemMessages(err) {
					iss.add(q, "%s", m)
				}
			}
		}
	}
}

// FileKind returns the kind a file says it is (its top-level kind key:
// KindExperiment, KindSuite, or whatever else it writes), "" when it
// says none or is not a mapping. Its error is only a read error.
func FileKind(path string) (string, error) {
	data, err := readFile(path)
	if err != nil {
		return "", err
	}
	return DocumentKind(data), nil
}

// DocumentKind returns the top-level kind key of a YAML (or JSON)
// document, "" when there is none or the document does not parse.
func DocumentKind(data []byte) string {
	if checkRaw("", data, "a") != nil {
		return "" // Load refuses it, saying why
	}
	file, err := parseYAML(data)
	if err != nil {
		return ""
	}
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		tb := &treeBuilder{anchors: map[string]*node{}, sizes: map[*node]int{}}
		if k := tb.build(doc.Body, "", 0).keyed("kind"); k != nil && k.kind == kString {
			return k.text
		}
		return ""
	}
	return ""
}

// keyed returns the value of key in mapping n (the last one when it is
// given twice), nil when n is not a mapping or has no such key.
func (n *node) keyed(key string) *node {
	var v *node
	for _, e := range n.keys {
		if e.key == key {
			v = e.val
		}
	}
	return v
}

// ExperimentFiles lists the experiment files of dir in name order: its
// *.yaml and *.yml files, leaving out suite files (kind: Suite), so that
// a directory holding a suite over its experiments lists only them.
func ExperimentFiles(dir string) ([]string, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	out := files[:0]
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		k, err := FileKind(f)
		if err != nil {
			return nil, err
		}
		if k != KindSuite {
			out = append(out, f)
		}
	}
	return out, nil
}
