package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
	"github.com/llmchaos/llmchaos/telemetry/tracing"
)

// Output kinds of --out KIND=TARGET. A value without a known kind is the
// JSON report's path, as before kinds existed.
const (
	outJSON        = "json"
	outRemoteWrite = "prometheus-rw"
)

// observeCloseTimeout bounds the end of the observers: the span export
// still queued (the last remote write push has its own bound, 15 s).
const observeCloseTimeout = 20 * time.Second

// outKind matches what looks like a KIND= prefix.
var outKind = regexp.MustCompile(`^([a-z][a-z0-9-]*)=(.*)$`)

// outputs are the --out values sorted by kind.
type outputs struct {
	JSON        string // the JSON report's path ("-": stdout)
	RemoteWrite string // the remote write receiver's URL
	// Reports are the other report formats asked for as FORMAT=FILE, in
	// the order given.
	Reports []report.Output
}

// addOutFlag binds the repeatable --out flag of load.
func addOutFlag(fs *pflag.FlagSet, out *[]string) {
	fs.StringArrayVar(out, "out", nil, "an output (repeatable): FILE or json=FILE writes the JSON run report; "+
		"FORMAT=FILE writes a report in another format ("+report.FormatNames()+"), e.g. vllm=result.json for vLLM's bench serve result; "+
		"- as FILE is standard output; "+
		"prometheus-rw=URL pushes the live llmchaos_* series by Prometheus remote write (v1), e.g. prometheus-rw=http://127.0.0.1:9090/api/v1/write")
}

// parseOuts sorts --out values by kind and checks them; every problem is
// reported.
func parseOuts(values []string) (outputs, []error) {
	var o outputs
	var errs []error
	for _, v := range values {
		kind, target := outJSON, v
		if m := outKind.FindStringSubmatch(v); m != nil {
			_, ferr := report.LookupFormat(m[1])
			switch {
			case m[1] == outRemoteWrite || ferr == nil:
				kind, target = m[1], m[2]
			case strings.Contains(m[2], "://"):
				// A path such as "a=b.json" stays a path; a URL behind an
				// unknown kind is a typo of one.
				errs = append(errs, fmt.Errorf("--out %s: unknown output kind %q: want FORMAT=FILE (FORMAT %s) or prometheus-rw=URL", v, m[1], report.FormatNames()))
				continue
			}
		}
		switch kind {
		case outJSON:
			switch {
			case target == "":
				errs = append(errs, fmt.Errorf("--out %s: the JSON report's path is empty", v))
			case o.JSON != "":
				errs = append(errs, fmt.Errorf("--out %s: a JSON report is already written to %s: give one", v, o.JSON))
			default:
				o.JSON = target
			}
		case outRemoteWrite:
			u, err := url.Parse(target)
			switch {
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				errs = append(errs, fmt.Errorf("--out %s=%s: want the receiver's URL, e.g. prometheus-rw=http://127.0.0.1:9090/api/v1/write", outRemoteWrite, redactURL(target)))
			case o.RemoteWrite != "":
				errs = append(errs, fmt.Errorf("--out %s=…: remote write already goes to %s: give one", outRemoteWrite, redactURL(o.RemoteWrite)))
			default:
				o.RemoteWrite = target
			}
		default: // a report format of report.Formats
			switch {
			case target == "":
				errs = append(errs, fmt.Errorf("--out %s: the %s report's path is empty", v, kind))
			case slices.ContainsFunc(o.Reports, func(r report.Output) bool { return r.Format == kind }):
				errs = append(errs, fmt.Errorf("--out %s: a %s report is already asked for: give one", v, kind))
			default:
				o.Reports = append(o.Reports, report.Output{Format: kind, Path: target, Flag: "--out " + kind})
			}
		}
	}
	return o, errs
}

// paths are the files the outputs write, with the flag that names each
// (standard output left out), for the check that their folders exist.
func (o outputs) paths() []outPath {
	var out []outPath
	if o.JSON != "" && o.JSON != report.Stdout {
		out = append(out, outPath{"--out", o.JSON})
	}
	for _, r := range o.Reports {
		if r.Path != report.Stdout {
			out = append(out, outPath{r.Flag, r.Path})
		}
	}
	return out
}

// outPath is a file an option writes.
type outPath struct{ flag, path string }

// observeFlags are the observability flags of load and run: the live
// endpoint, tracing and the server monitor. --out prometheus-rw=URL and
// --html belong to each command's outputs (addOutFlag, parseOuts).
type observeFlags struct {
	MetricsListen  string
	MetricsLinger  time.Duration
	OTLPEndpoint   string
	ScrapeInterval time.Duration
	NoScrape       bool
}

// defaultObserveFlags returns the flag defaults.
func defaultObserveFlags() observeFlags {
	return observeFlags{ScrapeInterval: scrape.DefaultInterval, MetricsLinger: observe.DefaultLinger}
}

