package llmchaos_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/llmchaos/llmchaos"

// layers is the module's layering, one row per floor unit (a top-level
// folder, or a folder under one with a floor of its own), from the bottom
// up: the units a unit's non-test files may import besides itself. Tests
// may import more (the simulator, test helpers): they drive the real
// thing. A new arrow is a decision, taken here.
var layers = []struct {
	unit    string
	imports []string
}{
	// Neutral helpers, and what the simulator shares with the chaos side;
	// the JUnit document, which the script runtime writes too.
	{"internal/junit", nil},
	// Field paths and the problems keyed by them, which every front end
	// names its own way.
	{"internal/field", nil},
	// The small Prometheus client (registry, exposition formats, text
	// parser) that the simulator and the telemetry both serve with: a
	// leaf, as the third-party client it replaced was.
	{"internal/promexpo", nil},
	// The Kubernetes API types, label selectors and name validation of
	// llmchaos's own client: a leaf, as the k8s.io libraries they replaced
	// were.
	{"internal/kube/api", nil},
	// internal/kube's pod target keys its problems by field, as the fault
	// params that hold it do.
	{"internal", []string{"internal/field", "internal/kube/api"}},
	{"simcontract", []string{"internal"}},
	// The simulator is a separate system (simcontract's test also checks
	// that nothing but cmd imports it).
	{"sim", []string{"simcontract", "internal/promexpo"}},
	// The load engine library, the product's extension point: nothing
	// above it (the JUnit document of a script's jUnit() summary lies
	// below).
	{"xk6-llm", []string{"internal/junit", "internal/field"}},
	{"assertions", []string{"xk6-llm", "internal/field"}},
	{"report", []string{"assertions", "xk6-llm", "internal/junit", "internal/field"}},
	{"telemetry", []string{"report", "assertions", "xk6-llm", "internal/field", "internal/promexpo"}},
	// A fault family checks its params and keys each problem by its
	// field (faults[i].params.KEY in an experiment file).
	{"faults", []string{"simcontract", "internal", "internal/kube/api", "internal/field"}},
	// The run pipelines (load, script), above what they combine and below
	// everything that calls them.
	{"pipeline", []string{"telemetry", "report", "assertions", "xk6-llm", "internal/field"}},
	{"experiments/shardjob", []string{"faults", "report", "internal", "internal/kube/api"}},
	{"experiments/spec", []string{"experiments/shardjob", "pipeline", "faults", "telemetry", "report", "assertions", "xk6-llm", "simcontract", "internal/kube/api", "internal/field"}},
	{"experiments", []string{"experiments/spec", "experiments/shardjob", "pipeline", "faults", "telemetry", "report", "assertions", "xk6-llm", "simcontract", "internal", "internal/kube/api", "internal/field"}},
	// The capacity search measures a load; the capacity file it writes is
	// read by experiments/spec, which owns every step of an experiment's
	// resolution.
	{"capacity", []string{"pipeline", "report", "assertions", "xk6-llm", "internal/field"}},
	{"history", []string{"report", "assertions", "xk6-llm", "internal/field"}},
	{"suite", []string{"experiments", "experiments/spec", "pipeline", "report", "internal/junit", "internal", "internal/field"}},
	{"gameday", []string{"experiments", "experiments/spec", "faults", "telemetry", "report", "xk6-llm", "internal/field"}},
	{"deploy", nil},
	// Programs the test scripts build (the test node's pod sandbox): the
	// standard library only.
	{"scripts", nil},
	// The binary: flags, and a call into a package.
	{"cmd", []string{"suite", "gameday", "capacity", "history", "experiments", "experiments/spec", "experiments/shardjob", "pipeline", "faults", "telemetry", "report", "assertions", "xk6-llm", "sim", "simcontract", "internal/junit", "internal", "internal/kube/api", "internal/field"}},
}

// unitOf is the floor unit of a module-relative path: the longest unit of
// layers it lies in ("" for none).
func unitOf(rel string) string {
	best := ""
	for _, l := range layers {
		if (rel == l.unit || strings.HasPrefix(rel, l.unit+"/")) && len(l.unit) > len(best) {
			best = l.unit
		}
	}
	return best
}

// allowed reports whether unit from may import unit to.
func allowed(from, to string) bool {
	if from == to {
		return true
	}
	for _, l := range layers {
		if l.unit == from {
			return slices.Contains(l.imports, to)
		}
	}
	return false
}

// TestLayersHoldEveryArrow walks the module's non-test Go files and fails
// for each import of the module that the layering table does not allow:
// an arrow from the load engine library (xk6-llm) to anything above it, a
// pipeline importing the runner or a verb, a unit importing one above it.
func TestLayersHoldEveryArrow(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(path)
		if d.IsDir() {
			name := d.Name()
			if name == "testdata" || name == "vendor" || (rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		from := unitOf(filepath.ToSlash(filepath.Dir(rel)))
		if from == "" {
			t.Errorf("%s is in no unit of the layering table: add its folder to layers", rel)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			to := unitOf(strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			if !allowed(from, to) {
				may := "nothing of the module but itself"
				if im := importsOf(from); len(im) > 0 {
					may = "only itself and " + strings.Join(im, ", ")
				}
				t.Errorf("%s imports %s: %s may import %s (the table layers in layers_test.go)", rel, p, from, may)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 200 {
		t.Fatalf("checked %d files; the walk did not find the module", checked)
	}
}

// importsOf is unit's row of layers.
func importsOf(unit string) []string {
	for _, l := range layers {
		if l.unit == unit {
			return l.imports
		}
	}
	return nil
}

// TestLayersTable: the table names each unit once, a unit's imports are
// units of the table on floors below it (so that the layering has no
// cycle), and paths fall into the innermost unit.
func TestLayersTable(t *testing.T) {
	floor := map[string]int{}
	for i, l := range layers {
		if _, dup := floor[l.unit]; dup {
			t.Errorf("unit %s is in the table twice", l.unit)
		}
		floor[l.unit] = i
	}
	for i, l := range layers {
		for _, to := range l.imports {
			j, ok := floor[to]
			switch {
			case !ok:
				t.Errorf("%s may import %s, which is no unit of the table", l.unit, to)
			case j >= i:
				t.Errorf("%s may import %s, which is not below it in the table", l.unit, to)
			}
		}
	}
	for _, tt := range []struct{ rel, want string }{
		{"xk6-llm/js", "xk6-llm"},
		{"pipeline/script", "pipeline"},
		{"experiments/spec", "experiments/spec"},
		{"experiments/catalog", "experiments"},
		{"experiments", "experiments"},
		{"simcontract/vgpu", "simcontract"},
		{"internal/junit", "internal/junit"},
		{"internal/kube", "internal"},
		{"sim/server", "sim"},
		{"cmd/llmchaos", "cmd"},
		{"experimentsx", ""},
		{"nowhere", ""},
	} {
		if got := unitOf(tt.rel); got != tt.want {
			t.Errorf("unitOf(%q) = %q, want %q", tt.rel, got, tt.want)
		}
	}
	if allowed("xk6-llm", "report") || allowed("pipeline", "experiments") || !allowed("pipeline", "report") || !allowed("report", "report") {
		t.Error("allowed does not follow the table")
	}
}
