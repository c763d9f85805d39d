// Package experiments runs experiments: Run executes a spec (package
// experiments/spec reads, validates and fills the defaults of experiment
// files), DryRun prints its plan, and CheckHealth checks without load
// whether its target is healthy (what package suite checks between two
// experiments).
//
// # Running
//
// Run executes a spec: it resolves the target (target.sim starts `llmchaos
// sim --replicas N` as a child process on free ports, which dies with the
// runner; target.kubernetes follows the ready endpoints of a Service or a
// selector's pods and routes each request to one ready at its send, tagged
// with the pod's name, unless its url takes every request, and watches the
// pods' status changes and Events), puts a fault proxy in front of each endpoint when a proxy fault
// needs one (a child `llmchaos proxy`, or a goroutine when the runner has no
// llmchaos executable), probes the steady state, runs the load engine with
// a Tagger that labels every result with the phase it was sent in
// (baseline, fault, recovery, after) and its endpoint, injects and reverts
// each fault on timers at absolute offsets of the run clock, checks stop
// conditions every second over the live window, and afterwards computes
// recovery_time per fault from the recorded 1-second series (from the
// injection of an InstantaneousFault, from the revert of a sustained one,
// which also gets time_to_recover; the criteria are the steady-state
// thresholds and recovery.latency_band of the baseline, and windows
// without traffic are skipped) and evaluates the thresholds
// (recovery_time, time_to_recover and oom_recovery_time included) into
// the report's verdict.
//
// Revert is the runner's job, not the fault's: a fault is recorded in the
// write-ahead journal (faults.Journal) before it is injected, and its Undo
// runs under context.WithoutCancel with its own timeout when its time is
// up, when the load ends, when the context ends, on a stop condition and on
// a panic in any of the run's goroutines (the engine's included, through
// the Tagger). A failed revert comes back as a *RevertError naming the
// fault and stays pending in the journal for `llmchaos recover`, which
// replays it with spec.Reverters. DryRun prints the plan and starts
// nothing; for pods it lists what each fault would act on now, and returns
// a *DryRunRefusedError when one would be refused.
//
// # Live runs
//
// With Options.Live (a Control from NewControl) the run is a game day's:
// the load runs at a rate (or users) changed while it runs, paused,
// switched to another preset, until Control.End; faults are injected and
// reverted by hand through the Control, through the same journal,
// contract and revert guarantees, within the experiment's blast_radius;
// the experiment's own faults are a timeline the Control plays, pauses,
// steps and skips; notes and
// every action are events of the run with who did them (package gameday
// serves the console and API over it).
package experiments
