// Package report turns a recorded run (recording.Summary) into its documents and
// reads them back. It owns the JSON run report (schema in SCHEMA.md:
// versioned, fields only ever added), its reader, which restores the HDR
// histograms and the time series so that saved runs can be merged, queried
// and compared, and the redaction of secrets from the configuration that a
// report records.
//
// It also owns what a run ends in: the verdict (Verdict, Document.Evaluate:
// pass, fail or aborted, from the thresholds' outcomes), the terminal
// summary (WriteText), JUnit XML for CI (WriteJUnit), a self-contained
// HTML page with plots drawn as inline SVG (WriteHTML), the comparison of
// two runs with bootstrap confidence intervals of their latency
// percentiles (Compare, WriteComparison), the merging of runs that were
// shards of one load (Merge), and the resilience score of an experiment
// run and of a suite (ComputeScore, SuiteScore: the one place the formula
// lives).
//
// An experiment's runner adds its record to the Document before writing
// it: Experiment, and slices of PhaseRecord, FaultRecord, RecoveryRecord,
// EventRecord, SteadyState probes and SeriesRecord monitors; the writers
// show them (a timeline in the terminal, shaded fault windows in the HTML).
//
// It imports the load engine's record (package recording, never its HTTP
// client) and the threshold evaluator (package assertions); neither
// imports it. The end of a run, in a few lines:
//
//	doc, err := report.Build(meta, recorder.Finish(elapsed))
//	doc.Evaluate(thresholds, aborted) // sets doc.Thresholds and doc.Verdict
//	report.WriteText(os.Stdout, doc)
//	report.WriteJUnitFile("junit.xml", doc)
//	report.WriteHTMLFile("report.html", doc)
//	report.WriteFile("run.json", doc)
package report
