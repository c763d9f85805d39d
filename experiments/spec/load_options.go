package spec

import (
	"fmt"
	"path/filepath"
)

// LoadOptions change what LoadWith accepts: settings given from outside
// the experiment file, applied to it before it is validated.
type LoadOptions struct {
	// Capacity is a capacity file given from outside the experiment
	// (llmchaos run --capacity, llmchaos suite --capacity): when the
	// workload's rate is a share (rate: 80%), it becomes the workload's
	// capacity, in place of the file's own (as an absolute path, since it
	// is relative to the working directory, not to the experiment file).
	// A workload whose rate is not a share is left as it is.
	Capacity string
	// ApplyCapacity reads the capacity file of a rate given as a share
	// and sets the rate from it before the spec is validated
	// (LoadExperiment sets it).
	ApplyCapacity bool
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

// LoadWith does what Load does, with o applied to the file before it is
// validated.
func LoadWith(path string, o LoadOptions) (*Spec, Problems, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("experiment: %w", err)
	}
	spec, ps, _ := parse(path, data, o)
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return spec, ps, nil
}

// LoadExperiment loads the experiment file at path and resolves it
// (Experiment): o applied, the capacity file read for a rate given as a
// share, every check run once, each with its file:line:col. The problems
// returned are warnings; an error is a Problems.
func LoadExperiment(path string, o LoadOptions) (*Experiment, Problems, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("experiment: %w", err)
	}
	return ParseExperiment(path, data, o)
}

// ParseExperiment is LoadExperiment of a file's contents; name is the
// file name used in problems and for relative paths ("" : the working
// directory's).
func ParseExperiment(name string, data []byte, o LoadOptions) (*Experiment, Problems, error) {
	o.ApplyCapacity = true
	_, ps, x := parse(name, data, o)
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return x, ps, nil
}
