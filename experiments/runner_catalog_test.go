package experiments

import (
	"bytes"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogIsValid loads every file of experiments/catalog as `llmchaos
// validate` does: each must be valid, without warnings.
func TestCatalogIsValid(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("catalog", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"quickstart.yaml", "network-latency.yaml", "stream-stall.yaml", "error-burst.yaml", "packet-loss.yaml"}
	for _, w := range want {
		if _, err := os.Stat(filepath.Join("catalog", w)); err != nil {
			t.Errorf("catalog lacks %s: %v", w, err)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if kind, err := spec.FileKind(f); err != nil || kind == spec.KindSuite {
				checkCatalogSuite(t, f)
				return
			}
			x, warns, err := spec.LoadExperiment(f, spec.LoadOptions{})
			if err != nil {
				t.Fatalf("invalid:\n%v", err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings:\n%v", warns)
			}
			// And it resolves into a plan, as run and --dry-run need.
			var out bytes.Buffer
			if err := DryRunExperiment(&out, x, Options{File: f}); err != nil {
				t.Fatalf("DryRun: %v", err)
			}
		})
	}
}

// checkCatalogSuite checks a suite file of the catalog as `llmchaos
// validate` does: valid, without warnings, every experiment it lists
// valid with the suite applied and resolving into a plan.
func checkCatalogSuite(t *testing.T, f string) {
	t.Helper()
	s, warns, err := spec.LoadSuite(f)
	if err != nil {
		t.Fatalf("invalid suite:\n%v", err)
	}
	items, ps := s.Resolve(spec.Overrides{})
	if len(warns) > 0 || len(ps) > 0 {
		t.Fatalf("suite problems:\n%v\n%v", warns, ps)
	}
	if len(items) == 0 {
		t.Fatal("the suite lists no experiment")
	}
	for _, it := range items {
		var out bytes.Buffer
		if err := DryRunExperiment(&out, it.Experiment, Options{File: it.File}); err != nil {
			t.Errorf("%s: DryRun: %v", it.File, err)
		}
	}
}

func TestDryRun(t *testing.T) {
	t.Parallel()
	exp, _, err := spec.Load(filepath.Join("catalog", "quickstart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "never")
	var out bytes.Buffer
	seed := uint64(42)
	if err := dryRunSpec(&out, exp, Options{RunDir: dir, Seed: &seed}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"experiment quickstart",
		"seed 42",
		"run directory: " + dir,
		"3 replica(s)",
		"one fault proxy in front of each of the 3 endpoint(s)",
		"poisson arrivals at 20 req/s, for 1m30s",
		"     +10s  inject slow-net (network.latency {jitter: 50ms, latency: 200ms}) through the proxies of every endpoint",
		"     +20s  revert slow-net (after 10s)",
		"     +50s  inject stalls (stream.stall",
		"    +1m0s  revert stalls (after 10s)",
		"every 10s window with 100 or more finished requests must hold",
		"error_rate: rate<0.5",
		"recovery_time{fault:slow-net}: max<30s",
		"nothing was started or changed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dry run made the run directory (stat: %v)", err)
	}
}

func TestPreflightNetns(t *testing.T) {
	t.Parallel()
	exp, _, err := spec.Load(filepath.Join("catalog", "packet-loss.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(netnsRunDir, "llmchaos-demo")); err == nil {
		t.Skip("the namespace llmchaos-demo exists on this machine")
	}
	p, err := planSpec(exp, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.preflight()
	if err == nil || !strings.Contains(err.Error(), `network namespace "llmchaos-demo"`) || !strings.Contains(err.Error(), "lossy-link") {
		t.Errorf("preflight = %v, want it to name the missing namespace and the fault", err)
	}
}
