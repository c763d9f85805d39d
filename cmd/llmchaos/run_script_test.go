package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestRunScriptExitCodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs short loads")
	}
	url := loadSim(t, 10*time.Millisecond, time.Millisecond, "")
	model := sim.DefaultConfig().Model
	chat := filepath.Join("..", "..", "examples", "scripts", "chat-arrival-rate.js")
	dir := t.TempDir()
	abort := filepath.Join(dir, "abort.js")
	if err := os.WriteFile(abort, []byte("import exec from 'k6/execution';\n"+
		"export function setup() { exec.test.abort('no target'); }\nexport default function () {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	failed := script("fail.js", "import exec from 'k6/execution';\nexport const options = { iterations: 2, thresholds: { checks: ['rate>0.99'] } };\n"+
		"import { check } from 'k6';\nexport default function () { check(1, { ok: () => true }); exec.test.fail('too slow'); }\n")
	failedAndThresholds := script("fail-thresholds.js", "import exec from 'k6/execution';\nexport const options = { thresholds: { checks: ['rate>0.99'] } };\n"+
		"import { check } from 'k6';\nexport default function () { check(1, { no: () => false }); exec.test.fail(); }\n")
	setupThrows := script("setup-throws.js", "export function setup() {\n  throw new Error('no fixture');\n}\nexport default function () {}\n")
	teardownThrows := script("teardown-throws.js", "export default function () {}\nexport async function teardown() {\n  await null;\n  throw new Error('cleanup broke');\n}\n")
	badExecutor := script("bad-executor.js", "export const options = { scenarios: { s: { executor: 'constant-looping-vus' } } };\nexport default function () {}\n")
	badTLS := script("bad-tls.js", "export const options = { tlsVersion: { min: 'tls1.4' }, tlsCipherSuites: ['RC5'] };\nexport default function () {}\n")
	unknownMetric := script("unknown-metric.js", "export const options = { thresholds: { not_a_metric: ['count>0'] } };\nexport default function () {}\n")
	setupTimeout := script("setup-timeout.js", "import { sleep } from 'k6';\nexport const options = { setupTimeout: '50ms' };\n"+
		"export function setup() { sleep(10); }\nexport default function () {}\n")
	teardownTimeout := script("teardown-timeout.js", "import { sleep } from 'k6';\nexport const options = { teardownTimeout: '50ms' };\n"+
		"export default function () {}\nexport function teardown() { sleep(10); }\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   []string
		stdout   []string
		checkOut func(t *testing.T)
	}{
		{name: "pass with reports", code: exitcode.OK,
			args: []string{"run", chat, "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "-e", "RATE=10", "-e", "DURATION=1s",
				"--out", dir, "--junit", filepath.Join(dir, "junit.xml")},
			checkOut: func(t *testing.T) {
				doc, err := report.Read(filepath.Join(dir, "run.json"))
				if err != nil {
					t.Fatal(err)
				}
				if got := doc.Summary().Counts(recording.TagFilter{}).OK; got != 10 {
					t.Errorf("run.json: got %d ok requests, want 10", got)
				}
				b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
				if err != nil || xml.Unmarshal(b, new(any)) != nil || !strings.Contains(string(b), "tokens_per_second") {
					t.Errorf("junit.xml: %v, want XML naming the custom threshold", err)
				}
			}},
		{name: "failed threshold", code: exitcode.Thresholds,
			args: []string{"run", chat, "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "-e", "RATE=5", "--duration", "1s", "-e", "MIN_TPS=1000000000000"}},
		{name: "vus and iterations override the scenarios", code: exitcode.OK,
			args: []string{"run", chat, "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "--vus", "2", "--iterations", "3", "-q"}},
		{name: "syntax error", code: exitcode.ScriptException,
			args:   []string{"run", filepath.Join("..", "..", "examples", "scripts", "errors", "syntax-error.js")},
			stderr: []string{"syntax-error.js:4:13", "SyntaxError"}},
		{name: "unknown import", code: exitcode.ScriptException,
			args:   []string{"run", filepath.Join("..", "..", "examples", "scripts", "errors", "unknown-import.js")},
			stderr: []string{"unknown-import.js:3:1", `unknown module "k6/ws"`, "k6/metrics", "k6/x/llm", "k6/http", "k6/x/sse", "k6/data", "k6/execution", "k6/x/summary"}},
		{name: "typescript", code: exitcode.OK,
			args: []string{"run", filepath.Join("..", "..", "examples", "scripts", "typescript.ts"), "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "-e", "ITERATIONS=2"}},
		{name: "typescript syntax error", code: exitcode.ScriptException,
			args:   []string{"run", filepath.Join("..", "..", "examples", "scripts", "errors", "syntax-error.ts")},
			stderr: []string{"syntax-error.ts:8:34", "SyntaxError"}},
		{name: "custom trend threshold holds", code: exitcode.OK,
			args: []string{"run", filepath.Join("..", "..", "examples", "scripts", "custom-trend.js"), "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "-e", "ITERATIONS=4"}},
		{name: "custom trend threshold fails", code: exitcode.Thresholds,
			args: []string{"run", filepath.Join("..", "..", "examples", "scripts", "custom-trend.js"), "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "-e", "ITERATIONS=4", "-e", "LONG_MAX_MS=1"}},
		{name: "handleSummary replaces the summary, --junit is still written", code: exitcode.OK,
			args: []string{"run", filepath.Join("..", "..", "examples", "scripts", "handle-summary.js"), "-e", "BASE_URL=" + url, "-e", "MODEL=" + model,
				"-e", "SUMMARY_JSON=" + filepath.Join(dir, "summary.json"), "--junit", filepath.Join(dir, "hs-junit.xml")},
			checkOut: func(t *testing.T) {
				for _, f := range []string{"summary.json", "hs-junit.xml"} {
					if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) == 0 {
						t.Errorf("%s: %v", f, err)
					}
				}
			}},
		{name: "exec.test.abort() is an abort", code: exitcode.ScriptAborted,
			args: []string{"run", abort}, stdout: []string{"verdict: ABORTED by the script (exec.test.abort()): no target"}},
		{name: "exec.test.fail() fails the run at its end", code: exitcode.ScriptMarkedFailed, args: []string{"run", failed},
			stderr: []string{"test marked as failed: too slow"}, stdout: []string{"verdict: FAIL (marked failed by the script: too slow; 0 of 1 threshold failed)"}},
		{name: "exec.test.fail() wins over failed thresholds", code: exitcode.ScriptMarkedFailed, args: []string{"run", failedAndThresholds}},
		{name: "an exception in setup", code: exitcode.ScriptException, args: []string{"run", setupThrows},
			stderr: []string{"setup-throws.js:2:9", "Error: no fixture"}},
		{name: "an exception in teardown after an await", code: exitcode.ScriptException, args: []string{"run", teardownThrows},
			stderr: []string{"teardown-throws.js:4:9", "Error: cleanup broke"}},
		{name: "an unknown executor", code: exitcode.ScriptInvalidConfig, args: []string{"run", badExecutor},
			stderr: []string{`executor "constant-looping-vus"`}},
		{name: "TLS options k6 refuses", code: exitcode.ScriptInvalidConfig, args: []string{"run", badTLS},
			stderr: []string{`options.tlsVersion.min "tls1.4": want tls1.0`, `options.tlsCipherSuites: unknown cipher suite "RC5"`}},
		{name: "a threshold on no metric", code: exitcode.ScriptInvalidConfig, args: []string{"run", unknownMetric},
			stderr: []string{`unknown metric "not_a_metric"`}},
		{name: "setupTimeout", code: exitcode.ScriptSetupTimeout, args: []string{"run", setupTimeout}, stderr: []string{"setupTimeout (50ms)"}},
		{name: "teardownTimeout", code: exitcode.ScriptTeardownTimeout, args: []string{"run", teardownTimeout}, stderr: []string{"teardownTimeout (50ms)"}},
		{name: "bad -e", code: exitcode.Usage, args: []string{"run", chat, "-e", "NOEQUALS"}, stderr: []string{`-e "NOEQUALS": want KEY=VALUE`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("got exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout %q lacks %q", stdout, w)
				}
			}
			if tt.checkOut != nil {
				tt.checkOut(t)
			}
		})
	}
}
