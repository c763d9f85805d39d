package script

import (
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
)

// The fields of a script's options, as their problems key them: paths
// from the root of `export const options`, with k6's key names
// (scenarios.spike.preAllocatedVUs, stages[1].target). A scenario's
// problems are under scenarios.NAME; those of the scenario the vus,
// duration, iterations and stages shortcut describes are at the root,
// where the script wrote them. OptionName names them for a script's
// author; an experiment names the overrides by its workload keys.
const (
	FieldScenarios         field.Path = "scenarios"
	FieldVUs               field.Path = "vus"
	FieldDuration          field.Path = "duration"
	FieldIterations        field.Path = "iterations"
	FieldStages            field.Path = "stages"
	FieldThresholds        field.Path = "thresholds"
	FieldSummaryTrendStats field.Path = "summaryTrendStats"
	FieldSummaryTimeUnit   field.Path = "summaryTimeUnit"
	FieldSetupTimeout      field.Path = "setupTimeout"
	FieldTeardownTimeout   field.Path = "teardownTimeout"
	FieldMinIterDuration   field.Path = "minIterationDuration"

	fieldRate             field.Path = "rate"
	fieldStartRate        field.Path = "startRate"
	fieldStartVUs         field.Path = "startVUs"
	fieldGracefulRampDown field.Path = "gracefulRampDown"
	fieldPreAllocatedVUs  field.Path = "preAllocatedVUs"
	fieldMaxVUs           field.Path = "maxVUs"
	fieldTimeUnit         field.Path = "timeUnit"
	fieldExec             field.Path = "exec"
)

// FieldOverrides is the root of the overrides' fields (Overrides: a
// command line's --vus, --duration and --iterations, an experiment's
// workload keys): overrides.rate, overrides.duration, overrides.vus,
// overrides.iterations. They are not options: each front end names them
// as it takes them.
const FieldOverrides field.Path = "overrides"

// Override fields (under FieldOverrides).
var (
	FieldOverrideRate       = FieldOverrides.Key("rate")
	FieldOverrideDuration   = FieldOverrides.Key("duration")
	FieldOverrideVUs        = FieldOverrides.Key("vus")
	FieldOverrideIterations = FieldOverrides.Key("iterations")
)

// OptionName names a field of a script's options as its author writes it
// in JavaScript (options.scenarios.spike.rate), and an override as "the
// duration override". It is the script front end's field.Namer.
func OptionName(p field.Path) string {
	if rest, ok := strings.CutPrefix(string(p), string(FieldOverrides)+"."); ok {
		return "the " + rest + " override"
	}
	if p == "" {
		return "options"
	}
	return "options." + string(p)
}
