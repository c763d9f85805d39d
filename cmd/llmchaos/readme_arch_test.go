package main

import (
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestReadmeArchitectureNamesEveryPackage: the README's architecture table
// names every package of the module (by its path or, inside its parent's
// row, by its last element in backquotes), so the layout it describes
// cannot drift from the tree.
func TestReadmeArchitectureNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "\n## Architecture")
	if i < 0 {
		t.Fatal("README.md has no Architecture section")
	}
	arch := s[i:]
	if j := strings.Index(arch[1:], "\n## "); j >= 0 {
		arch = arch[:j+1]
	}
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
		t.Errorf("README.md's architecture section does not name package %s", rel)
	}
}
