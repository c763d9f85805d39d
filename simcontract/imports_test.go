package simcontract_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/llmchaos/llmchaos"

// importsSim reports whether path is the simulator or one of its packages.
func importsSim(path string) bool {
	return path == module+"/sim" || strings.HasPrefix(path, module+"/sim/")
}

// TestChaosSideDoesNotImportSim walks the module's non-test Go files and
// fails for each one outside sim/ and cmd/ that imports sim/...: the chaos
// side reaches the simulator only through simcontract.
func TestChaosSideDoesNotImportSim(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel == "sim" || rel == "cmd" || name == "testdata" || name == "vendor" || (rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
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
			if importsSim(p) {
				t.Errorf("%s imports %s: the chaos side must use simcontract/... instead of the simulator", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files under %s; the walk did not find the module", checked, root)
	}
}

func TestImportsSim(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{module + "/sim", true},
		{module + "/sim/supervisor", true},
		{module + "/sim/server", true},
		{module + "/simcontract/vgpu", false},
		{module + "/simulator", false},
		{"example.com/sim", false},
	}
	for _, tt := range tests {
		if got := importsSim(tt.path); got != tt.want {
			t.Errorf("importsSim(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
