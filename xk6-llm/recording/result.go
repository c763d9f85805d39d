package recording

import "time"

// Outcome is how a scheduled request ended. Every scheduled request ends with
// exactly one Outcome (DESIGN §4).
type Outcome uint8

// Outcomes.
const (
	// OutcomeOK is a request answered in full (HTTP 2xx, stream ended cleanly).
	OutcomeOK Outcome = iota + 1
	// OutcomeFailed is a request that errored; Result.Class says how.
	OutcomeFailed
	// OutcomeCancelled is a request the client cancelled because it was
	// asked to (the workload's cancellation plan, a scripted cancel,
	// Ctrl-C); it is not an error. A request cut short by a timeout or by
	// the run's end (its grace expired) is OutcomeFailed with ClassTimeout:
	// the service did not answer in time.
	OutcomeCancelled
	// OutcomeDropped is a request the engine could not start in time
	// (--on-saturation drop); it was never sent (k6's dropped_iterations).
	OutcomeDropped
)

// String returns the outcome's name as used in reports.
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeFailed:
		return "failed"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeDropped:
		return "dropped"
	}
	return "unknown"
}

// ErrorClass classifies a failed request (DESIGN §3). The string values are
// the names used in reports, thresholds and Prometheus labels.
type ErrorClass string

// Error classes.
const (
	ClassNone      ErrorClass = ""
	ClassConnect   ErrorClass = "connect"   // dial failed, refused, DNS
	ClassReset     ErrorClass = "reset"     // connection reset or closed mid-response
	ClassTimeout   ErrorClass = "timeout"   // request, TTFT or idle timeout hit, or unfinished at the run's end
	ClassHTTP4xx   ErrorClass = "http_4xx"  // HTTP 400-499 except 429
	ClassHTTP429   ErrorClass = "http_429"  // throttled
	ClassHTTP5xx   ErrorClass = "http_5xx"  // HTTP 500-599
	ClassProtocol  ErrorClass = "protocol"  // malformed SSE/JSON, stream ended without [DONE] or finish
	ClassCancelled ErrorClass = "cancelled" // only with OutcomeCancelled
)

// ErrorClasses lists every failure class in report order.
var ErrorClasses = []ErrorClass{ClassConnect, ClassReset, ClassTimeout, ClassHTTP4xx, ClassHTTP429, ClassHTTP5xx, ClassProtocol, ClassCancelled,
	ClassIntegrityAfterFinish, ClassIntegrityMissingDone, ClassIntegrityIDChanged, ClassIntegrityModelChanged,
	ClassIntegrityChoiceIndex, ClassIntegrityResumeRepeat, ClassIntegrityUsageMismatch, ClassIntegrityEmptyStop,
	ClassIntegrityInvalidUTF8, ClassIntegrityInvalidJSON}

// Tags label a result so thresholds and reports can select subsets of a run.
// The runner fills Phase and Fault from its timeline; Class is the workload's
// request class (a preset or a user label); Endpoint is the base URL used;
// Scenario is the script scenario that recorded it (k6's `scenario` tag).
// Extra holds any other tag a script's sample carries (k6's system tags
// such as method, status, group or check, and the script's own), encoded
// by ExtraTags so that Tags stays comparable; "" when none.
type Tags struct {
	Phase    string // baseline, fault, recovery, after ("" outside experiments)
	Fault    string // name of the active fault, if any
	Class    string // request class, e.g. "chat"
	Endpoint string // base URL the request went to
	Scenario string // script scenario ("" outside scripts)
	Extra    string // other tags, as ExtraTags encodes them
}

