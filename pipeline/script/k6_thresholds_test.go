package script

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/report"
)

// TestThresholdsSelectK6Tags: a script's thresholds select samples by any
// tag they carry (k6's system tags, the script's, --tag's in place of
// options.tags) and judge a selection without samples as k6 does.
func TestThresholdsSelectK6Tags(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	script := writeScript(t, `import http from 'k6/http';
import { check, group } from 'k6';
import { Trend, Counter, Rate } from 'k6/metrics';
const emptyTrend = new Trend('Empty_Trend');
const emptyCounter = new Counter('empty_counter');
const emptyRate = new Rate('empty_rate');
export const options = {
  rps: 1000,
  tags: { env: 'dev' },
  scenarios: { browse: { executor: 'shared-iterations', tags: { team: 'web' } } },
  thresholds: {
    'http_req_duration{kind:html}': ['p(95)<60000'],
    'http_req_duration{staticAsset:yes}': ['max<0'],
    'http_reqs{expected_response:true}': ['count==2'],
    'http_reqs{status:404,method:GET}': ['count==1'],
    'http_reqs{name:home}': ['count==1'],
    'checks{myTag:hola}': ['rate==1'],
    'checks{group:::login}': ['rate==0'],
    'checks{check:outside}': ['rate==1'],
    'iterations{scenario:browse,team:web}': ['count==1'],
    'http_reqs{env:ci}': ['count==3'],
    'http_reqs{env:dev}': ['count==0'],
    'http_req_failed{kind:css}': ['rate<0.01'],
    'empty_rate': ['rate>0.99'],
    'Empty_Trend': ['avg<100'],
    'empty_counter': ['count>0'],
  },
};
export default function () {
  http.get(__ENV.URL + '/page', { tags: { kind: 'html', name: 'home' } });
  http.get(__ENV.URL + '/app.js', { tags: { staticAsset: 'yes' } });
  check(1, { outside: () => true }, { myTag: 'hola' });
  group('login', function () {
    const r = http.get(__ENV.URL + '/missing');
    check(r, { 'found': (r) => r.status === 200 });
  });
}
`)
	var out strings.Builder
	doc, err := Run(context.Background(), Config{Script: script, Env: map[string]string{"URL": srv.URL}, Tags: map[string]string{"env": "ci"},
		Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	want := map[string]bool{ // key → held
		"http_req_duration{kind:html}": true, "http_req_duration{staticAsset:yes}": false,
		"http_reqs{expected_response:true}": true, "http_reqs{method:GET,status:404}": true, "http_reqs{class:home}": true,
		"checks{myTag:hola}": true, "checks{group:::login}": true, "checks{check:outside}": true,
		"iterations{scenario:browse,team:web}": true, "http_reqs{env:ci}": true, "http_reqs{env:dev}": true,
		"http_req_failed{kind:css}": true, "empty_rate": true, "Empty_Trend": true, "empty_counter": false,
	}
	got := map[string]bool{}
	for _, th := range doc.Thresholds {
		got[th.Key()] = th.OK
	}
	for k, ok := range want {
		if g, seen := got[k]; !seen || g != ok {
			t.Errorf("%s: got held %v (evaluated %v), want %v", k, g, seen, ok)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got thresholds %v, want %d", got, len(want))
	}
	if w := "llmchaos run: warning: options.rps is a k6 option llmchaos does not support: it is ignored"; !strings.Contains(out.String(), w) {
		t.Errorf("output lacks %q:\n%s", w, out.String())
	}
	if doc.Verdict != report.VerdictFail {
		t.Errorf("verdict %s, want fail (two thresholds do not hold)", doc.Verdict)
	}
}
