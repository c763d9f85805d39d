package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// shareFlag is a pflag.Value for a share written as a percentage ("10%")
// or a fraction ("0.1"). set records whether it was given.
type shareFlag struct {
	v   *float64
	set *bool
}

var _ pflag.Value = shareFlag{}

func (f shareFlag) String() string {
	if f.set == nil || !*f.set {
		return ""
	}
	return strconv.FormatFloat(*f.v*100, 'f', -1, 64) + "%"
}

func (f shareFlag) Set(s string) error {
	v, err := parseShare(s)
	if err != nil {
		return err
	}
	*f.v, *f.set = v, true
	return nil
}

func (f shareFlag) Type() string { return "percent" }

// parseShare reads "10%" as 0.1 and a plain fraction up to 1 as itself; a
// plain number above 1 is refused as ambiguous.
func parseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	switch {
	case err != nil || math.IsNaN(n) || math.IsInf(n, 0):
		return 0, fmt.Errorf("%q: want a percentage such as 10%%", s)
	case n < 0:
		return 0, fmt.Errorf("%q: must not be negative", s)
	case pct:
		return n / 100, nil
	case n > 1:
		return 0, fmt.Errorf("%q: write a percentage with %% (%s%%) or a fraction up to 1", s, t)
	}
	return n, nil
}

// compareOptions is `llmchaos compare`'s configuration.
type compareOptions struct {
	Base, New     string
	MaxRegression float64
	HasLimit      bool
	Resamples     int
	Confidence    float64
	Seed          uint64
	Format        string
	Output        string
}

