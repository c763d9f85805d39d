package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Experiment is an experiment resolved once, which every verb takes (run,
// suite, gameday, capacity, validate, run --dry-run, the shards): the spec
// with its defaults, its capacity file applied (a rate given as a share
// is then in requests per second), the workload's preset and defaults
// resolved and checked, and each fault's params decoded into its type's
// params struct. Nothing downstream decodes params or applies a default
// again.
type Experiment struct {
	// Spec is the experiment with its defaults (Spec.WithDefaults).
	Spec Spec
	// File is the experiment file ("" for one given as a value): relative
	// paths in it are relative to its folder.
	File string
	// Workload and Arrival are the workload's resolved configs (preset,
	// keys, defaults); zero with a script, which drives the load itself.
	// Arrival is Checked.
	Workload workload.Config
	Arrival  workload.ArrivalConfig
	// Faults are the timeline's faults, in order, each with its params
	// decoded.
	Faults []ResolvedFault
	// Capacity says what the capacity file set (nil when the rate is not a
	// share).
	Capacity *CapacityApplied
	// Warnings are the spec's warnings.
	Warnings field.Problems
}

// ResolvedFault is one fault of the timeline with its type and its params
// decoded (the type's params struct); Params completes them from the
// target and the type's defaults.
type ResolvedFault struct {
	Index  int
	Fault  Fault
	Type   FaultType
	params any
}

// Params returns a copy of the fault's decoded params with what the
// target gives filled in (FromSim, FromKubernetes), then the type's
// defaults (Defaults): a copy, so that a placeholder filled in for a dry
// run never reaches a run. The runner reads and builds these; it applies
// no default of its own.
func (f ResolvedFault) Params(env TargetEnv) any {
	p := copyParams(f.params)
	completeParams(p, f.Type, env)
	return p
}

// completeParams fills in what env gives to params of type ft, then the
// type's defaults: the last steps of a fault's resolution.
func completeParams(params any, ft FaultType, env TargetEnv) {
	if ft.FromSim != nil && env.Sim != nil {
		ft.FromSim(params, *env.Sim)
	}
	if ft.FromKubernetes != nil && env.Kubernetes != nil {
		ft.FromKubernetes(params, *env.Kubernetes)
	}
	if ft.Defaults != nil {
		ft.Defaults(params)
	}
}

// copyParams returns a copy of p, a pointer to a params struct.
func copyParams(p any) any {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return p
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface()
}

// Resolve resolves s, the experiment of file ("" for none): it applies
// the capacity file to a rate given as a share, checks s (every problem
// at once, as field.Problems), and returns the one resolved value. s is
// changed only by the capacity (its rate).
func Resolve(s *Spec, file string) (*Experiment, error) {
	var applied *CapacityApplied
	if s.Workload.Rate.Unresolved() && s.Workload.Capacity != "" {
		a, err := ApplyCapacity(s, s.Workload.CapacityPath(baseDir(file)))
		if err != nil {
			return nil, problemsOf(err)
		}
		applied = &a
	}
	v := s.checker(nil, baseDir(file))
	ps := make(field.Problems, len(v.iss))
	for i, is := range v.iss {
		ps[i] = problemAt("", 0, 0, is.path, is.msg, is.warn)
	}
	sortProblems(ps)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	return experimentOf(s, file, v, applied, ps.Warnings()), nil
}

// experimentOf builds the resolved experiment of s from what the check
// v resolved on the way.
func experimentOf(s *Spec, file string, v *validator, applied *CapacityApplied, warnings field.Problems) *Experiment {
	x := &Experiment{Spec: s.WithDefaults(), File: file, Capacity: applied, Warnings: warnings}
	if s.Workload.Script == "" {
		x.Workload, x.Arrival = v.resolved.Workload, v.resolved.Arrival
	}
	types := FaultTypes()
	for i, f := range x.Spec.Faults {
		x.Faults = append(x.Faults, ResolvedFault{Index: i, Fault: f, Type: types[f.Type], params: v.params[i]})
	}
	return x
}

// decodeHook counts the decodings of fault params, for the test that one run
// decodes each once (SetDecodeHook).
var decodeHook atomic.Pointer[func()]

func countDecode() {
	if h := decodeHook.Load(); h != nil {
		(*h)()
	}
}

// SetDecodeHook makes f be called on every decoding of a fault's params
// into its params struct, and returns the function that removes it. For
// tests only: it is process-wide, so a test that sets it must not run in
// parallel.
func SetDecodeHook(f func()) (restore func()) {
	old := decodeHook.Swap(&f)
	return func() { decodeHook.Store(old) }
}

// CapacityApplied says what a capacity file set an experiment's rate to.
type CapacityApplied struct {
	// File is the capacity file read; Knee its knee (requests per
	// second) and Status how its search ended.
	File   string
	Knee   float64
	Status string
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
func (a CapacityApplied) String() string {
	return fmt.Sprintf("%s%% of the knee %s req/s (%s): %s req/s",
		formatLoad(100*a.Share), formatLoad(a.Knee), a.File, formatLoad(a.Rate))
}

// formatLoad writes a load with at most two decimals, as capacity does.
func formatLoad(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// CapacityFileKind marks a capacity file (llmchaos capacity --out FILE);
// CapacityFileVersion is the newest version read. The capacity package
// writes them; capacityFile is the part of it a workload's rate takes.
const (
	CapacityFileKind    = "llmchaos-capacity"
	CapacityFileVersion = 1
)

// capacityFile is what a rate given as a share reads of a capacity file.
type capacityFile struct {
	Kind     string `json:"kind"`
	Version  int    `json:"version"`
	Mode     string `json:"mode"`
	Unit     string `json:"unit"`
	Status   string `json:"status"`
	Summary  string `json:"summary"`
	Workload struct {
		Preset string `json:"preset"`
		Class  string `json:"class"`
	} `json:"workload"`
	Knee struct {
		Load float64 `json:"load"`
	} `json:"knee"`
}

// errNoKnee is ApplyCapacity's error for a capacity file without a knee.
var errNoKnee = errors.New("no load held every SLO")

// The fields ApplyCapacity's problems are about and mention.
const (
	fieldCapacity field.Path = "workload.capacity"
	fieldRate     field.Path = "workload.rate"
)

// ApplyCapacity sets s's workload rate, given as a share of a measured
// capacity (workload: {rate: 80%}), to that share of the knee of the
// capacity file at path. The file must be a capacity search in rate mode
// with a knee; a knee that is only a lower bound (the client was the
// limit, or no load failed) or that another workload measured is applied
// with a warning. A rate that is not a share is left as it is. Its error
// is a field.Problem of the capacity file (workload.capacity, whose
// message names workload.rate as a field), which each front end names
// its own way.
func ApplyCapacity(s *Spec, path string) (CapacityApplied, error) {
	w := &s.Workload
	if !w.Rate.IsShare() {
		return CapacityApplied{}, nil
	}
	// bad is a problem of the capacity file, said of the rate it is for.
	bad := func(format string, args ...any) field.Problem {
		return field.Errorf(fieldCapacity, "%s %s: "+format, append([]any{fieldRate, w.Rate}, args...)...)
	}
	b, err := readFileLimit(path, maxCapacityFileSize, "a capacity file")
	if err != nil {
		return CapacityApplied{}, bad("capacity file: %w", err)
	}
	var r capacityFile
	switch err := json.Unmarshal(b, &r); {
	case err != nil:
		return CapacityApplied{}, bad("capacity file %s: not a capacity file (write one with llmchaos capacity --out FILE): %w", path, err)
	case r.Kind != CapacityFileKind:
		return CapacityApplied{}, bad("capacity file %s: kind %q is not %q: not a capacity file (write one with llmchaos capacity --out FILE)", path, r.Kind, CapacityFileKind)
	case r.Version < 1 || r.Version > CapacityFileVersion:
		return CapacityApplied{}, bad("capacity file %s: version %d: this llmchaos reads version %d; use the llmchaos that wrote it, or measure again", path, r.Version, CapacityFileVersion)
	}
	a := CapacityApplied{File: path, Knee: r.Knee.Load, Status: r.Status, Share: w.Rate.Share}
	switch {
	case r.Mode != "rate":
		return a, bad("%s measured the knee in %s mode (%s); a rate needs a capacity measured in rate mode: llmchaos capacity --mode rate",
			path, r.Mode, formatLoad(r.Knee.Load)+" "+r.Unit)
	case r.Knee.Load <= 0:
		return a, bad("%s has no knee (%w; status %s): %s", path, errNoKnee, r.Status, r.Summary)
	}
	switch r.Status {
	case "client_limited":
		a.Warnings = append(a.Warnings, fmt.Sprintf("the knee in %s is a lower bound: the client, not the server, limited that search", path))
	case "above_max":
		a.Warnings = append(a.Warnings, fmt.Sprintf("the knee in %s is a lower bound: every load that search tried held the SLO", path))
	case "interrupted", "step_limit":
		a.Warnings = append(a.Warnings, fmt.Sprintf("the search in %s did not finish (%s): its knee is what it measured so far", path, r.Status))
	}
	if p := w.Preset; p != "" && r.Workload.Preset != p {
		name := r.Workload.Preset
		if name == "" {
			name = r.Workload.Class
		}
		a.Warnings = append(a.Warnings, fmt.Sprintf("%s was measured with workload %q, this experiment sends %q: its capacity may differ", path, name, p))
	}
	a.Rate = w.Rate.Share * r.Knee.Load
	w.Rate.PerSecond = a.Rate
	return a, nil
}
