package gameday

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/report"
)

// DefaultExperiment is the experiment a game day runs when none is given:
// the built-in simulator with two replicas under a chat load.
//
//go:embed default.yaml
var DefaultExperiment []byte

// DefaultListen is where the console listens unless told otherwise: a free
// port of the loopback interface.
const DefaultListen = "127.0.0.1:0"

// The files a game day writes in its run directory besides run.json and
// the journal.
const (
	ReportFile = "report.html"
	JUnitFile  = "junit.xml"
)

// shutdownTimeout bounds the console's shutdown once the game day ended:
// the consoles get the end, then the server stops.
const shutdownTimeout = 3 * time.Second

// Config is one game day.
type Config struct {
	// File is the experiment file; "" runs DefaultExperiment. Spec, when
	// set, is used instead of reading File (File then only names it).
	File string
	Spec *spec.Spec
	// RunDir is the run directory; "": the experiment's out, else
	// runs/NAME-gameday-YYYYMMDD-HHMMSS.
	RunDir string
	// Listen is the console's address (DefaultListen when empty); one
	// that is not on the loopback interface needs AllowRemote.
	Listen      string
	AllowRemote bool
	// Holders name the access tokens to make, one each ("facilitator"
	// when none); Tokens, when set, are used instead.
	Holders []string
	Tokens  []Token
	// Seed, Helper, NoGuard, NoPreflight, ToolVersion, Observe and
	// RevertTimeout are experiments.Options' fields of the same names.
	Seed          *uint64
	Helper        string
	NoGuard       bool
	NoPreflight   bool
	ToolVersion   string
	Observe       experiments.ObserveOptions
	RevertTimeout time.Duration
	// MaxDuration is the longest the load runs when nobody ends it (0:
	// experiments.DefaultLiveMaxDuration).
	MaxDuration time.Duration
	// Out receives the console's URLs and the run's progress (nil:
	// discarded).
	Out io.Writer
	// Ready, when set, is called once the console serves, with its base
	// URL and the tokens.
	Ready func(url string, tokens []Token)
}

// Result is how a game day ended: the run's outcome (nil when it could
// not run) and the files written.
type Result struct {
	Outcome *experiments.Outcome
	RunDir  string
	Files   []string
}

// Load resolves the game day's experiment (spec.Experiment) as llmchaos
// run does: its file (or cfg.Spec, or DefaultExperiment) checked once, a
// rate given as a share of a measured capacity set from its capacity file,
// its faults' params decoded. The problems returned are warnings.
func Load(cfg Config) (*spec.Experiment, field.Problems, error) {
	switch {
	case cfg.Spec != nil:
		x, err := spec.Resolve(cfg.Spec, cfg.File)
		if err != nil {
			return nil, nil, err
		}
		return x, x.Warnings, nil
	case cfg.File == "":
		return spec.ParseExperiment("(built-in game day)", DefaultExperiment, spec.LoadOptions{})
	}
	return spec.LoadExperiment(cfg.File, spec.LoadOptions{})
}

// Run runs a game day: it starts the console, then the experiment as a
// live run (target, proxies, load, guard, as `llmchaos run` does), and
// serves the console until the game day is ended from it (or ctx ends: a
// signal reverts every fault, as in a scripted run). It then writes
// run.json, the HTML report, JUnit and the post-mortem skeleton in the
// run directory, tells the consoles, and stops the server. The error is
// the run's (a *experiments.RevertError for a fault left applied) or the
// reports'.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	x, warns, err := Load(cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range warns {
		fmt.Fprintln(out, w.Error())
	}
	full := x.Spec
	listen := cfg.Listen
	if listen == "" {
		listen = DefaultListen
	}
	if err := CheckListen(listen, cfg.AllowRemote); err != nil {
		return nil, err
	}
	tokens := cfg.Tokens
	if len(tokens) == 0 {
		var err error
		if tokens, err = NewTokens(cfg.Holders); err != nil {
			return nil, err
		}
	}
	dir := cfg.RunDir
	if dir == "" {
		dir = full.Out
	}
	if dir == "" {
		dir = filepath.Join("runs", full.Metadata.Name+"-gameday-"+time.Now().Format("20060102-150405"))
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("console: listen on %s: %w", listen, err)
	}
	live := experiments.NewControl(experiments.ControlOptions{MaxDuration: cfg.MaxDuration})
	srv := NewServer(ServerOptions{Live: live, Spec: &full, Tokens: tokens, RunDir: dir, Port: ln.Addr().(*net.TCPAddr).Port})
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	served := make(chan error, 1)
	go func() {
		err := hs.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			// The console is how the game day is ended: without it the
			// run ends now (and reverts everything).
			cancel(fmt.Errorf("console stopped: %w", err))
		}
		served <- err
	}()
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		srv.Run(hubCtx)
	}()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "llmchaos gameday %q: run directory %s\n", full.Metadata.Name, dir)
	for _, t := range tokens {
		fmt.Fprintf(out, "console for %s: %s/?token=%s\n", t.Holder, base, t.Secret)
	}
	fmt.Fprintln(out, "end the game day from the console (End), with POST /api/end, or Ctrl-C; every fault is reverted either way")
	if cfg.Ready != nil {
		cfg.Ready(base, tokens)
	}

	o, runErr := experiments.RunExperiment(runCtx, x, experiments.Options{
		RunDir: dir, File: cfg.File, Seed: cfg.Seed, Helper: cfg.Helper, Out: out, ToolVersion: cfg.ToolVersion,
		NoGuard: cfg.NoGuard, NoPreflight: cfg.NoPreflight, Observe: cfg.Observe, RevertTimeout: cfg.RevertTimeout, Live: live,
	})
	res := &Result{Outcome: o, RunDir: dir}
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	ended := Ended{RunDir: dir}
	if o != nil && o.Doc != nil {
		files, err := writeRecord(o.Doc, dir)
		res.Files = files
		ended.Files = files
		ended.Verdict = o.Doc.Verdict
		if o.Doc.Abort != nil {
			ended.Detail = "aborted by " + o.Doc.Abort.String()
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		ended.Error = err.Error()
	}
	stopHub()
	<-hubDone
	srv.End(ended)
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	<-served
	return res, errors.Join(errs...)
}

// writeRecord writes the game day's record in dir: run.json, the HTML
// report, JUnit and the post-mortem skeleton; it returns the files
// written.
func writeRecord(d *report.Document, dir string) ([]string, error) {
	outs := []report.Output{
		{Format: report.FormatJSON, Path: filepath.Join(dir, "run.json")},
		{Format: report.FormatHTML, Path: filepath.Join(dir, ReportFile)},
		{Format: report.FormatJUnit, Path: filepath.Join(dir, JUnitFile)},
	}
	var files []string
	var errs []error
	for _, o := range outs {
		if err := report.WriteOutput(io.Discard, o, d); err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, o.Path)
	}
	pm := filepath.Join(dir, PostmortemFile)
	if err := report.WriteFileWith(pm, func(w io.Writer) error { return WritePostmortem(w, d, dir) }); err != nil {
		errs = append(errs, fmt.Errorf("post-mortem: %w", err))
	} else {
		files = append(files, pm)
	}
	return files, errors.Join(errs...)
}
