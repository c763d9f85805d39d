package script

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// TestReadmeNamesEveryExecutorAndModule keeps the k6-style scripts page
// (docs/scripts.md) in step with the tables of executors and modules.
func TestReadmeNamesEveryExecutorAndModule(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "scripts.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	for _, name := range append(executorNames(), js.ModuleNames()...) {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/scripts.md does not name `%s`", name)
		}
	}
}