// add binds the flags to fs.
func (f *observeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve the live llmchaos_* Prometheus metrics on this address while the run lasts, e.g. "+
		telemetry.DefaultListen+` (":PORT" binds 127.0.0.1; port 0 picks a free one; the URL is printed)`)
	fs.DurationVar(&f.MetricsLinger, "metrics-linger", f.MetricsLinger, "after the run, keep --metrics-listen up until a scraper has read the final values (llmchaos_threshold_ok), "+
		"at most this long and at most two of its scrape intervals; skipped when nothing scraped it; 0 stops at once")
	fs.StringVar(&f.OTLPEndpoint, "otlp-endpoint", "", "export one OpenTelemetry span per request (llm.request) to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318")
	fs.DurationVar(&f.ScrapeInterval, "scrape-interval", f.ScrapeInterval, "interval of the server-side monitor, which scrapes each target's /metrics (vLLM's names) into the report")
	fs.BoolVar(&f.NoScrape, "no-scrape", false, "do not scrape the targets' /metrics")
}

// observeConfig is the checked observability of a run.
type observeConfig struct {
	MetricsListen  string
	MetricsLinger  time.Duration
	RemoteWrite    string
	OTLPEndpoint   string
	Scrape         bool
	ScrapeInterval time.Duration
}

// config checks the flags; remoteWrite is the URL of --out
// prometheus-rw=URL ("" for none).
func (f *observeFlags) config(fs *pflag.FlagSet, remoteWrite string) (observeConfig, []error) {
	var errs []error
	c := observeConfig{MetricsListen: f.MetricsListen, MetricsLinger: f.MetricsLinger, RemoteWrite: remoteWrite, OTLPEndpoint: f.OTLPEndpoint,
		Scrape: !f.NoScrape, ScrapeInterval: f.ScrapeInterval}
	if fs.Changed("metrics-listen") {
		if f.MetricsListen == "" {
			errs = append(errs, fmt.Errorf("--metrics-listen is empty: give an address such as %s", telemetry.DefaultListen))
		} else if _, err := telemetry.ListenAddr(f.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-listen: %w", err))
		}
	}
	if f.MetricsLinger < 0 || f.MetricsLinger > observe.MaxLinger {
		errs = append(errs, fmt.Errorf("--metrics-linger %v: want 0 to %v", f.MetricsLinger, observe.MaxLinger))
	}
	if fs.Changed("otlp-endpoint") {
		if _, err := tracing.TracesURL(f.OTLPEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("--otlp-endpoint: %w", err))
		}
	}
	switch {
	case f.NoScrape && fs.Changed("scrape-interval"):
		errs = append(errs, errors.New("--no-scrape and --scrape-interval are both set: the monitor is either off or scrapes at an interval"))
	case f.ScrapeInterval <= 0:
		errs = append(errs, fmt.Errorf("--scrape-interval %v must be positive (--no-scrape turns the monitor off)", f.ScrapeInterval))
	}
	return c, errs
}

// record adds the observability settings to a run's configuration record
// (no URLs: they may carry credentials, and they say nothing of the run).
func (c observeConfig) record(m map[string]any) {
	m["server_monitor"] = c.Scrape
	if c.Scrape {
		m["scrape_interval"] = c.ScrapeInterval.String()
	}
}

// options is the part of observe.Options the flags decide, for a run
// against targets; the run adds its clock, its in-flight count and where
// warnings go (a runner that owns its engine does that itself).
func (c observeConfig) options(targets []string) observe.Options {
	o := observe.Options{MetricsListen: c.MetricsListen, Linger: c.MetricsLinger, RemoteWriteURL: c.RemoteWrite, OTLPEndpoint: c.OTLPEndpoint}
	if c.Scrape {
		o.ScrapeTargets, o.ScrapeInterval = targets, c.ScrapeInterval
	}
	return o
}

// runObservers wraps a run's observers with what the command adds: where
// its messages go.
type runObservers struct {
	*observe.Observers
	cmd    string // "llmchaos load", for messages
	linger time.Duration
	stderr io.Writer
}

// finish ends a run's observers once doc is evaluated: it publishes the
// thresholds' verdicts (none when doc is nil: the run had no report) and
// closes the observers. A problem of the live
// outputs is printed as a warning, since the run's result does not depend
// on it.
func (o *runObservers) finish(ctx context.Context, doc *report.Document) {
	if doc != nil {
		o.SetThresholds(doc.Thresholds)
		o.SetLost(doc.Requests.Lost)
	}
	if ctx.Err() != nil {
		// A signal ended the run: its sender wants the process gone.
		o.EndLinger()
	} else {
		// A signal during the linger ends it at once.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		closed := make(chan struct{})
		defer func() {
			signal.Stop(sigs)
			close(closed)
		}()
		go func() {
			select {
			case <-sigs:
				o.EndLinger()
			case <-closed:
			}
		}()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeCloseTimeout+o.linger)
	defer cancel()
	if cerr := o.Close(cctx); cerr != nil {
		fmt.Fprintf(o.stderr, "%s: warning: %v\n", o.cmd, cerr)
	}
}

// redactURL hides a password in u, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
