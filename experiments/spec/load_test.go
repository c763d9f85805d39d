package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// problemLines parses src as file t.yaml and returns every problem it has
// (errors and warnings), one string each as Error writes them.
func problemLines(t *testing.T, src string) []string {
	t.Helper()
	spec, warns, err := Parse("t.yaml", []byte(src))
	var ps field.Problems
	switch {
	case err != nil:
		if !errors.As(err, &ps) {
			t.Fatalf("Parse error %T %v, want field.Problems", err, err)
		}
		if spec != nil {
			t.Errorf("Parse returned a spec with errors")
		}
	default:
		ps = warns
		if spec == nil {
			t.Fatalf("Parse returned no spec and no error")
		}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Error()
	}
	return out
}

// A valid document the cases below change one or two lines of. Line
// numbers matter: the cases' expectations name them.
const baseDoc = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: t}
target:
  sim: {replicas: 2}
workload: {preset: chat, rate: 5, duration: 60s}
faults:
  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}
thresholds:
  ttft: ["p(99)<500ms"]
`

// edit returns baseDoc with line n (1-based) replaced by repl (which may
// hold several lines, or none).
func edit(n int, repl string) string {
	lines := strings.Split(baseDoc, "\n")
	lines[n-1] = repl
	return strings.Join(lines, "\n")
}

func TestBaseDocIsValid(t *testing.T) {
	if got := problemLines(t, baseDoc); len(got) != 0 {
		t.Fatalf("base document has problems:\n%s", strings.Join(got, "\n"))
	}
}

func TestLoadPositions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "unknown key suggests the nearest",
			src:  edit(6, "workload: {preset: chat, rate: 5, duraton: 60s}"),
			want: []string{`t.yaml:6:35: workload.duraton: unknown key "duraton"; did you mean "duration"?`},
		},
		{
			name: "unknown key far from any lists the known ones",
			src:  edit(3, "metadata: {name: t, zzzzzz: 1}"),
			want: []string{`t.yaml:3:21: metadata.zzzzzz: unknown key "zzzzzz"; known keys: name, description, labels`},
		},
		{
			name: "unknown key with a hint",
			src:  edit(6, "workload: {preset: chat, rate: 5, duration: 60s, max_tokens: 100}"),
			want: []string{`t.yaml:6:50: workload.max_tokens: unknown key "max_tokens": output_tokens is sent as max_tokens: write output_tokens`},
		},
		{
			name: "unknown top-level key",
			src:  baseDoc + "stopConditions: []\n",
			want: []string{`t.yaml:11:1: stopConditions: unknown key "stopConditions"; did you mean "stop_conditions"?`},
		},
		{
			name: "wrong type",
			src:  edit(5, "  sim: {replicas: three}"),
			want: []string{`t.yaml:5:19: target.sim.replicas: got a string ("three"), want an integer`},
		},
		{
			name: "wrong type, a number for a string",
			src:  edit(3, "metadata: {name: 12}"),
			want: []string{`t.yaml:3:18: metadata.name: got an integer ("12"), want a string (quote it: "12")`},
		},
		{
			name: "list where a mapping is wanted",
			src:  edit(5, "  sim: [2]"),
			want: []string{`t.yaml:5:8: target.sim: got a list, want a mapping with keys replicas, model, latency, ttft, itl, max_num_seqs, max_waiting, max_model_len, gpu_memory, gpu_memory_utilization, mean_output_tokens, divergence, divergence_min_batch, migrate, startup_time, restart_delay, seed`},
		},
		{
			name: "duration without a unit",
			src:  edit(6, "workload: {preset: chat, rate: 5, duration: 60}"),
			want: []string{`t.yaml:6:45: workload.duration: 60 has no unit: write 60s or 60ms`},
		},
		{
			name: "bad duration",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 10x, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:45: faults[0].at: "10x" is not a duration: write a number with a unit (ns, us, ms, s, m, h), such as 200ms, 15s or 1m30s`},
		},
		{
			name: "negative fault duration",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: -1s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:60: faults[0].duration: -1s: want more than 0`},
		},
		{
			name: "threshold: the column points at the bad character",
			src:  edit(10, `  ttft: ["p(99)<500xs"]`),
			want: []string{`t.yaml:10:20: thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"`},
		},
		{
			name: "threshold in single quotes",
			src:  edit(10, `  ttft: ['p(99)<500xs']`),
			want: []string{`t.yaml:10:20: thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"`},
		},
		{
			name: "threshold with an escape before the bad character",
			src:  edit(10, `  ttft: ["p(99)\u003c500xs"]`),
			want: []string{`t.yaml:10:25: thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"`},
		},
		{
			name: "threshold as a plain block item",
			src:  edit(10, "  ttft:\n    - p(99)<500xs"),
			want: []string{`t.yaml:11:16: thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"`},
		},
		{
			name: "threshold in object form",
			src:  edit(10, `  ttft: [{threshold: "p(99)<500xs", abortOnFail: true}]`),
			want: []string{`t.yaml:10:32: thresholds.ttft[0].threshold: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"`},
		},
		{
			name: "threshold key: unknown tag value",
			src:  edit(10, `  "ttft{phase:basline}": ["p(99)<500ms"]`),
			want: []string{`t.yaml:10:15: thresholds["ttft{phase:basline}"]: unknown phase "basline" (want baseline, fault, recovery or after) in "ttft{phase:basline}"`},
		},
		{
			name: "threshold key: unknown metric",
			src:  edit(10, `  ttfx: ["p(99)<500ms"]`),
			want: []string{`t.yaml:10:3: thresholds.ttfx: unknown metric "ttfx" (did you mean "ttft"?) in "ttfx"`},
		},
		{
			name: "stop condition",
			src:  baseDoc + `stop_conditions: ["error_rate: rate<0.5x"]` + "\n",
			want: []string{`t.yaml:11:40: stop_conditions[0]: unknown unit "x" (want ms, s or us) in "error_rate: rate<0.5x"`},
		},
		{
			name: "goodput",
			src:  baseDoc + `goodput: "ttft:500ms,tpot:5xs"` + "\n",
			want: []string{`t.yaml:11:28: goodput: unknown unit "xs" (want ms, s or us) in "ttft:500ms,tpot:5xs"`},
		},
		{
			name: "duplicate fault name",
			src: edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}\n"+
				"  - {name: slow, type: network.latency, at: 35s, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:9:12: faults[1].name: fault name "slow" is already used by faults[0]; fault names must be unique`},
		},
		{
			name: "unknown fault type",
			src:  edit(8, "  - {name: slow, type: network.latncy, at: 10s, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:24: faults[0].type: unknown fault type "network.latncy"; did you mean "network.latency"?`},
		},
		{
			name: "fault params: bad value",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 0s}}"),
			want: []string{`t.yaml:8:83: faults[0].params.latency: latency: 0s, want more than 0`},
		},
		{
			// A problem of a nested key is at that key's value, named by
			// its path: the fault family keys it by field.
			name: "fault params: nested key",
			src:  edit(8, "  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {select: {mode: count, value: 0}}}"),
			want: []string{`t.yaml:8:100: faults[0].params.select.value: select.value: 0, mode count needs at least 1`},
		},
		{
			name: "fault params: a key that depends on another",
			src:  edit(8, "  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {via: engine}}"),
			want: []string{`t.yaml:8:76: faults[0].params.via: via: engine is for the docker and kubernetes drivers, not process`},
		},
		{
			name: "fault params: unknown key",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms, jiter: 5ms}}"),
			want: []string{`t.yaml:8:90: faults[0].params.jiter: unknown key "jiter"; did you mean "jitter"?`},
		},
		{
			name: "fault after the load",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 70s, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:45: faults[0].at: the fault would start at 1m10s, when the load (1m0s) is over: start it earlier or lengthen the workload's duration`},
		},
		{
			name: "fault ending after the load",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 55s, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:60: faults[0].duration: the fault would end at 1m5s, after the load ends at 1m0s: shorten it or lengthen the workload's duration`},
		},
		{
			name: "fault leaving too little time to recover is a warning",
			src:  edit(8, "  - {name: slow, type: network.latency, at: 45s, duration: 10s, params: {latency: 100ms}}"),
			want: []string{`t.yaml:8:60: warning: faults[0].duration: the fault is reverted at 55s, leaving 5s of load, less than the recovery hold (10s): its recovery cannot be seen and will report recovered: false`},
		},
		{
			name: "fault:NAME tag not declared",
			src:  edit(10, `  "recovery_time{fault:slw}": ["max<20s"]`),
			want: []string{`t.yaml:10:24: thresholds["recovery_time{fault:slw}"]: fault "slw" is not declared under faults; did you mean "slow"?`},
		},
		{
			name: "fault:NAME tag in a stop condition",
			src:  baseDoc + `stop_conditions: ["error_rate{fault:nope}: rate<0.5"]` + "\n",
			want: []string{`t.yaml:11:37: stop_conditions[0]: fault "nope" is not declared under faults (declared: slow)`},
		},
		{
			name: "class tag that selects nothing",
			src:  edit(10, `  "ttft{class:batch}": ["p(99)<500ms"]`),
			want: []string{`t.yaml:10:15: thresholds["ttft{class:batch}"]: class:batch selects nothing: the workload's requests have class chat`},
		},
		{
			name: "two target kinds",
			src:  edit(5, "  sim: {replicas: 2}\n  llm: {url: \"http://127.0.0.1:8000/v1\"}"),
			want: []string{`t.yaml:6:3: target.llm: target has both sim and llm: keep one`},
		},
		{
			name: "no target",
			src:  strings.Replace(baseDoc, "target:\n  sim: {replicas: 2}\n", "target: {}\n", 1),
			want: []string{`t.yaml:4:9: target: missing: set sim (the built-in simulator; sim: {} for its defaults), llm (an OpenAI-compatible endpoint) or kubernetes (pods behind a Service)`},
		},
		{
			name: "key given twice",
			src:  edit(3, "metadata: {name: t}\nkind: Experiment"),
			want: []string{`t.yaml:4:1: kind: key "kind" is given twice (first at line 2); remove one`},
		},
		{
			name: "secret header",
			src:  edit(5, `  llm: {url: "http://127.0.0.1:8000/v1", headers: {Authorization: "Bearer x"}}`),
			want: []string{`t.yaml:5:52: target.llm.headers.Authorization: secrets never go in an experiment file: put the key in an environment variable and name it in api_key_env`},
		},
		{
			name: "probe placeholder",
			src:  baseDoc + "steady_state:\n  - http: {url: \"{{target}}/x/{{tagret}}\"}\n",
			want: []string{`t.yaml:12:31: steady_state[0].http.url: unknown placeholder: the only one is {{target}}`},
		},
		{
			name: "workload problem named by its key",
			src:  edit(6, "workload: {preset: chat, rate: 5, duration: 60s, max_in_flight: -1}"),
			want: []string{`t.yaml:6:65: workload.max_in_flight: max_in_flight -1 must be ≥ 0`},
		},
		{
			name: "unknown preset",
			src:  edit(6, "workload: {preset: caht, rate: 5, duration: 60s}"),
			want: []string{`t.yaml:6:20: workload.preset: unknown preset "caht" (want one of chat, batch, completion, agent); did you mean "chat"?`},
		},
		{
			name: "syntax error",
			src:  edit(6, "workload: {preset: chat, rate: 5"),
			want: []string{`t.yaml:7:1: YAML syntax: ',' or '}' must be specified`},
		},
		{
			name: "tab indentation",
			src:  edit(5, "\tsim: {replicas: 2}"),
			want: []string{`t.yaml:5:1: YAML syntax: found character '	' that cannot start any token`},
		},
		{
			name: "empty file",
			src:  "# nothing\n",
			want: []string{`t.yaml:1:1: empty file: an experiment needs apiVersion, kind, metadata, target and workload`},
		},
		{
			name: "two documents",
			src:  baseDoc + "---\nkind: Experiment\n",
			want: []string{`t.yaml:12:5: a second document: an experiment file holds one (remove the ---)`},
		},
		{
			name: "not a mapping",
			src:  "- a\n- b\n",
			want: []string{`t.yaml:1:1: the file holds a list; an experiment is a mapping with keys apiVersion, kind, metadata, target, workload...`},
		},
		{
			name: "undefined alias",
			src:  edit(5, "  sim: *nope"),
			want: []string{`t.yaml:5:8: target.sim: alias *nope names no anchor defined before it`},
		},
		{
			name: "JSON input",
			src: `{
  "apiVersion": "llmchaos/v1",
  "kind": "Experiment",
  "metadata": {"name": "j"},
  "target": {"sim": {"replicas": "2"}},
  "workload": {"preset": "chat", "rate": 5, "duration": "60s"}
}`,
			want: []string{`t.yaml:5:34: target.sim.replicas: got a string ("2"), want an integer`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemLines(t, tt.src)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

// A file with many problems in different parts reports all of them at
// once, in file order.
func TestLoadReportsAllProblemsAtOnce(t *testing.T) {
	src := `apiVersion: llmchaos/v2
kind: Experiment
metadata: {name: All field.Problems}
target:
  sim: {replicas: 0.5}
workload: {preset: chat, rate: 5, duration: 60s, arival: gamma}
steady_state:
  - {}
faults:
  - {name: a, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}
  - {name: a, type: stream.stal, at: 20s, duration: 10s}
  - {name: b, type: stream.stall, at: 30s, duration: 10s, params: {stall: 1s, probability: 3}}
stop_conditions: ["error_rate: rate<<0.5"]
thresholds:
  "recovery_time{fault:c}": ["max<20s"]
recovery: {window: -1s, hold: 10}
`
	got := problemLines(t, src)
	want := []string{
		`t.yaml:1:13: apiVersion: "llmchaos/v2" is not supported: write apiVersion: llmchaos/v1`,
		`t.yaml:3:18: metadata.name: "All field.Problems": use lower-case letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 63 characters`,
		`t.yaml:5:19: target.sim.replicas: got a number ("0.5"), want an integer`,
		`t.yaml:6:50: workload.arival: unknown key "arival"; did you mean "arrival"?`,
		`t.yaml:8:5: steady_state[0]: empty probe: set http, threshold or promql`,
		`t.yaml:11:12: faults[1].name: fault name "a" is already used by faults[0]; fault names must be unique`,
		`t.yaml:11:21: faults[1].type: unknown fault type "stream.stal"; did you mean "stream.stall"?`,
		`t.yaml:12:39: warning: faults[2].at: "b" starts 10s after "a" is reverted, less than recovery.window + recovery.hold (5s + 10s): its effects count against "a"'s recovery; start it at 35s or later`,
		`t.yaml:12:92: faults[2].params.probability: probability: 3, want more than 0 and at most 1`,
		`t.yaml:13:37: stop_conditions[0]: expected a number in "error_rate: rate<<0.5"`,
		`t.yaml:15:24: thresholds["recovery_time{fault:c}"]: fault "c" is not declared under faults (declared: a, b)`,
		`t.yaml:16:20: recovery.window: -1s is negative`,
		`t.yaml:16:31: recovery.hold: 10 has no unit: write 10s or 10ms`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func TestLoadQuickstart(t *testing.T) {
	spec, warns, err := Load(filepath.Join("testdata", "quickstart.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if got, want := spec.Metadata.Name, "quickstart"; got != want {
		t.Errorf("name %q, want %q", got, want)
	}
	if spec.Target.Sim == nil || spec.Target.Sim.Replicas != 3 {
		t.Errorf("target %+v, want sim with 3 replicas", spec.Target)
	}
	if got, want := len(spec.Faults), 2; got != want {
		t.Fatalf("%d faults, want %d", got, want)
	}
	f := spec.Faults[1]
	if f.Name != "stalls" || f.Type != "stream.stall" || f.At.D() != 35*time.Second || f.Duration.D() != 10*time.Second {
		t.Errorf("faults[1] = %+v", f)
	}
	if got, want := f.Params["after_tokens"], any(5); got != want {
		t.Errorf("after_tokens %v (%T), want %v", got, got, want)
	}
	if got, want := len(spec.Thresholds), 3; got != want {
		t.Errorf("%d threshold keys, want %d", got, want)
	}
	wc, ac, err := spec.Workload.Configs()
	if err != nil {
		t.Fatalf("Configs: %v", err)
	}
	if wc.Name != "chat" || ac.Rate != 20 || ac.Duration != time.Minute || ac.Arrival != "poisson" {
		t.Errorf("resolved workload %+v / %+v", wc, ac)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	var ps field.Problems
	if err == nil || errors.As(err, &ps) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want a not-exist error that is not field.Problems", err)
	}
}

func TestLoadAnchorsAndMergeKeys(t *testing.T) {
	src := `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: t}
target:
  sim: {replicas: 2}
workload: {preset: chat, rate: 5, duration: 60s}
faults:
  - &lat {name: a, type: network.latency, at: 10s, duration: 5s, params: {latency: 100ms}}
  - <<: *lat
    name: b
    at: 30s
`
	spec, _, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	b := spec.Faults[1]
	if b.Name != "b" || b.At.D() != 30*time.Second || b.Duration.D() != 5*time.Second || b.Type != "network.latency" {
		t.Errorf("merged fault = %+v", b)
	}
}

func TestLoadRefusesAliasBombs(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	got := problemLines(t, b.String())
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "document too large") }) {
		t.Errorf("problems %q do not refuse the expansion", got)
	}
}
