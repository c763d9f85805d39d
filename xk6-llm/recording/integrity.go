package recording

// Integrity classes: a streamed answer that arrived in full but whose stream
// broke the OpenAI streaming contract in a way a healthy engine never does.
// They are error classes of their own (a request so marked is failed), kept
// apart from protocol (a stream that could not be read at all) so that a
// report says which kind of corruption happened; IntegrityClasses says what
// a user should suspect for each.
const (
	ClassIntegrityAfterFinish   ErrorClass = "integrity_after_finish"
	ClassIntegrityMissingDone   ErrorClass = "integrity_missing_done"
	ClassIntegrityIDChanged     ErrorClass = "integrity_id_changed"
	ClassIntegrityModelChanged  ErrorClass = "integrity_model_changed"
	ClassIntegrityChoiceIndex   ErrorClass = "integrity_choice_index"
	ClassIntegrityResumeRepeat  ErrorClass = "integrity_resume_repeat"
	ClassIntegrityUsageMismatch ErrorClass = "integrity_usage_mismatch"
	ClassIntegrityEmptyStop     ErrorClass = "integrity_empty_stop"
	ClassIntegrityInvalidUTF8   ErrorClass = "integrity_invalid_utf8"
	ClassIntegrityInvalidJSON   ErrorClass = "integrity_invalid_json"
)

// IntegrityClass describes one integrity class for reports and
// `llmchaos metrics`.
type IntegrityClass struct {
	Class   ErrorClass
	What    string // what the client saw
	Suspect string // what a user should suspect
}

// IntegrityClasses is the table of integrity classes, in report order.
var IntegrityClasses = []IntegrityClass{
	{ClassIntegrityAfterFinish, "a content chunk or a second finish_reason after the finish_reason chunk",
		"a router or proxy that retried or migrated the request and spliced a second answer onto the first"},
	{ClassIntegrityMissingDone, "the body ended after the finish_reason chunk without data: [DONE]",
		"a proxy or gateway that cut the stream's tail, or an engine that does not end its streams as OpenAI's API does"},
	{ClassIntegrityIDChanged, "the response id changed mid-stream",
		"a router that moved the stream to another replica (retry, migration) or a proxy that spliced two streams"},
	{ClassIntegrityModelChanged, "the model name changed mid-stream",
		"a router that sent part of the stream to a replica serving another model or revision"},
	{ClassIntegrityChoiceIndex, "a chunk whose choice index was not asked for (n=1 but index != 0, or several choices)",
		"a proxy that spliced another stream's events in, or an engine bug in choice bookkeeping"},
	{ClassIntegrityResumeRepeat, "after a gap the stream re-sent text it had already sent (a suffix of the answer, twice)",
		"a router that migrated or retried the stream and replayed the tokens generated so far (request migration)"},
	{ClassIntegrityUsageMismatch, "more content chunks than usage.completion_tokens, beyond the usage tolerance",
		"a router or proxy that duplicated events; the engine counted fewer tokens than the client received"},
	{ClassIntegrityEmptyStop, "finish_reason stop with no content, reasoning or tool call at all",
		"the engine: an aborted or preempted sequence reported as finished, or a proxy that dropped every content event"},
	{ClassIntegrityInvalidUTF8, "a chunk whose bytes are not valid UTF-8",
		"a proxy that altered bytes, or an engine that split a multi-byte character across chunks without buffering it"},
	{ClassIntegrityInvalidJSON, "a data line that is not a valid JSON chunk",
		"a proxy or load balancer that cut or merged events (buffer limits), or an engine bug"},
}

// IsIntegrity reports whether c is one of the integrity classes.
func IsIntegrity(c ErrorClass) bool {
	for _, ic := range IntegrityClasses {
		if ic.Class == c {
			return true
		}
	}
	return false
}

// IntegritySuspect returns what to suspect for integrity class c ("" for
// any other class).
func IntegritySuspect(c ErrorClass) string {
	for _, ic := range IntegrityClasses {
		if ic.Class == c {
			return ic.Suspect
		}
	}
	return ""
}
