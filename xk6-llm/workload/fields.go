package workload

import "github.com/llmchaos/llmchaos/internal/field"

// The fields of a workload (Config) and of its load shape (ArrivalConfig),
// as their validation problems key them. They are the keys of an
// experiment's workload: mapping; llmchaos load names each by its flag.
const (
	FieldRate         field.Path = "rate"
	FieldArrival      field.Path = "arrival"
	FieldBurstiness   field.Path = "burstiness"
	FieldRamp         field.Path = "ramp"
	FieldStages       field.Path = "stages"
	FieldStartRate    field.Path = "start_rate"
	FieldTrace        field.Path = "trace"
	FieldDuration     field.Path = "duration"
	FieldRequests     field.Path = "requests"
	FieldConcurrency  field.Path = "concurrency"
	FieldThinkTime    field.Path = "think_time"
	FieldMaxInFlight  field.Path = "max_in_flight"
	FieldOnSaturation field.Path = "on_saturation"

	FieldClass             field.Path = "class"
	FieldAPI               field.Path = "api"
	FieldInputTokens       field.Path = "input_tokens"
	FieldOutputTokens      field.Path = "output_tokens"
	FieldMinTokens         field.Path = "min_tokens"
	FieldIgnoreEOS         field.Path = "ignore_eos"
	FieldDataset           field.Path = "dataset"
	FieldDatasetFormat     field.Path = "dataset_format"
	FieldPrefixCount       field.Path = "prefix_count"
	FieldPrefixTokens      field.Path = "prefix_tokens"
	FieldPrefixShare       field.Path = "prefix_share"
	FieldTurns             field.Path = "turns"
	FieldSessionThinkTime  field.Path = "session_think_time"
	FieldCancelShare       field.Path = "cancel_share"
	FieldCancelAfterTokens field.Path = "cancel_after_tokens"
	FieldCancelAfter       field.Path = "cancel_after"
)

// validateArrivalHook, when set, is called on every validation of an
// arrival config (ArrivalConfig.Problems). Tests set it (SetValidateHook)
// to count how often one run validates its load shape.
var validateArrivalHook func()

// SetValidateHook makes f be called on every validation of an arrival
// config, and returns the function that removes it. For tests only: it is
// process-wide, so a test that sets it must not run in parallel.
func SetValidateHook(f func()) (restore func()) {
	old := validateArrivalHook
	validateArrivalHook = f
	return func() { validateArrivalHook = old }
}
