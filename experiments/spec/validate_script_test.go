package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// scriptDoc is an experiment whose workload is the script at SCRIPT.
const scriptDoc = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: scripted}
target:
  sim: {replicas: 2}
workload: {script: SCRIPT, env: {RATE: "5"}}
faults:
  - {name: slow, type: network.latency, at: 2s, duration: 3s, params: {latency: 100ms}}
thresholds:
  "turns{phase:fault}": ["count>0"]
`

// goodScript sends to the target the runner gives it and registers a
// custom metric; its schedule ends at 20 s.
const goodScript = `import llm from 'k6/x/llm';
import { Counter } from 'k6/metrics';
const turns = new Counter('turns');
const c = new llm.Client({ baseURL: __ENV.BASE_URL, model: __ENV.MODEL });
export const options = { scenarios: { s: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), duration: '20s', preAllocatedVUs: 2 } } };
export default function () { c.chat({ messages: [{ role: 'user', content: 'hi' }] }); turns.add(1); }
`

// TestValidateScriptWorkload: a script workload is checked as far as it
// can be before the run: its file, its syntax and init code (with the
// script's own position after the file's), its llm clients, the keys that
// apply with it, and its options' end against the fault times; its custom
// metrics are known to the thresholds.
func TestValidateScriptWorkload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good.js", goodScript)
	write("broken.js", "import llm from 'k6/x/llm';\nexport default function () {\n  const x = ;\n}\n")
	write("throws.js", "export const options = { vus: 1 };\nthrow new Error('no dataset');\nexport default function () {}\n")
	write("elsewhere.js", strings.Replace(goodScript, "__ENV.BASE_URL", "'http://127.0.0.1:8000/v1'", 1))
	write("short.js", strings.Replace(goodScript, "'20s'", "'4s'", 1))
	// A ramping scenario's schedule ends with its stages: 1 s + 3 s.
	write("ramping.js", strings.Replace(goodScript, "{ executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), duration: '20s', preAllocatedVUs: 2 }",
		"{ executor: 'ramping-vus', stages: [{ duration: '1s', target: 2 }, { duration: '3s', target: 0 }] }", 1))
	write("zero-rate.js", strings.Replace(goodScript, "rate: Number(__ENV.RATE)", "rate: 0", 1))
	doc := func(script string) string { return strings.Replace(scriptDoc, "SCRIPT", script, 1) }
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{name: "valid", src: doc("good.js")},
		{name: "missing file", src: doc("nope.js"),
			want: []string{"t.yaml:6:20: workload.script: " + filepath.Join(dir, "nope.js") + ": no such file (a path relative to the experiment file)"}},
		{name: "syntax error", src: doc("broken.js"),
			want: []string{"t.yaml:6:20: workload.script: " + filepath.Join(dir, "broken.js") + ":3:13: load: SyntaxError: "}},
		{name: "exception in the init code", src: doc("throws.js"),
			want: []string{"t.yaml:6:20: workload.script: " + filepath.Join(dir, "throws.js") + ":2:7: init: Error: no dataset"}},
		{name: "a client that bypasses the target", src: doc("elsewhere.js"),
			want: []string{"t.yaml:6:20: workload.script: the script's llm.Client sends to http://127.0.0.1:8000/v1, not to the experiment's target: build it with baseURL: __ENV.BASE_URL"}},
		{name: "a fault after the script's end", src: doc("short.js"),
			want: []string{"t.yaml:8:59: faults[0].duration: the fault would end at 5s, after the load ends at 4s"}},
		{name: "a fault after a ramping script's last stage", src: doc("ramping.js"),
			want: []string{"t.yaml:8:59: faults[0].duration: the fault would end at 5s, after the load ends at 4s"}},
		{name: "keys that do not apply, a variable the runner sets", src: strings.Replace(doc("good.js"), `env: {RATE: "5"}`, `env: {RATE: "5", BASE_URL: "x"}, preset: chat, output_tokens: 16`, 1),
			want: []string{
				"workload.env.BASE_URL: is set by the runner to the experiment's target (through its fault proxies): remove it",
				"workload.output_tokens: does not apply with a script",
				"workload.preset: does not apply with a script",
			}},
		{name: "an unknown metric", src: strings.Replace(doc("good.js"), `"turns{phase:fault}"`, `"turnz{phase:fault}"`, 1),
			want: []string{`unknown metric "turnz"`}},
		// The script's options are named as the script writes them; the
		// overrides by the workload keys that set them.
		{name: "an option's problem", src: doc("zero-rate.js"),
			want: []string{"t.yaml:6:20: workload.script: " + filepath.Join(dir, "zero-rate.js") + ": options.scenarios.s.rate must be positive"}},
		{name: "an override's problem", src: strings.Replace(doc("good.js"), `env: {RATE: "5"}`, `env: {RATE: "5"}, rate: 3, requests: 10`, 1),
			want: []string{"workload.requests: workload.rate and workload.requests: give one (a rate runs for a duration)"}},
		{name: "rate and duration override the scenarios", src: strings.Replace(doc("short.js"), `env: {RATE: "5"}`, `env: {RATE: "5"}, rate: 3, duration: 30s`, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps, err := Parse(filepath.Join(dir, "t.yaml"), []byte(tt.src))
			var got []string
			if err != nil {
				for _, p := range err.(field.Problems) {
					got = append(got, strings.TrimPrefix(p.Error(), dir+string(filepath.Separator)))
				}
			}
			for _, p := range ps {
				got = append(got, strings.TrimPrefix(p.Error(), dir+string(filepath.Separator)))
			}
			all := strings.Join(got, "\n")
			if len(tt.want) == 0 && len(got) > 0 {
				t.Fatalf("problems:\n%s", all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestScriptEnvAndOverrides: the script's environment gets the target
// from the runner, and the workload's keys map to llmchaos run's flags.
func TestScriptEnvAndOverrides(t *testing.T) {
	w := Workload{Script: "s.js", Env: map[string]string{"RATE": "5"}, Duration: Duration(30 * time.Second), Concurrency: 4, Requests: 7, Rate: PerSecondRate(2.5)}
	env := w.ScriptEnv([]string{"http://a/v1", "http://b/v1"}, "m")
	if env["BASE_URL"] != "http://a/v1" || env["BASE_URLS"] != "http://a/v1,http://b/v1" || env["MODEL"] != "m" || env["RATE"] != "5" {
		t.Errorf("ScriptEnv = %v", env)
	}
	o := w.ScriptOverrides()
	if o.Duration != 30*time.Second || o.VUs != 4 || o.Iterations != 7 || o.Rate != 2.5 {
		t.Errorf("ScriptOverrides = %+v", o)
	}
	if got := w.ScriptPath("/exp"); got != filepath.Join("/exp", "s.js") {
		t.Errorf("ScriptPath = %q", got)
	}
}