func (o *compareOptions) check() error {
	var errs []string
	if o.Format != formatText && o.Format != formatJSON {
		errs = append(errs, fmt.Sprintf("--format %q: want text or json", o.Format))
	}
	if o.Resamples < 10 {
		errs = append(errs, fmt.Sprintf("--resamples %d: want at least 10", o.Resamples))
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		errs = append(errs, fmt.Sprintf("--confidence %v: want a level between 0 and 1, such as 0.95", o.Confidence))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func newCompareCmd() *cobra.Command {
	o := compareOptions{Resamples: report.DefaultResamples, Confidence: report.DefaultConfidence, Seed: 1, Format: formatText}
	cmd := &cobra.Command{
		Use:   "compare BASE.json NEW.json",
		Short: "Compare two saved runs, with bootstrap confidence intervals for latency percentiles",
		Long: `compare sets two saved runs side by side: latency and token statistics,
request outcomes, throughput and quality rates, with absolute and relative
deltas. For p50, p90 and p99 of ttft, itl, tpot and e2e it also gives a
bootstrap confidence interval of the relative change new/base − 1, drawn from
the runs' stored HDR histograms: --resamples resamples of each run (with
replacement, as many values as it recorded), seeded by --seed, percentile
interval at --confidence.

The bootstrap takes requests as independent, which they are not quite:
itl pools every gap of every request and gets intervals that are too narrow,
and a p99 resting on fewer than 10 values is flagged as unreliable.

With --max-regression, a percentile regresses when the whole interval lies
above the limit (slower by more than it, with confidence); then the command
exits 99.

When the two runs' configurations differ (model, target, load shape and
rate, token lengths, faults...), compare says so on stderr and lists the
differing keys; it compares all the same. The seed, the run directory,
names, thresholds and output settings are not compared: two samples of one
configuration differ in them.

Exit codes: 0 compared (no regression beyond --max-regression); 99 a latency
percentile regressed beyond --max-regression with confidence; 2 bad flags or
report files; 1 anything else.`,
		Example: `  llmchaos compare base.json new.json
  llmchaos compare base.json new.json --max-regression 10%`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Base, o.New = args[0], args[1]
			if err := o.check(); err != nil {
				return usageError(err)
			}
			return runCompare(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.Var(shareFlag{&o.MaxRegression, &o.HasLimit}, "max-regression", "exit 99 when a latency percentile is slower by more than this with confidence, e.g. 10%")
	fs.IntVar(&o.Resamples, "resamples", o.Resamples, "bootstrap resamples per percentile")
	fs.Float64Var(&o.Confidence, "confidence", o.Confidence, "confidence level of the intervals")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the bootstrap (the same seed gives the same intervals)")
	fs.StringVar(&o.Format, "format", o.Format, "output format: text or json")
	fs.StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

// runCompare compares two saved runs and exits 99 on a confident regression.
func runCompare(_ context.Context, o compareOptions, stdout, stderr io.Writer) error {
	base, err := report.Read(o.Base)
	if err != nil {
		return usageError(err)
	}
	next, err := report.Read(o.New)
	if err != nil {
		return usageError(err)
	}
	if diff := configDiff(base.Config, next.Config); len(diff) > 0 {
		const most = 12
		more := ""
		if len(diff) > most {
			more = fmt.Sprintf("; and %d more", len(diff)-most)
			diff = diff[:most]
		}
		fmt.Fprintf(stderr, "llmchaos compare: warning: the runs' configurations differ (%s%s): a difference may come from the configuration, not the service\n",
			strings.Join(diff, "; "), more)
	}
	opts := report.CompareOptions{
		Resamples: o.Resamples, Confidence: o.Confidence,
		Rand: rand.New(rand.NewPCG(o.Seed, 0)),
	}
	if o.HasLimit {
		opts.MaxRegression = &o.MaxRegression
	}
	c, err := report.Compare(base, next, opts)
	if err != nil {
		return usageError(err)
	}
	write := report.WriteComparison
	if o.Format == formatJSON {
		write = report.WriteComparisonJSON
	}
	if err := writeTo(stdout, o.Output, func(w io.Writer) error { return write(w, c) }); err != nil {
		return err
	}
	if reg := c.Regressions(); len(reg) > 0 {
		return withCode(exitcode.Thresholds, fmt.Errorf("%d latency percentiles regressed beyond --max-regression", len(reg)))
	}
	return nil
}

// configIgnored holds the config keys (dotted paths) that compare does not
// hold against each other: they differ between two samples of one
// configuration (seed, run directory, ports of the runner's own
// endpoints) or do not change what is measured (names, thresholds,
// outputs, the key's variable name).
var configIgnored = map[string]bool{
	"seed": true, "run_dir": true, "out": true, "name": true, "metadata": true, "endpoints": true,
	"thresholds": true, "stop_conditions": true, "save_requests": true, "server_monitor": true,
	"scrape_interval": true, "api_key_env": true, "target.llm.api_key_env": true,
}

// configDiff lists the keys of two runs' recorded configurations whose
// values differ, as "KEY: BASE vs NEW" (nested keys dotted, "unset" for a
// key one run lacks), sorted; nil when they agree.
func configDiff(base, next map[string]any) []string {
	a, b := map[string]any{}, map[string]any{}
	flattenConfig("", base, a)
	flattenConfig("", next, b)
	var out []string
	for k := range a {
		if _, ok := b[k]; !ok {
			b[k] = nil
		}
	}
	for k, v := range b {
		if !reflect.DeepEqual(a[k], v) {
			out = append(out, fmt.Sprintf("%s: %s vs %s", k, configValue(a[k]), configValue(v)))
		}
	}
	slices.Sort(out)
	return out
}

// flattenConfig puts the leaves of m into out under dotted keys, leaving
// out configIgnored; a list is one leaf.
func flattenConfig(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if configIgnored[key] {
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			flattenConfig(key, sub, out)
			continue
		}
		out[key] = v
	}
}

// configValue writes a config value short, for the warning.
func configValue(v any) string {
	if v == nil {
		return "unset"
	}
	s := fmt.Sprint(v)
	if str, ok := v.(string); ok {
		s = strconv.Quote(str)
	}
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}
