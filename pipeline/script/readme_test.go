package script

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// TestReadmeNamesEveryExecutorAndModule keeps the README's k6-style
// scripts section in step with the tables of executors and modules.
func TestReadmeNamesEveryExecutorAndModule(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## k6-style scripts")
	if !ok {
		t.Fatal("README.md has no section \"## k6-style scripts\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, name := range append(executorNames(), js.ModuleNames()...) {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("README's k6-style scripts section does not name `%s`", name)
		}
	}
}