// Result is the record of one scheduled request. Times are offsets on the
// run's single monotonic clock (time since run start); a zero offset means
// "did not happen" except Scheduled, which is always set.
type Result struct {
	Seq       uint64 // position in the schedule, from 0
	RequestID string // the x-request-id sent
	Session   uint64 // multi-turn session id (0 when not in a session)
	Turn      int    // turn within the session, from 0
	Tags      Tags

	Scheduled  time.Duration // when the schedule said to send
	Dequeued   time.Duration // when an in-flight slot was obtained (== Scheduled when none waited)
	Sent       time.Duration // actual send: the client starts the request (before any connection set-up)
	FirstToken time.Duration // first chunk carrying content, reasoning or a tool call
	End        time.Duration // end of stream ([DONE] or body end), error, or cancel

	// Connect is the time spent setting up a new connection (DNS, TCP,
	// TLS) for the request, a part of its TTFT and E2E; 0 when it used a
	// pooled keep-alive connection or none was set up.
	Connect time.Duration
	// Reconnects counts the times the request was sent again on a fresh
	// connection because the server closed the reused keep-alive
	// connection under it before answering (0 or 1). Not an error.
	Reconnects int

	// ITLMicros holds the gaps between consecutive content chunks, in
	// microseconds. The recorder pools them into the itl histogram and the
	// engine then releases the slice.
	ITLMicros []uint32

	Outcome    Outcome
	Class      ErrorClass // set when Outcome is OutcomeFailed or OutcomeCancelled
	HTTPStatus int        // 0 when no response arrived
	Err        string     // short error text for failed requests (never secrets)

	InputTokens      int // usage.prompt_tokens (0 when the server sent none)
	OutputTokens     int // usage.completion_tokens (0 when the server sent none)
	ContentChunks    int // chunks that carried content, reasoning or a tool call
	UsageReported    bool
	PromptTokensSent int    // the client's own estimate of the prompt it built
	FinishReason     string // "stop", "length", ... ("" when none seen)
	OutputChars      int    // characters of content received
	NgramsTotal      int    // n-grams in the output (for repetition_rate)
	NgramsRepeated   int    // n-grams that had already occurred in the same output

	// LiveEvents reports that the client gave this request's first token
	// and every content chunk to a live sink (Recorder.StreamEvents) as
	// they arrived, so that Record leaves them out of the per-second
	// series (it still records the whole-run histograms). Without it,
	// Record attributes them to the seconds they happened in from
	// FirstToken and the ITL gaps, late.
	LiveEvents bool
}

// ClientQueue is the time the request waited for an in-flight slot
// (client_queue): never part of TTFT.
func (r *Result) ClientQueue() time.Duration { return r.Dequeued - r.Scheduled }

// SendLag is actual send − scheduled send (coordinated omission made
// visible): the client's own delay, never connection set-up.
func (r *Result) SendLag() time.Duration {
	if r.Sent == 0 && r.Outcome == OutcomeDropped {
		return 0
	}
	return r.Sent - r.Scheduled
}

// TTFT is actual send → first content chunk; ok is false when none arrived.
func (r *Result) TTFT() (d time.Duration, ok bool) {
	if r.FirstToken == 0 {
		return 0, false
	}
	return r.FirstToken - r.Sent, true
}

// E2E is actual send → end of stream; ok is false for requests never sent.
func (r *Result) E2E() (d time.Duration, ok bool) {
	if r.Sent == 0 && r.Outcome == OutcomeDropped {
		return 0, false
	}
	return r.End - r.Sent, true
}

// OutputTokenCount is usage.completion_tokens when the server reported usage,
// else the number of content chunks (DESIGN §3).
func (r *Result) OutputTokenCount() int {
	if r.UsageReported {
		return r.OutputTokens
	}
	return r.ContentChunks
}

// TPOT is (e2e − ttft) / (output_tokens − 1); ok is false for requests with
// at most one output token or without a first token.
func (r *Result) TPOT() (d time.Duration, ok bool) {
	n := r.OutputTokenCount()
	ttft, ok1 := r.TTFT()
	e2e, ok2 := r.E2E()
	if !ok1 || !ok2 || n <= 1 {
		return 0, false
	}
	return (e2e - ttft) / time.Duration(n-1), true
}
