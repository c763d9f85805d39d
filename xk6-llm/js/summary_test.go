package js

import (
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"testing"
)

func TestChecksAreCountedByGroup(t *testing.T) {
	vu, sh, err := loadVU(t, writeScripts(t, map[string]string{"script.js": `import { check, group } from 'k6';
export default function () {
  check(__ITER, { 'even': (i) => i % 2 === 0 });
  group('outer', () => {
    check(1, { 'one': (x) => x === 1 });
    group('inner', () => {
      check(__ITER, { 'small': (i) => i < 1 });
    });
  });
  group('empty', () => {});
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if it := runDefault(context.Background(), t, vu); it.Err != nil {
			t.Fatal(it.Err)
		}
	}
	root := sh.Checks()
	type check struct {
		path          string
		passes, fails int64
	}
	var got []check
	var paths []string
	var walk func(g SummaryGroup)
	walk = func(g SummaryGroup) {
		paths = append(paths, g.Path)
		if g.ID != pathID(g.Path) {
			t.Errorf("group %q: id %s, want the MD5 of its path", g.Path, g.ID)
		}
		for _, c := range g.Checks {
			got = append(got, check{c.Path, c.Passes, c.Fails})
		}
		for _, sub := range g.Groups {
			walk(sub)
		}
	}
	walk(root)
	want := []check{{"::even", 2, 1}, {"::outer::one", 3, 0}, {"::outer::inner::small", 1, 2}}
	if len(got) != len(want) {
		t.Fatalf("got checks %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("check %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if strings.Join(paths, " ") != " ::outer ::outer::inner ::empty" {
		t.Errorf("got group paths %q, want root, ::outer, ::outer::inner, ::empty", paths)
	}
	if root.Groups[0].Name != "outer" || root.Groups[0].Groups[0].Name != "inner" {
		t.Errorf("got groups %+v", root.Groups)
	}
}

// summaryFixture is handleSummary data with a check of each kind and a
// metric of each type, one with a failed threshold.
func summaryFixture() SummaryData {
	return SummaryData{
		RootGroup: SummaryGroup{Checks: []SummaryCheck{{Name: "status 200", Passes: 10}, {Name: "has text", Passes: 7, Fails: 3}},
			Groups: []SummaryGroup{{Name: "login", Path: "::login", Checks: []SummaryCheck{{Name: "token", Passes: 2}}}}},
		Options: SummaryOptions{SummaryTrendStats: []string{"avg", "p(95)", "max"}},
		State:   SummaryState{TestRunDurationMs: 2000},
		Metrics: map[string]SummaryMetric{
			"ttft":              {Type: "trend", Contains: "time", Values: map[string]float64{"avg": 22.5, "p(95)": 30, "max": 1500}, Thresholds: map[string]SummaryThreshold{"p(95)<200": {OK: true}}},
			"ttft{class:chat}":  {Type: "trend", Contains: "time", Values: map[string]float64{"avg": 0.5, "p(95)": 0.75, "max": 1}, Thresholds: map[string]SummaryThreshold{"max<0.5": {OK: false}}},
			"checks":            {Type: "rate", Contains: "default", Values: map[string]float64{"rate": 0.85, "passes": 17, "fails": 3}},
			"iterations":        {Type: "counter", Contains: "default", Values: map[string]float64{"count": 10, "rate": 5}},
			"tokens_per_second": {Type: "gauge", Contains: "default", Values: map[string]float64{"value": 12.345}},
		},
	}
}

func TestTextSummary(t *testing.T) {
	got := TextSummary(summaryFixture(), TextSummaryOptions{})
	want := `     ✓ status 200
     ✗ has text
      ↳  70% — ✓ 7 / ✗ 3

     █ login

       ✓ token

   checks..............: 85.00% ✓ 17 ✗ 3
   iterations..........: 10       5/s
   tokens_per_second...: 12.35
 ✓ ttft................: avg=22.50ms  p(95)=30.00ms  max=1.50s
 ✗   {class:chat}......: avg=500.00µs p(95)=750.00µs max=1.00ms
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	indent := ""
	colored := TextSummary(summaryFixture(), TextSummaryOptions{Indent: &indent, EnableColors: true, SummaryTrendStats: []string{"med"}, SummaryTimeUnit: "ms"})
	for _, w := range []string{"\x1b[32m✓ status 200\x1b[0m", "\x1b[31m✗ has text\x1b[0m", "med=-", "\n\x1b[32m✓ \x1b[0mttft"} {
		if !strings.Contains(colored, w) {
			t.Errorf("coloured summary lacks %q:\n%s", w, colored)
		}
	}
}

func TestJUnitSummary(t *testing.T) {
	got := JUnitSummary(summaryFixture(), JUnitSummaryOptions{Name: "llm <suite>"})
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suite    struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	if doc.Tests != 2 || doc.Failures != 1 || doc.Suite.Name != "llm <suite>" || len(doc.Suite.Cases) != 2 {
		t.Fatalf("got %+v", doc)
	}
	if c := doc.Suite.Cases[0]; c.Name != "ttft - p(95)<200" || c.Failure != nil {
		t.Errorf("first case %+v, want ttft's, passed", c)
	}
	if c := doc.Suite.Cases[1]; c.Name != "ttft{class:chat} - max<0.5" || c.Failure == nil {
		t.Errorf("second case %+v, want the selection's, failed", c)
	}
}

func TestHandleSummaryWithTheK6SummaryJSLib(t *testing.T) {
	vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": `import { textSummary, jUnit, humanizeValue } from 'https://jslib.k6.io/k6-summary/0.0.2/index.js';
import * as builtin from 'k6/x/summary';
export default function () {}
export async function handleSummary(data) {
  await null;
  return {
    stdout: textSummary(data, { indent: '>', enableColors: false }),
    'out/junit.xml': jUnit(data),
    'raw.json': { n: data.state.testRunDurationMs, same: builtin.textSummary === textSummary,
      h: [humanizeValue(1500, data.metrics.ttft), humanizeValue(0.85, data.metrics.checks), humanizeValue(2, data.metrics.ttft, 's')] },
    'bytes.bin': new Uint8Array([104, 105]).buffer,
    skipped: undefined,
  };
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	outs, ok, err := vu.HandleSummary(context.Background(), summaryFixture())
	if err != nil || !ok {
		t.Fatalf("got %v, %v", ok, err)
	}
	got := map[string]string{}
	var keys []string
	for _, o := range outs {
		got[o.Key] = string(o.Content)
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, " ") != "stdout out/junit.xml raw.json bytes.bin" {
		t.Errorf("got outputs %q", keys)
	}
	if !strings.HasPrefix(got["stdout"], ">    ✓ status 200\n") || !strings.Contains(got["stdout"], ">✗   {class:chat}") {
		t.Errorf("stdout:\n%s", got["stdout"])
	}
	if !strings.Contains(got["out/junit.xml"], `failures="1"`) {
		t.Errorf("junit:\n%s", got["out/junit.xml"])
	}
	if got["raw.json"] != `{"n":2000,"same":true,"h":["1.50s","85.00%","0.00s"]}` || got["bytes.bin"] != "hi" {
		t.Errorf("got raw.json %q and bytes.bin %q", got["raw.json"], got["bytes.bin"])
	}
}

func TestHandleSummaryErrors(t *testing.T) {
	tests := []struct {
		name, script string
		want         []string
	}{
		{"throws", "export default function () {}\nexport function handleSummary(data) {\n  return { stdout: data.metrics.nope.values };\n}\n",
			[]string{"script.js:3:", "handleSummary: TypeError"}},
		{"returns a string", "export default function () {}\nexport function handleSummary() { return 'text'; }\n",
			[]string{"must return an object of outputs", "not a string"}},
		{"async, rejects", "export default function () {}\nexport async function handleSummary() {\n  await null;\n  throw new Error('late');\n}\n",
			[]string{"script.js:4:", "handleSummary: Error: late"}},
		{"textSummary without data", "import { textSummary } from 'k6/x/summary';\nexport default function () {}\nexport function handleSummary() {\n  return { stdout: textSummary() };\n}\n",
			[]string{"script.js:4:", "textSummary: the first argument must be handleSummary's data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": tt.script}))
			if err != nil {
				t.Fatal(err)
			}
			_, ok, err := vu.HandleSummary(context.Background(), summaryFixture())
			if _, isSE := errors.AsType[*ScriptError](err); !ok || !isSE {
				t.Fatalf("got %v, %v (%T), want a *ScriptError", ok, err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
	vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": "export default function () {}\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := vu.HandleSummary(context.Background(), summaryFixture()); ok || err != nil {
		t.Errorf("without handleSummary: got %v, %v, want false, nil", ok, err)
	}
}
