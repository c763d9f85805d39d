package js

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// writeScripts writes files into a temporary directory and returns it.
func writeScripts(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadVU loads script.js from dir and makes VU 1.
func loadVU(t *testing.T, dir string) (*VU, *Shared, error) {
	t.Helper()
	sh, err := NewShared(SharedOptions{Env: map[string]string{"GREETING": "hi"}, Console: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		return nil, sh, err
	}
	vu, err := NewVU(context.Background(), 1, prog, sh)
	return vu, sh, err
}

// runDefault runs one iteration of the script's default function on vu,
// first handing the VU to a "default" scenario unless it has one.
func runDefault(ctx context.Context, t testing.TB, vu *VU) Iteration {
	t.Helper()
	if vu.scenario == nil {
		if err := vu.Activate(&Scenario{Name: "default", Exec: "default"}); err != nil {
			t.Fatal(err)
		}
	}
	return vu.Run(ctx)
}

func TestBadScriptsAreScriptErrorsWithPositions(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"syntax error", map[string]string{"script.js": "export default function () {\n  let x = ;\n}\n"},
			[]string{"script.js:2:11", "SyntaxError"}},
		{"unknown module", map[string]string{"script.js": "import { check } from 'k6';\n\n  import x from 'k6/nope';\nexport default function () {}\n"},
			[]string{"script.js:3:3", `unknown module "k6/nope"`, "k6/data", "k6/execution", "k6/metrics", "k6/x/llm", "k6/http", "k6/x/sse", "k6/x/summary"}},
		{"unknown module re-exported by an imported file", map[string]string{"script.js": "import { x } from './lib.js';\nexport default function () {}\n",
			"lib.js": "// lib\nexport { x } from 'k6/nope';\n"},
			[]string{"lib.js:2:1", `unknown module "k6/nope"`}},
		{"remote module", map[string]string{"script.js": "import x from 'https://example.invalid/lib.js';\nexport default function () {}\n"},
			[]string{"script.js:1:1", "remote modules are not fetched", "import it as ./lib.js"}},
		{"missing relative file", map[string]string{"script.js": "import x from './lib.js';\nexport default function () {}\n"},
			[]string{"script.js:1:1", "lib.js not found"}},
		{"init exception", map[string]string{"script.js": "import { helper } from './lib.js';\nhelper();\nexport default function () {}\n",
			"lib.js": "export function helper() {\n  throw new Error('boom in init');\n}\n"},
			[]string{"lib.js:2:", "boom in init", "at helper"}},
		{"open outside init", map[string]string{"script.js": "export function setup() { open('x'); }\nexport default function () {}\n"},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vu, _, err := loadVU(t, writeScripts(t, tt.files))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				_, err = vu.Setup(context.Background())
				tt.want = []string{"script.js:1:", "open() can only be called in the init context"}
			}
			if _, ok := errors.AsType[*ScriptError](err); !ok {
				t.Fatalf("got error %v (%T), want a *ScriptError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestIterationExceptionFailsOnlyThatIteration(t *testing.T) {
	dir := writeScripts(t, map[string]string{
		"script.js": `import { check } from 'k6';
import { Trend } from 'k6/metrics';
import { double } from './lib.js';
const data = open('./data.txt');
const t = new Trend('my_trend', true);
export const options = { vus: 2, duration: '1s' };
export default function () {
  t.add(double(__ITER), { class: 'x' });
  check(__ENV.GREETING, { 'greets': (g) => g === 'hi', 'has data': () => data.trim() === 'abc' });
  if (__ITER === 1) { throw new Error('iteration ' + __ITER + ' failed'); }
}
`,
		"lib.js":   "export const double = (x) => 2 * x;\n",
		"data.txt": "abc\n",
	})
	vu, sh, err := loadVU(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := vu.Options()
	if err != nil || opts != `{"vus":2,"duration":"1s"}` {
		t.Errorf("got options %s, %v", opts, err)
	}
	if err := vu.Activate(&Scenario{Name: "default", Exec: "default"}); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for range 3 {
		it := vu.Run(context.Background())
		if it.Err != nil {
			failed = append(failed, it.Err.Error())
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "Error: iteration 1 failed") || !strings.Contains(failed[0], "script.js:10:") {
		t.Errorf("got failed iterations %q, want one, iteration 1's, at script.js:10", failed)
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	for _, c := range []struct {
		name string
		got  func() float64
		want float64
	}{
		{"iterations", func() float64 { return sum.Custom(MetricIterations, recording.TagFilter{}).Sum }, 3},
		{"iterations_failed", func() float64 { return sum.Custom(MetricIterationsFailed, recording.TagFilter{}).Sum }, 1},
		{"checks count", func() float64 { return float64(sum.Custom(MetricChecks, recording.TagFilter{}).Count) }, 6},
		{"checks rate", func() float64 { return sum.Custom(MetricChecks, recording.TagFilter{}).Rate() }, 1},
		{"my_trend count", func() float64 { return float64(sum.Custom("my_trend", recording.TagFilter{}).Count) }, 3},
		{"my_trend max", func() float64 { return math.Round(sum.Custom("my_trend", recording.TagFilter{}).Max()) }, 4},
	} {
		if got := c.got(); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
