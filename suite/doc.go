// Package suite runs a resilience suite: experiments one after another
// (`llmchaos suite DIR|FILE...`), from directories of experiment files or
// suite files (kind: Suite, package experiments/spec), and writes one
// record of the whole: suite.json (Record), one JUnit file with a
// <testsuite> per experiment, and one HTML index page linking each
// experiment's own report.
//
// Load turns the command line's arguments into a Plan: every experiment
// resolved once (spec.Experiment: the suite's target and overrides
// applied, its capacity file read), tagged and selected. Run carries it
// out: for each experiment in order, it waits the suite's settle time
// after the one before, checks that the target is healthy again
// (experiments.CheckHealth, polled until the suite's health timeout; when
// it never is, the experiment is skipped with the reason), runs it
// (experiments.RunExperiment, which reverts every fault it injects, on a
// signal too) into a directory of its own, writes its run.json and
// report.html, scores it (report.ComputeScore) and hands
// its report to the Recorder, if any. A cancelled context (Ctrl-C) stops
// the experiment running and the suite; the experiments left are marked
// not run, and the record is still complete.
//
// One exit code sums the suite up, the worst of its experiments' in the
// order of exitcode.Rank: a revert that failed (97) wins over an abort (98),
// over an error of llmchaos (1, 2), over a failed threshold (99), over a
// target that was not steady or not healthy again (96), over a refused
// fault selection (95), over a pass (0).
package suite
