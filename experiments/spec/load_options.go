package spec

import (
	"fmt"
	"path/filepath"

	"github.com/llmchaos/llmchaos/internal/field"
)

// LoadOptions change what LoadExperiment resolves: settings given from
// outside the experiment file, applied to it before it is checked.
type LoadOptions struct {
	// Capacity is a capacity file given from outside the experiment
	// (llmchaos run --capacity, llmchaos suite --capacity): when the
	// workload's rate is a share (rate: 80%), it becomes the workload's
	// capacity, in place of the file's own (as an absolute path, since it
	// is relative to the working directory, not to the experiment file).
	// A workload whose rate is not a share is left as it is.
	Capacity string
	// Steps change the experiment after its file is decoded, in order,
	// before it is resolved: a suite's target and overrides, run's
	// command-line overrides. The experiment is checked once, with every
	// step made; a problem one of them brings in is placed by its Blame.
	Steps []Step

	// applyCapacity reads the capacity file of a rate given as a share
	// and sets the rate from it before the spec is checked
	// (ParseExperiment sets it).
	applyCapacity bool
}

// Step is a change made to an experiment between its file and its
// resolution.
type Step struct {
	// Apply makes the change. An error says that it cannot be made: the
	// experiment is then not resolved, and the error is among the
	// problems (as they are when it is a field.Problems or a field.Problem, else as
	// one problem of its message).
	Apply func(*Spec) error
	// Blame places a problem the step brings in, one the experiment does
	// not have before it: p has the experiment file as File, its key path
	// and message, and no position (nil: kept as it is).
	Blame func(p field.Problem) field.Problem
}

// apply sets what o gives on a decoded spec.
func (o LoadOptions) apply(s *Spec) {
	if o.Capacity != "" && s.Workload.Rate.IsShare() {
		s.Workload.Capacity = absPath(o.Capacity)
	}
}

// absPath is p made absolute, or p when that fails.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// LoadExperiment loads the experiment file at path and resolves it
// (Experiment): o's steps made and its settings applied, the capacity
// file read for a rate given as a share, every check run once, each
// problem with its file:line:col. The problems returned are warnings; an
// error is a field.Problems.
func LoadExperiment(path string, o LoadOptions) (*Experiment, field.Problems, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("experiment: %w", err)
	}
	return ParseExperiment(path, data, o)
}

// ParseExperiment is LoadExperiment of a file's contents; name is the
// file name used in problems and for relative paths ("" : the working
// directory's).
func ParseExperiment(name string, data []byte, o LoadOptions) (*Experiment, field.Problems, error) {
	o.applyCapacity = true
	_, ps, x := parse(name, data, o)
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return x, ps, nil
}
