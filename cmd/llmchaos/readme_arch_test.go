package main

import (
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestReadmeArchitectureNamesEveryPackage: the architecture table (docs/architecture.md)
// names every package of the module (by its path or, inside its parent's
// row, by its last element in backquotes), so the layout it describes
// cannot drift from the tree.
func TestReadmeArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	arch := string(raw)
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "github.com/llmchaos/llmchaos/...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(imp, "github.com/llmchaos/llmchaos"), "/")
		if rel == "" {
			continue
		}
		if strings.Contains(arch, "`"+rel+"/`") || strings.Contains(arch, "`"+rel+"`") || strings.Contains(arch, "`"+path.Base(rel)+"`") || strings.Contains(arch, "`"+path.Base(rel)+"/`") {
			continue
		}
		t.Errorf("docs/architecture.md does not name package %s", rel)
	}
}
