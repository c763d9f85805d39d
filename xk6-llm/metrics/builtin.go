package metrics

// Units of the built-in metrics. A trend whose unit is UnitMillis is a
// duration; any other unit is a plain number.
const (
	UnitMillis   = "ms"       // durations, in milliseconds
	UnitTokens   = "tokens"   // token counts
	UnitRatio    = "ratio"    // shares from 0 to 1
	UnitRequests = "requests" // request counts
	UnitPerS     = "1/s"      // per-second figures
	UnitBytes    = "B"        // byte counts (k6's data_sent, data_received)
	UnitPosition = "position" // a 0-based place in an answer: a token's, or a character's
	UnitAnswers  = "answers"  // counts of distinct answers
)

// Builtin returns the table of built-in metrics, in documentation order
// (the order of threshold error messages and of docs/metrics.md). The slice is
// new on each call; callers may keep or change it.
//
// The definitions are DESIGN §3's. Series says which metrics the
// per-second series and the live windows see by event time (a first
// token, a chunk, as it arrives) and which by completion (when the
// request ends); whole-run figures are the same either way. JSONKey names the metric's figure in the
// JSON run report: a key of "metrics" for trends, of "quality" for rates,
// of "throughput" for per-second figures (goodput's is in "quality"), of
// "requests" for counters; empty
// when the report does not carry it (the experiment runner reports
// recovery times in their own section).
func Builtin() []Metric {
	return []Metric{
		{Name: "ttft", Series: SeriesEvent, Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true, Compare: CompareBootstrap,
			JSONKey: "ttft_ms", PromName: "llmchaos_ttft_seconds",
			PromHelp:    "Time to first token (send to first content chunk), in seconds.",
			Description: "actual send to first content chunk"},
		{Name: "itl", Series: SeriesEvent, Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true, Compare: CompareBootstrap,
			JSONKey: "itl_ms", PromName: "llmchaos_itl_seconds",
			PromHelp:    "Inter-token latency: gap between consecutive content chunks, in seconds.",
			Description: "gap between consecutive content chunks, pooled"},
		{Name: "tpot", Series: SeriesCompletion, Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true, Compare: CompareBootstrap,
			JSONKey: "tpot_ms", PromName: "llmchaos_tpot_seconds",
			PromHelp:    "Time per output token of ok requests: (e2e - ttft) / (output tokens - 1), in seconds.",
			Description: "(e2e - ttft) / (output_tokens - 1) per request"},
		{Name: "e2e", Series: SeriesCompletion, Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true, Compare: CompareBootstrap,
			JSONKey: "e2e_ms", PromName: "llmchaos_e2e_seconds",
			PromHelp:    "End-to-end latency of ok requests (send to end of stream), in seconds.",
			Description: "actual send to end of stream"},
		{Name: "send_lag", Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true, Compare: CompareStats,
			JSONKey: "send_lag_ms", PromName: "llmchaos_send_lag_seconds",
			PromHelp:    "Send lag of sent requests: actual send - scheduled send, in seconds.",
			Description: "actual send - scheduled send: the client's own delay (connection set-up is in ttft and e2e)"},
		{Name: "client_queue", Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true,
			JSONKey: "client_queue_ms", Description: "time waiting for an in-flight slot"},
		{Name: "connect", Kind: Trend, Unit: UnitMillis, Builtin: true, Default: true,
			JSONKey: "connect_ms", Description: "new connection set-up (DNS, TCP, TLS), requests that opened one; part of their ttft and e2e"},
		{Name: "recovery_time", Kind: Trend, Unit: UnitMillis, Builtin: true,
			Description: "fault injection to sustained recovery, per fault: searched from the revert of a sustained fault, from the injection of a kill, stop or restart"},
		{Name: "time_to_recover", Kind: Trend, Unit: UnitMillis, Builtin: true,
			Description: "revert of a sustained fault to sustained recovery, per fault (none for a kill, stop or restart)"},
		{Name: "oom_recovery_time", Kind: Trend, Unit: UnitMillis, Builtin: true,
			Description: "OOM kill to the replica serving again"},
		{Name: "input_tokens", Kind: Trend, Unit: UnitTokens, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "input_tokens", Description: "prompt tokens per request (usage when reported, else the client's count)"},
		{Name: "output_tokens", Kind: Trend, Unit: UnitTokens, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "output_tokens", Description: "output tokens per request (usage when reported, else content chunks counted)"},
		{Name: "error_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "error_rate", Description: "failed / finished requests; a request cut by a timeout or unfinished when the run ended (grace expired) is failed (timeout), only cancels the workload asked for are not"},
		{Name: "truncation_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "truncation_rate", Description: "share finished with finish_reason length (not counted when ignore_eos asked for max_tokens)"},
		{Name: "rejection_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "rejection_rate", Description: "share rejected with HTTP 400, 413 or 422"},
		{Name: "throttle_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "throttle_rate", Description: "share answered 429"},
		{Name: "repetition_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "repetition_rate", Description: "share of output n-grams that repeat"},
		{Name: "empty_output_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "empty_output_rate", Description: "share of successful requests with no output"},
		{Name: "usage_mismatch_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "usage_mismatch_rate", Description: "chunks and usage differ by more than max(2, 5 %)"},
		{Name: "integrity_error_rate", Series: SeriesCompletion, Kind: Rate, Unit: UnitRatio, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "integrity_error_rate", Description: "share of finished requests failed with an integrity_* class: a stream that arrived but was corrupted (events after finish, no [DONE], id or model changed, a foreign choice, text re-sent at a resume point, more chunks than usage tokens, stop with no content, bad UTF-8 or JSON); the per-class counts say which and what to suspect"},
		{Name: "output_consistency", Kind: Rate, Unit: UnitRatio, Builtin: true,
			Description: "share of consistency probes (probes:) whose answer equals their prompt's reference, the answer most baseline probes gave; by phase and fault; in the baseline it is the engine's own agreement (below 1: not deterministic even idle)"},
		{Name: "output_divergence_at", Kind: Trend, Unit: UnitPosition, Builtin: true,
			Description: "per probe that left its reference: where its answer first differs, the index of the first differing token when the stream gives one token per chunk (usage equals chunks), else of the first differing character"},
		{Name: "output_distinct_answers", Kind: Trend, Unit: UnitAnswers, Builtin: true,
			Description: "per probe prompt: how many different answers its probes gave in the selection (1: all alike); max<=1 says every prompt kept one answer"},
		{Name: "requests", Series: SeriesCompletion, Kind: Counter, Unit: UnitRequests, Builtin: true, Default: true,
			JSONKey: "sent", PromName: "llmchaos_requests_total",
			PromHelp:    "Requests that ended, by outcome (ok, failed, cancelled, dropped) and error_class.",
			Description: "requests sent"},
		{Name: "requests_lost", Kind: Counter, Unit: UnitRequests, Builtin: true, Default: true,
			JSONKey: "lost", PromName: "llmchaos_requests_lost",
			PromHelp:    "Sent requests that never ended as a result: sent - (ok + failed + cancelled), set at the run's end; must be 0.",
			Description: "sent - (ok + failed + cancelled)"},
		{Name: "requests_per_s", Series: SeriesCompletion, Kind: Gauge, Unit: UnitPerS, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "requests_per_s", Label: "ok requests", Description: "ok requests per second (vLLM's request throughput)"},
		{Name: "input_tokens_per_s", Series: SeriesCompletion, Kind: Gauge, Unit: UnitPerS, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "input_tokens_per_s", Label: "input tokens", Description: "input tokens of ok requests per second"},
		{Name: "output_tokens_per_s", Series: SeriesEvent, Kind: Gauge, Unit: UnitPerS, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "output_tokens_per_s", Label: "output tokens", Description: "output tokens of ok requests per second; in live windows and the per-second series, tokens as they stream (every request's chunks, by event time)"},
		{Name: "total_tokens_per_s", Series: SeriesEvent, Kind: Gauge, Unit: UnitPerS, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "total_tokens_per_s", Label: "total tokens", Description: "input and output tokens of ok requests per second; in live windows and the per-second series, output tokens as they stream, input tokens when a request ends"},
		{Name: "goodput", Series: SeriesCompletion, Kind: Gauge, Unit: UnitPerS, Builtin: true, Default: true, Compare: CompareValue,
			JSONKey: "goodput_per_s", Description: "requests per second that met every goodput SLO"},
	}
}
