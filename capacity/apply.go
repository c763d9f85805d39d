package capacity

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/llmchaos/llmchaos/experiments/spec"
)

// Applied says what Apply did to an experiment's rate.
type Applied struct {
	// File is the capacity file read; Knee its knee (requests per
	// second) and Status how its search ended.
	File   string
	Knee   float64
	Status Status
	// Share is the workload's share of the knee (0.8 for 80%) and Rate
	// the rate that results, in requests per second.
	Share float64
	Rate  float64
	// Warnings say where the capacity may not fit the experiment: a knee
	// that is only a lower bound, a search that was stopped, another
	// workload.
	Warnings []string
}

// String says what was applied: "80% of the knee 65 req/s (capacity.json):
// 52 req/s".
func (a Applied) String() string {
	return fmt.Sprintf("%s%% of the knee %s req/s (%s): %s req/s",
		FormatLoad(100*a.Share), FormatLoad(a.Knee), a.File, FormatLoad(a.Rate))
}

// Apply sets s's workload rate, given as a share of a measured capacity
// (workload: {rate: 80%}), to that share of the knee of the capacity file
// at path, whatever workload.capacity names (the suite's --capacity gives
// one file for every experiment). A rate in requests per second is left
// as it is (ok false). The file must be a capacity search in rate mode
// with a knee; a knee that is only a lower bound (the client was the
// limit, or no load failed) or that another workload measured is applied
// with a warning.
func Apply(s *spec.Spec, path string) (a Applied, ok bool, err error) {
	if !s.Workload.Rate.IsShare() {
		return Applied{}, false, nil
	}
	sa, err := spec.ApplyCapacity(s, path)
	a = Applied{File: sa.File, Knee: sa.Knee, Status: Status(sa.Status), Share: sa.Share, Rate: sa.Rate, Warnings: sa.Warnings}
	if err != nil {
		return a, false, err
	}
	return a, true, nil
}

// ApplyOwn applies the capacity file the workload names
// (workload.capacity, relative to the experiment file specFile's folder);
// see Apply. A share without a capacity file is an error.
func ApplyOwn(s *spec.Spec, specFile string) (Applied, bool, error) {
	w := s.Workload
	if !w.Rate.IsShare() {
		return Applied{}, false, nil
	}
	if w.Capacity == "" {
		return Applied{}, false, errors.New("workload.rate " + w.Rate.String() + " is a share of a measured capacity and workload.capacity names no capacity file: add one, or give it with --capacity FILE")
	}
	dir := ""
	if specFile != "" {
		dir = filepath.Dir(specFile)
	}
	return Apply(s, w.CapacityPath(dir))
}
