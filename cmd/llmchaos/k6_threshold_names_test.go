package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestK6SummaryExportNamesThresholdsAsWritten: k6 keys a threshold by the
// script's text, so --summary-export and the JSON output's Metric lines
// carry each expression as written (spaces kept) and a submetric by its
// key with the text between the braces trimmed (quotes kept), as k6's
// registry names it; the failing one is marked true.
func TestK6SummaryExportNamesThresholdsAsWritten(t *testing.T) {
	t.Parallel()
	url, _ := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := filepath.Join(dir, "th.js")
	src := `import http from 'k6/http';
import { check } from 'k6';
import { Trend } from 'k6/metrics';
const t = new Trend('my_trend', true);
export const options = {
  iterations: 3,
  thresholds: {
    'checks{ myTag : "hola" }': ['rate >= 0.5'],
    my_trend: ['p(95) < 2000', { threshold: 'max  <  1', abortOnFail: false }],
    http_req_duration: ['avg<60000'],
  },
};
export default function () {
  http.get(__ENV.URL);
  t.add(10);
  check(1, { ok: () => true }, { myTag: 'hola' });
}
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	export, jsonOut := filepath.Join(dir, "summary.json"), filepath.Join(dir, "out.json")
	var out, errb bytes.Buffer
	code := executeK6(context.Background(), []string{"run", script, "-e", "URL=" + url, "--no-color", "--progress", "0",
		"--summary-export", export, "--out", "json=" + jsonOut}, &out, &errb)
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d (max < 1 fails):\n%s%s", code, exitcode.Thresholds, out.String(), errb.String())
	}
	// The end-of-test summary shows them as written too.
	for _, want := range []string{"✓ my_trend", "p(95) < 2000", "✗ my_trend", "max  <  1", "rate >= 0.5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
	var sum struct {
		Metrics map[string]struct {
			Thresholds map[string]bool `json:"thresholds"`
		} `json:"metrics"`
	}
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]bool{
		`checks{myTag : "hola"}`: {"rate >= 0.5": false},
		"my_trend":               {"p(95) < 2000": false, "max  <  1": true},
		"http_req_duration":      {"avg<60000": false},
	} {
		if got := sum.Metrics[name].Thresholds; !reflect.DeepEqual(got, want) {
			t.Errorf("metrics[%q].thresholds = %v, want %v", name, got, want)
		}
	}
	if _, ok := sum.Metrics["checks{myTag:hola}"]; ok {
		t.Errorf("the export also names the submetric in llmchaos's canonical form: %s", b)
	}

	f, err := os.Open(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type submetric struct {
		Name   string            `json:"name"`
		Suffix string            `json:"suffix"`
		Tags   map[string]string `json:"tags"`
	}
	got := map[string][]string{}
	var subs []submetric
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
			Data struct {
				Name       string      `json:"name"`
				Thresholds []string    `json:"thresholds"`
				Submetrics []submetric `json:"submetrics"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type == "Metric" {
			got[line.Data.Name] = line.Data.Thresholds
			subs = append(subs, line.Data.Submetrics...)
		}
	}
	if want := []string{"p(95) < 2000", "max  <  1"}; !reflect.DeepEqual(got["my_trend"], want) {
		t.Errorf("JSON output: my_trend thresholds %q, want %q", got["my_trend"], want)
	}
	wantSub := []submetric{{Name: `checks{myTag : "hola"}`, Suffix: `myTag : "hola"`, Tags: map[string]string{"myTag": "hola"}}}
	if !reflect.DeepEqual(subs, wantSub) {
		t.Errorf("JSON output: submetrics %+v, want %+v", subs, wantSub)
	}
}
