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
	spec, ps := parse(path, data, o)
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return spec, ps, nil
}
