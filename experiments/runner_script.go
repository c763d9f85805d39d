package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/pipeline/script"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// scriptPlan is a script workload resolved before the run: its path, the
// overrides of the workload's keys, and what inspecting it (with
// placeholders for the target's URLs) found: its scenarios, thresholds,
// custom metrics and the length of its schedule.
type scriptPlan struct {
	path      string
	overrides script.Overrides
	inspected *script.Plan
	// length is when the last scenario's schedule ends (0 when a scenario
	// runs a number of iterations: not a set time).
	length time.Duration
}

// newScriptPlan inspects the script of s, whose file is in dir.
func newScriptPlan(s *spec.Spec, dir string) (*scriptPlan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), spec.ScriptInspectTimeout)
	defer cancel()
	plan, err := s.InspectScript(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("workload.script: %w", err)
	}
	sp := &scriptPlan{path: s.Workload.ScriptPath(dir), overrides: s.Workload.ScriptOverrides(), inspected: plan}
	if end, known := plan.Length(); known {
		sp.length = end
	}
	return sp, nil
}

// describe says what load the script makes, on one line.
func (sp *scriptPlan) describe() string {
	n := len(sp.inspected.Names)
	d := "iterations"
	if sp.length > 0 {
		d = "for " + sp.length.String()
	}
	return fmt.Sprintf("script %s: %d scenario(s) (%s), %d VU(s), %s", sp.path, n, strings.Join(sp.inspected.Names, ", "), sp.inspected.VUs(), d)
}

// write describes the script's plan for a dry run, indented.
func (sp *scriptPlan) write(b *strings.Builder) {
	var s strings.Builder
	_ = sp.inspected.Describe(&s)
	for _, line := range strings.Split(strings.TrimRight(s.String(), "\n"), "\n") {
		if strings.HasPrefix(line, "llm clients") {
			fmt.Fprintf(b, "  llm clients: the script's __ENV.%s, __ENV.%s and __ENV.%s are the endpoints (through their proxies) and the model\n",
				spec.ScriptEnvBaseURL, spec.ScriptEnvBaseURLs, spec.ScriptEnvModel)
			break
		}
		fmt.Fprintf(b, "  %s\n", line)
	}
	b.WriteString("  the script's own thresholds apply with the experiment's\n")
}

// loadScript runs the script workload with the faults on its clock, as
// load runs a preset: the script's LLM results are tagged with the phase
// and fault of their send (r.tag), recorded by the recorder the judge and
// the recovery read, and fed to the live observers; the fault timeline,
// the steady state check, the stop conditions and the monitors run
// alongside it (r.alongside). It returns once the script (teardown
// included) has ended and every fault's goroutine has returned.
func (r *run) loadScript(ctx context.Context) (engine.RunStats, error) {
	p := r.p
	live, err := assertions.NewLive(p.stops)
	if err != nil {
		return engine.RunStats{}, err
	}
	targets := make([]string, len(r.endpoints))
	for i, e := range r.endpoints {
		targets[i] = strings.TrimRight(e.load, "/")
	}
	var (
		scheduled uint64 // the script's LLM requests, once its load ended
		started   bool
	)
	cfg := script.Config{
		Script: p.script.path, Env: p.spec.Workload.ScriptEnv(targets, r.model), Overrides: p.script.overrides,
		Seed: p.seed, SaveRequests: r.opts.SaveRequests, SLO: p.slo, ToolVersion: r.opts.ToolVersion,
		Stdout: io.Discard, Stderr: &scriptOutput{out: r.out}, ExternalStops: true, NoSummary: true,
		Preflight: func(ctx context.Context, clients []js.ClientInfo, _ func(string)) error {
			return r.scriptPreflight(ctx, clients, targets)
		},
		Tagger: r.tag,
		Observe: func([]js.ClientInfo) *observe.Options {
			return r.obs.observeOptions(r.p, r.endpoints)
		},
		Alongside: func(pr *pipeline.Run) func(engine.RunStats, error) {
			started = true
			stop := r.alongside(ctx, pr, live)
			return func(stats engine.RunStats, err error) {
				scheduled = stats.Scheduled
				stop(stats, err)
			}
		},
	}
	doc, err := script.Run(ctx, cfg)
	switch {
	case !started && (doc == nil || err != nil):
		return engine.RunStats{}, scriptStageError(err)
	case !started:
		// Ended before its load (Ctrl-C or exec.test.abort() in the init
		// code): nothing ran alongside it.
		return engine.RunStats{}, fmt.Errorf("load: the script ended before its load: %s", doc.Abort)
	case doc == nil:
		return engine.RunStats{End: r.now(), Interrupted: ctx.Err() != nil}, fmt.Errorf("load: %w", err)
	}
	if err != nil {
		// teardown() threw, or a report could not be written: the load
		// itself ran.
		r.out.printf("warning: script: %v", err)
	}
	if doc.Abort != nil && doc.Abort.Cause == report.AbortScript {
		r.out.printf("warning: script: the load ended early: %s", doc.Abort)
	}
	return engine.RunStats{Scheduled: scheduled, End: r.now(), Interrupted: ctx.Err() != nil}, nil
}

// scriptStageError is the error of a script that stopped before its load:
// a script error or a refused pre-flight check as they are (the command
// makes them exit 2), else wrapped.
func scriptStageError(err error) error {
	if _, ok := errors.AsType[*js.ScriptError](err); ok {
		return err
	}
	if _, ok := errors.AsType[*load.PreflightError](err); ok {
		return err
	}
	return fmt.Errorf("load: %w", err)
}

// scriptPreflight checks, once the script's init code ran, that its
// llm.Client objects send to the target as the load reaches it (targets:
// through the fault proxies), and then the target as load checks it
// (unless --no-preflight or workload.preflight: false).
func (r *run) scriptPreflight(ctx context.Context, clients []js.ClientInfo, targets []string) error {
	plan := &script.Plan{Clients: clients}
	if err := spec.CheckScriptClients(plan, targets); err != nil {
		return fmt.Errorf("workload.script: %w", err)
	}
	if r.opts.NoPreflight || r.p.spec.Workload.PreflightOff() {
		return nil
	}
	chat := false
	for _, c := range clients {
		chat = chat || c.API != "completions"
	}
	copts := r.clientOptions()
	warns, err := load.Preflight(ctx, load.PreflightConfig{Targets: targets, Model: r.model, Chat: chat || len(clients) == 0, Client: copts})
	for _, w := range warns {
		r.out.println("warning: " + w)
	}
	return err
}

// scriptOutput prints what a script writes (console.*, the failed
// iterations) as the run's progress lines.
type scriptOutput struct{ out *lineWriter }

func (s *scriptOutput) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		s.out.println("script: " + line)
	}
	return len(p), nil
}
