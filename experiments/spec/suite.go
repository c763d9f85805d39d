package spec

import (
	"slices"
	"strings"
	"time"
)

// KindSuite is the kind of a suite file.
const KindSuite = "Suite"

// Suite defaults, filled in where a suite file leaves them out.
const (
	// DefaultSuiteHealthTimeout bounds the wait for the target to be
	// healthy again between two experiments.
	DefaultSuiteHealthTimeout = 2 * time.Minute
	// DefaultSuiteWeight is an experiment's weight in the suite's score.
	DefaultSuiteWeight = 1.0
)

// Suite is a suite file: experiments run one after another, with one
// target for all of them (so that the catalog's experiments can be pointed
// at a real deployment without editing each file), overrides, the time to
// settle between experiments and tags to select them. It decodes with the
// same strict, position-tracking loader as an experiment (LoadSuite);
// Resolve loads the experiments it lists.
//
//	apiVersion: llmchaos/v1
//	kind: Suite
//	metadata: {name: nightly}
//	target: {llm: {url: "http://staging:8000/v1"}}
//	settle: 10s
//	overrides: {time_scale: 0.5}
//	experiments:
//	  - {path: quickstart.yaml, tags: [network]}
//	  - {path: replica-kill.yaml, overrides: {duration: 45s}}
type Suite struct {
	APIVersion string   `yaml:"apiVersion" json:"apiVersion" doc:"Always llmchaos/v1."`
	Kind       string   `yaml:"kind" json:"kind" doc:"Always Suite."`
	Metadata   Metadata `yaml:"metadata" json:"metadata" doc:"Name, description and labels of the suite; the name names its reports and output directory."`
	// Target, when set, replaces every experiment's target.
	Target *Target `yaml:"target,omitempty" json:"target,omitempty" doc:"One target for every experiment of the suite: replaces each experiment's own (sim or llm), so the catalog's experiments can be pointed at a real deployment without editing them."`
	// Overrides apply to every experiment, under each experiment's own.
	Overrides   Overrides    `yaml:"overrides,omitempty" json:"overrides,omitzero" doc:"Overrides applied to every experiment (each experiment's own overrides win over them)."`
	Experiments []SuiteEntry `yaml:"experiments" json:"experiments" doc:"The experiments, run in this order."`
	// Settle is the wait after an experiment before the target's health
	// is checked and the next one starts.
	Settle Duration `yaml:"settle,omitempty" json:"settle,omitempty" doc:"Wait after each experiment before the health check and the next experiment. Default 0s."`
	// HealthTimeout bounds the wait for the target to be healthy again
	// after an experiment; the next one is skipped when it is not.
	HealthTimeout Duration `yaml:"health_timeout,omitempty" json:"health_timeout,omitempty" doc:"How long the target may take to be healthy again (its steady-state HTTP and PromQL probes, and the pre-flight check) after an experiment; when it is not, the next experiment is skipped with the reason. Default 2m."`
	// ContinueOnFail, false, stops the suite at the first experiment
	// that does not pass; the rest are marked not run.
	ContinueOnFail *bool `yaml:"continue_on_fail,omitempty" json:"continue_on_fail,omitempty" doc:"Go on after an experiment that did not pass. Default true; false stops at the first and marks the rest not run."`
	// Tags select the experiments that run.
	Tags TagFilter `yaml:"tags,omitempty" json:"tags,omitzero" doc:"Which experiments run, by tag (the command line's --tags and --skip-tags apply too)."`

	// doc is the file the suite was decoded from, to locate problems
	// found after decoding (Resolve); nil for a suite built in code.
	doc *document
	// file is the suite file's path.
	file string
}

// SuiteEntry is one experiment of a suite: a path (an experiment file, or
// a directory of them), overrides, tags and a weight.
type SuiteEntry struct {
	// Path is relative to the suite file's directory.
	Path      string    `yaml:"path" json:"path" doc:"The experiment file, relative to the suite file; a directory means every experiment file in it (*.yaml, sorted)."`
	Overrides Overrides `yaml:"overrides,omitempty" json:"overrides,omitzero" doc:"Overrides for this experiment, on top of the suite's."`
	Tags      []string  `yaml:"tags,omitempty" json:"tags,omitempty" doc:"Tags that --tags and --skip-tags select on, added to the automatic ones (the target kind, sim or llm, and each fault's family and type prefix: network, stream, http, replica, gpu)."`
	// Weight is the experiment's weight in the suite's resilience score.
	Weight float64 `yaml:"weight,omitempty" json:"weight,omitempty" doc:"Weight of the experiment in the suite's resilience score. Default 1."`
}

// TagFilter selects experiments by tag: one that has none of Exclude and,
// when Include is given, at least one of Include.
type TagFilter struct {
	Include []string `yaml:"include,omitempty" json:"include,omitempty" doc:"Run only the experiments with at least one of these tags."`
	Exclude []string `yaml:"exclude,omitempty" json:"exclude,omitempty" doc:"Leave out the experiments with any of these tags."`
}

// Match reports whether an experiment with tags passes f, and when it does
// not, why: "no tag of network, replica", "tag gpu is excluded".
func (f TagFilter) Match(tags []string) (bool, string) {
	has := func(t string) bool { return slices.Contains(tags, t) }
	for _, t := range f.Exclude {
		if has(t) {
			return false, "tag " + t + " is excluded"
		}
	}
	if len(f.Include) == 0 {
		return true, ""
	}
	for _, t := range f.Include {
		if has(t) {
			return true, ""
		}
	}
	return false, "has none of the tags " + strings.Join(f.Include, ", ")
}

// ContinuesOnFail reports continue_on_fail with its default, true.
func (s *Suite) ContinuesOnFail() bool { return s.ContinueOnFail == nil || *s.ContinueOnFail }

// HealthTimeoutOrDefault is health_timeout with its default.
func (s *Suite) HealthTimeoutOrDefault() time.Duration {
	if s.HealthTimeout <= 0 {
		return DefaultSuiteHealthTimeout
	}
	return s.HealthTimeout.D()
}

// File is the path the suite was loaded from ("" for one built in code).
func (s *Suite) File() string { return s.file }

// WeightOrDefault is the entry's weight with its default.
func (e SuiteEntry) WeightOrDefault() float64 {
	if e.Weight <= 0 {
		return DefaultSuiteWeight
	}
	return e.Weight
}

// SuiteOf returns a suite of the experiment files at paths, in order, with
// no settings of its own: what a directory or a plain experiment file given
// to `llmchaos suite` stands for. Its paths are used as they are.
func SuiteOf(name string, paths ...string) *Suite {
	s := &Suite{APIVersion: APIVersion, Kind: KindSuite, Metadata: Metadata{Name: name}}
	for _, p := range paths {
		s.Experiments = append(s.Experiments, SuiteEntry{Path: p})
	}
	return s
}
