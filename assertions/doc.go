// Package assertions turns a run's record into a verdict. It owns the
// threshold grammar (k6's, so QA engineers need to learn nothing new), its
// parser and typed errors, the evaluation of thresholds over a recorded run or
// a rolling window of it (the live abortOnFail check), and the goodput
// definition (vLLM's --goodput per-request SLOs).
//
// The evaluator does not know how a run is recorded: it reads one through
// the small [Source] interface. [SummarySource] implements it over the
// recorder's finished run (recording.Summary, live or loaded from a JSON report)
// and [WindowSource] over a rolling window of it (recording.WindowStats) for the
// live check. Thresholds name the metrics of DESIGN §3 verbatim; [Metrics]
// lists them with their kind, which decides the aggregations and units a
// threshold on them may use.
//
// Thresholds come from `--threshold` flags (Parse, ParseFlags) or a config
// file's thresholds section (Config, ParseConfig); Parse's documentation
// holds the grammar in BNF. Evaluate gives one Outcome per expression;
// an expression over a selection without data fails, except a count, which
// is 0. Live decides, once a second, whether an abortOnFail threshold fails
// over the last seconds of the run. ParseGoodput reads `--goodput` into the
// recorder's recording.SLO, the one definition of a good request.
//
// Typical use:
//
//	ths, err := assertions.ParseFlags([]string{"ttft: p(99)<500ms", "error_rate: rate<0.01"})
//	slo, err := assertions.ParseGoodput("ttft:500ms,tpot:50ms") // → recording.Options{SLO: slo}
//	// ... run: sum := recorder.Finish(elapsed) ...
//	outs := assertions.Evaluate(assertions.NewSummarySource(sum), ths)
//	if !outs.OK() { /* exit 99 */ }
package assertions
