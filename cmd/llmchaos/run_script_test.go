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
		{name: "syntax error", code: exitcode.Usage,
			args:   []string{"run", filepath.Join("..", "..", "examples", "scripts", "errors", "syntax-error.js")},
			stderr: []string{"syntax-error.js:4:13", "SyntaxError"}},
		{name: "unknown import", code: exitcode.Usage,
			args:   []string{"run", filepath.Join("..", "..", "examples", "scripts", "errors", "unknown-import.js")},
			stderr: []string{"unknown-import.js:3:1", `unknown module "k6/ws"`, "k6/metrics", "k6/x/llm", "k6/http", "k6/x/sse", "k6/data", "k6/execution", "k6/x/summary"}},
		{name: "typescript", code: exitcode.OK,
			args: []string{"run", filepath.Join("..", "..", "examples", "scripts", "typescript.ts"), "-e", "BASE_URL=" + url, "-e", "MODEL=" + model, "-e", "ITERATIONS=2"}},
		{name: "typescript syntax error", code: exitcode.Usage,
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
		{name: "exec.test.abort() is an abort", code: exitcode.Aborted,
			args: []string{"run", abort}, stdout: []string{"verdict: ABORTED by the script (exec.test.abort()): no target"}},
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
