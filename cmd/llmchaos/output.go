package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/report"
)

// summaryFlags are the output control flags of load, run and report:
// how much the command prints and how the terminal summary looks.
type summaryFlags struct {
	Quiet      bool
	Verbose    bool
	NoColor    bool
	TrendStats string
}

// add binds --quiet, --verbose, --no-color and --summary-trend-stats;
// quiet says what --quiet leaves of the command's output, for its help.
func (s *summaryFlags) add(fs *pflag.FlagSet, quiet string) {
	fs.BoolVarP(&s.Quiet, "quiet", "q", false, quiet)
	fs.BoolVarP(&s.Verbose, "verbose", "v", false, "add to the summary the requests and p99 latency per endpoint and per phase, and the event log (each fault's injection and revert, replica events, recovery)")
	fs.BoolVar(&s.NoColor, "no-color", false, "no colours in the summary (also: NO_COLOR set to anything; colours are only ever used on a terminal)")
	fs.StringVar(&s.TrendStats, "summary-trend-stats", "", "columns of the summary's latency and token table, as k6: a comma list of "+report.TrendStatNames+" (default count, mean, p50, p90, p99, max)")
}

// options checks the flags and returns the summary's rendering options,
// without colour: that is decided where the summary is written
// (withColor).
func (s summaryFlags) options() (report.TextOptions, error) {
	var errs []error
	o := report.TextOptions{Quiet: s.Quiet, Verbose: s.Verbose}
	if s.Quiet && s.Verbose {
		errs = append(errs, errors.New("--quiet and --verbose are both set: choose one"))
	}
	if s.TrendStats != "" {
		ts, err := report.ParseTrendStats(s.TrendStats)
		if err != nil {
			errs = append(errs, fmt.Errorf("--summary-trend-stats: %w", err))
		}
		o.TrendStats = ts
	}
	return o, errors.Join(errs...)
}

// withColor returns o with colour when the summary goes to a terminal
// and neither --no-color nor NO_COLOR (any non-empty value, as
// no-color.org) asks otherwise.
func withColor(o report.TextOptions, w io.Writer, noColor bool) report.TextOptions {
	o.Color = colorWanted(isTerminal(w), noColor, os.Getenv("NO_COLOR"))
	return o
}

// colorWanted decides on colours: on a terminal, unless --no-color or a
// non-empty NO_COLOR.
func colorWanted(tty, noColor bool, noColorEnv string) bool {
	return tty && !noColor && noColorEnv == ""
}

// fileText is the text options of a summary written to a file (--out
// text=FILE): the columns and the verbose sections, never colours, and
// the whole summary even under --quiet.
func fileText(o report.TextOptions) report.TextOptions {
	return report.TextOptions{Verbose: o.Verbose, TrendStats: o.TrendStats}
}

// alarmWriter passes on only the lines of a run's progress that warn or
// report a failure (they say "warning", "failed", "stopped early", "no
// GPU" or "no Docker"): what `run --quiet` keeps of the progress. It
// expects whole lines per Write, as the runner writes them, and is safe
// for concurrent use.
type alarmWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write passes p on when one of its lines is an alarm; it never fails.
func (a *alarmWriter) Write(p []byte) (int, error) {
	var keep []string
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if isAlarm(line) {
			keep = append(keep, line)
		}
	}
	if len(keep) > 0 {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, _ = io.WriteString(a.w, strings.Join(keep, ""))
	}
	return len(p), nil
}

// isAlarm reports whether a progress line warns or reports a failure.
func isAlarm(line string) bool {
	l := strings.ToLower(line)
	for _, s := range []string{"warning", "failed", "stopped early", "no gpu", "no docker"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// seedFlag is --seed of the commands whose seed is an int64 (load, sim)
// read as every --seed is (run, suite, gameday, compare): an unsigned
// 64-bit number, its bits kept.
type seedFlag struct{ p *int64 }

func (f seedFlag) String() string { return strconv.FormatUint(uint64(*f.p), 10) }

func (f seedFlag) Set(s string) error {
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a whole number from 0 to %d", uint64(math.MaxUint64))
	}
	*f.p = int64(u)
	return nil
}

func (seedFlag) Type() string { return "uint64" }
