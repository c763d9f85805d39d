package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/field"
)

// DefaultName is a suite's name when no suite file names it and it is not
// one directory.
const DefaultName = "suite"

// Plan is a suite ready to run: its experiments resolved and selected, and
// its settings.
type Plan struct {
	// Name names the suite's record, reports and directory.
	Name string
	// Files are the arguments it was loaded from.
	Files []string
	// Items are the experiments, in order, those its tags leave out
	// included (Item.Filtered).
	Items []Item
	// Settle is the wait after an experiment before the next one's health
	// check; HealthTimeout bounds that check.
	Settle        time.Duration
	HealthTimeout time.Duration
	// ContinueOnFail, false, stops the suite at the first experiment that
	// does not pass.
	ContinueOnFail bool
}

// Item is one experiment of a plan.
type Item struct {
	spec.SuiteItem
	// Name is the experiment's metadata.name.
	Name string
	// Suite is the suite file that listed it ("" for a directory or an
	// experiment file given as such).
	Suite string
	// Filtered says why tags leave it out of this run; "" when it runs.
	Filtered string
}

// Selection is what the command line adds to the suites: tags to include
// and exclude (on top of each suite file's own), and overrides of every
// experiment (winning over the files').
type Selection struct {
	Tags      spec.TagFilter
	Overrides spec.Overrides
}

// Load makes the plan of args: each a directory (every experiment file in
// it, sorted; suite files in it left out), a suite file (kind: Suite) or an
// experiment file. The settings (settle, health timeout, continue on
// fail) are those of the first suite file, else the defaults; a single
// suite file also names the plan, as does a single directory. Problems
// hold everything wrong, in the files where it is; the error is for a
// path that cannot be read at all.
func Load(args []string, sel Selection) (*Plan, field.Problems, error) {
	p := &Plan{Name: DefaultName, Files: args, HealthTimeout: spec.DefaultSuiteHealthTimeout, ContinueOnFail: true}
	var ps field.Problems
	suites, dirs := 0, 0
	settingsFrom := ""
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, nil, fmt.Errorf("suite: %w", err)
		}
		var s *spec.Suite
		switch {
		case fi.IsDir():
			files, err := spec.ExperimentFiles(arg)
			if err != nil {
				return nil, nil, fmt.Errorf("suite: %w", err)
			}
			if len(files) == 0 {
				p := field.Errorf("", "the directory holds no experiment file (*.yaml)")
				p.File = arg
				ps = append(ps, p)
				continue
			}
			dirs++
			s = spec.SuiteOf(filepath.Base(filepath.Clean(arg)), files...)
		default:
			kind, err := spec.FileKind(arg)
			if err != nil {
				return nil, nil, fmt.Errorf("suite: %w", err)
			}
			if kind != spec.KindSuite {
				s = spec.SuiteOf(DefaultName, arg)
				break
			}
			suites++
			var warns field.Problems
			s, warns, err = spec.LoadSuite(arg)
			if err != nil {
				if eps, ok := err.(field.Problems); ok {
					ps = append(ps, eps...)
					continue
				}
				return nil, nil, err
			}
			ps = append(ps, warns...)
			if settingsFrom == "" {
				settingsFrom = arg
				p.Settle, p.HealthTimeout, p.ContinueOnFail = s.Settle.D(), s.HealthTimeoutOrDefault(), s.ContinuesOnFail()
			}
		}
		items, ips := s.Resolve(sel.Overrides)
		ps = append(ps, ips...)
		for _, it := range items {
			item := Item{SuiteItem: it, Name: it.Experiment.Spec.Metadata.Name, Suite: s.File()}
			ps = append(ps, it.Warnings...)
			if ok, why := s.Tags.Match(it.Tags); !ok {
				item.Filtered = "the suite's tags: " + why
			} else if ok, why := sel.Tags.Match(it.Tags); !ok {
				item.Filtered = "--tags/--skip-tags: " + why
			}
			p.Items = append(p.Items, item)
		}
		if len(args) == 1 && (suites == 1 || dirs == 1) {
			p.Name = s.Metadata.Name
		}
	}
	if ps.Err() != nil {
		return nil, ps, nil
	}
	if len(p.Items) == 0 {
		return nil, append(ps, field.Errorf("", "no experiment to run: give a directory of experiment files, a suite file or experiment files")), nil
	}
	return p, ps, nil
}

// Runs returns how many of the plan's experiments its tags select.
func (p *Plan) Runs() int {
	n := 0
	for _, it := range p.Items {
		if it.Filtered == "" {
			n++
		}
	}
	return n
}

// dirName is the directory of the plan's i-th item (from 0) in the
// suite's directory: "01-quickstart".
func (p *Plan) dirName(i int) string {
	width := len(fmt.Sprint(len(p.Items)))
	width = max(width, 2)
	return fmt.Sprintf("%0*d-%s", width, i+1, p.Items[i].Name)
}

// WriteDryRun writes the whole plan as Run would carry it out: the
// suite's settings, the experiments in order with their tags, overrides
// and selection, then each selected experiment's own plan
// (experiments.DryRunExperiment) with its run directory under dir. It starts nothing
// and changes nothing.
func (p *Plan) WriteDryRun(w io.Writer, dir string, base experiments.Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "suite %s: %d experiment(s), %d selected\n", p.Name, len(p.Items), p.Runs())
	fmt.Fprintf(&b, "suite directory: %s (suite.json, one directory per experiment)\n", dir)
	fmt.Fprintf(&b, "between experiments: settle %v, then the target's health (steady-state HTTP and PromQL probes, pre-flight) checked until healthy, for at most %v; the next experiment is skipped when it is not\n", p.Settle, p.HealthTimeout)
	if p.ContinueOnFail {
		b.WriteString("continue_on_fail: true (every experiment runs whatever the ones before did)\n")
	} else {
		b.WriteString("continue_on_fail: false (the first experiment that does not pass stops the suite)\n")
	}
	b.WriteString("\nexperiments:\n")
	for i, it := range p.Items {
		mark := "run "
		if it.Filtered != "" {
			mark = "skip"
		}
		fmt.Fprintf(&b, "  %s %2d. %s (%s) tags [%s]", mark, i+1, it.Name, shownPath(it.File), strings.Join(it.Tags, ", "))
		if it.Weight != spec.DefaultSuiteWeight {
			fmt.Fprintf(&b, " weight %g", it.Weight)
		}
		b.WriteByte('\n')
		if o := it.Overrides.Describe(); o != "" {
			fmt.Fprintf(&b, "           overrides: %s\n", o)
		}
		if it.Filtered != "" {
			fmt.Fprintf(&b, "           not run: %s\n", it.Filtered)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for i, it := range p.Items {
		if it.Filtered != "" {
			continue
		}
		fmt.Fprintf(w, "\n── %d. %s ──\n", i+1, it.Name)
		opts := base
		opts.File, opts.RunDir, opts.Seed = it.File, filepath.Join(dir, p.dirName(i)), nil
		if err := experiments.DryRunExperiment(w, it.Experiment, opts); err != nil {
			return fmt.Errorf("experiment %s (%s): %w", it.Name, it.File, err)
		}
	}
	return nil
}

// shownPath is how a terminal line names an experiment file: relative to
// the working directory where that is shorter ("experiments/catalog/x.yaml"
// rather than a checkout's absolute path), else as given.
func shownPath(p string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && len(rel) < len(p) {
		return rel
	}
	return p
}
