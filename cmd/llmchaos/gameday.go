package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/gameday"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/spf13/cobra"
)

// gamedayConfig is `llmchaos gameday`'s configuration.
type gamedayConfig struct {
	File        string
	Out         string
	Listen      string
	AllowRemote bool
	Holders     []string
	Seed        *uint64
	MaxDuration time.Duration
	NoGuard     bool
	NoPreflight bool
	Observe     observeConfig
}

func newGamedayCmd() *cobra.Command {
	var (
		c        gamedayConfig
		seed     uint64
		obsFlags = defaultObserveFlags()
	)
	obsFlags.ScrapeInterval = time.Second // the console draws the server's series every second
	cmd := &cobra.Command{
		Use:   "gameday [FILE]",
		Short: "Run a game day: an experiment's target and load, and a browser console to break, watch and take notes",
		Long: `gameday starts an experiment's target, fault proxies and load as llmchaos run
does (without FILE: the built-in simulator with two replicas under a chat load)
and serves a console on 127.0.0.1 (--listen to change; an address off the
loopback interface needs --allow-remote). The console's URL, printed once, holds
a one-time access token; --token NAME makes a token per person instead, and each
action is recorded with its holder's name.

From the console (or its JSON API under /api/, for curl or a chat-ops bot):
inject any fault type with its params and targets, see each injected fault with
its elapsed time and revert countdown, revert one or all, play, pause, step or
skip the experiment's own faults as a timeline, change the load's rate or users
or pause it, write notes on the run clock, and watch TTFT, ITL, E2E, requests
and errors per second, tokens, requests in flight and the server's own series
live, with the steady state and recovery judged as they happen.

Safety is that of llmchaos run: every fault goes through the write-ahead journal
(the guard reverts everything if this process is killed; llmchaos recover
--run-dir DIR works on the run directory), the experiment's blast_radius
(max_concurrent_faults, min_available) refuses manual faults beyond it, closing
the browser reverts nothing, and ending the game day (End, POST /api/end, Ctrl-C,
SIGTERM) reverts everything. The load lasts until the end (at most
--max-duration).

At the end the run directory holds run.json, report.html (notes and actions on
its plots), junit.xml and postmortem.md, a post-mortem skeleton with the
timeline, the faults, the notes and the thresholds. Exit codes are run's.`,
		Example: `  llmchaos gameday
  llmchaos gameday experiments/catalog/quickstart.yaml --out runs/gameday-1
  llmchaos gameday experiment.yaml --token alice --token bob
  llmchaos gameday experiment.yaml --listen 0.0.0.0:8088 --allow-remote`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				c.File = args[0]
			}
			if cmd.Flags().Changed("seed") {
				c.Seed = &seed
			}
			obs, errs := obsFlags.config(cmd.Flags(), "")
			if c.MaxDuration < 0 {
				errs = append(errs, fmt.Errorf("--max-duration %v must not be negative", c.MaxDuration))
			}
			if err := gameday.CheckListen(c.Listen, c.AllowRemote); err != nil {
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				return usageError(errors.Join(errs...))
			}
			c.Observe = obs
			return runGameday(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&c.Out, "out", "", "run directory for run.json, the reports, the post-mortem, the fault journal and the helpers' logs (default: the experiment's out, else runs/NAME-gameday-TIMESTAMP)")
	fs.StringVar(&c.Listen, "listen", gameday.DefaultListen, "address of the console (port 0 picks a free one; the URL is printed)")
	fs.BoolVar(&c.AllowRemote, "allow-remote", false, "allow --listen on an address that is not loopback (the token is still needed)")
	fs.StringArrayVar(&c.Holders, "token", nil, "make an access token for this person (repeatable; default: one token, \"facilitator\"); actions are recorded with the name")
	fs.DurationVar(&c.MaxDuration, "max-duration", experiments.DefaultLiveMaxDuration, "end the game day after this long if nobody does")
	fs.Uint64Var(&seed, "seed", 0, "seed of every random choice of the run, instead of the experiment's")
	fs.BoolVar(&c.NoPreflight, "no-preflight", false, "skip the pre-flight check of the endpoints")
	fs.BoolVar(&c.NoGuard, "no-guard", false, "do not start the dead-man's switch that reverts the game day's faults if llmchaos itself is killed (then only llmchaos recover does)")
	obsFlags.add(fs)
	return cmd
}

// runGameday runs a game day and maps how it ended to an exit code, as
// runExperiment does.
func runGameday(ctx context.Context, c gamedayConfig, stdout, stderr io.Writer) error {
	if err := gameday.CheckHolders(c.Holders); err != nil {
		return usageError(fmt.Errorf("--token: %w", err))
	}
	helper, err := ownExecutable()
	if err != nil {
		return fmt.Errorf("find own executable to run the helpers: %w", err)
	}
	res, runErr := gameday.Run(ctx, gameday.Config{
		File: c.File, RunDir: c.Out, Listen: c.Listen, AllowRemote: c.AllowRemote, Holders: c.Holders,
		Seed: c.Seed, Helper: helper, NoGuard: c.NoGuard, NoPreflight: c.NoPreflight, ToolVersion: toolVersion(), MaxDuration: c.MaxDuration,
		Observe: experiments.ObserveOptions{
			MetricsListen: c.Observe.MetricsListen, OTLPEndpoint: c.Observe.OTLPEndpoint, Scrape: c.Observe.Scrape,
			ScrapeInterval: c.Observe.ScrapeInterval, MetricsLinger: c.Observe.MetricsLinger,
			Warn: func(err error) { fmt.Fprintf(stderr, "llmchaos gameday: warning: %v\n", err) },
		},
		Out: stdout,
	})
	if res == nil || res.Outcome == nil || res.Outcome.Doc == nil {
		if runErr != nil {
			if loadErr := loadError(runErr, stderr); loadErr != runErr {
				return usageError(loadErr)
			}
		}
		return runError(runErr)
	}
	out, doc := res.Outcome, res.Outcome.Doc
	fmt.Fprintln(stdout)
	if err := report.WriteText(stdout, doc); err != nil {
		return errors.Join(runError(runErr), err)
	}
	if len(res.Files) > 0 {
		fmt.Fprintf(stdout, "game day record in %s: %s\n", res.RunDir, strings.Join(baseNames(res.Files), ", "))
	}
	if runErr != nil {
		return runError(runErr)
	}
	if out.NotSteady() {
		return withCode(exitcode.NotSteady, fmt.Errorf("not steady: %s; no fault was injected", out.AbortDetail))
	}
	return verdictError(doc)
}

// baseNames are the files' names without their directory.
func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p[strings.LastIndexByte(p, '/')+1:]
	}
	return out
}
