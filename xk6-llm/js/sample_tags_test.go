package js

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// extra is a filter on extra tags.
func extra(kv ...string) recording.TagFilter {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return recording.TagFilter{Extra: recording.ExtraTags(m)}
}

func TestSamplesCarryK6Tags(t *testing.T) {
	url, _ := startHTTPServer(t)
	dir := writeScripts(t, map[string]string{"script.js": `import http from 'k6/http';
import exec from 'k6/execution';
import { check, group } from 'k6';
import { Trend } from 'k6/metrics';
const waits = new Trend('Waiting_Time', true);
export default function () {
  http.get(__ENV.URL + '/echo');
  http.get(__ENV.URL + '/echo?id=1', { tags: { name: 'echo-by-id', kind: 'html' } });
  http.post(__ENV.URL + '/status/503', 'x', { tags: { staticAsset: 'yes' } });
  group('login', function () {
    const r = http.get(__ENV.URL + '/status/404');
    check(r, { 'is 404': (r) => r.status === 404 }, { myTag: 'hola' });
    group('form', function () {
      waits.add(12);
    });
  });
  exec.vu.tags.tenant = 'acme';
  check(1, { 'outside': () => false });
  waits.add(5, { step: 'last' });
}
`})
	sh, err := NewShared(SharedOptions{Env: map[string]string{"URL": url}, Console: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	vu, err := NewVU(context.Background(), 1, prog, sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := vu.Activate(&Scenario{Name: "browse", Exec: "default", Tags: map[string]string{"scenario": "browse", "env": "staging"}}); err != nil {
		t.Fatal(err)
	}
	if it := vu.Run(context.Background()); it.Err != nil {
		t.Fatal(it.Err)
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	count := func(name string, f recording.TagFilter) int64 {
		if s := sum.Custom(name, f); s != nil {
			return s.Count
		}
		return 0
	}
	withClass := func(f recording.TagFilter, class string) recording.TagFilter { f.Class = class; return f }
	for _, c := range []struct {
		what   string
		metric string
		f      recording.TagFilter
		want   int64
	}{
		{"every request", MetricHTTPReqs, recording.TagFilter{}, 4},
		{"name defaults to the URL", MetricHTTPReqs, withClass(recording.TagFilter{}, url+"/echo"), 1},
		{"a name given", MetricHTTPReqDuration, withClass(recording.TagFilter{}, "echo-by-id"), 1},
		{"a tag of the request's", MetricHTTPReqDuration, extra("kind", "html"), 1},
		{"staticAsset", MetricHTTPReqDuration, extra("staticAsset", "yes", "method", "POST", "status", "503"), 1},
		{"method", MetricHTTPReqs, extra("method", "GET"), 3},
		{"status", MetricHTTPReqs, extra("status", "200"), 2},
		{"expected_response true", MetricHTTPReqDuration, extra("expected_response", "true"), 2},
		{"expected_response false", MetricHTTPReqFailed, extra("expected_response", "false"), 2},
		{"the scenario's tags", MetricHTTPReqs, extra("env", "staging"), 4},
		{"scenario", MetricHTTPReqs, recording.TagFilter{Scenario: "browse"}, 4},
		{"group on a request", MetricHTTPReqs, extra("group", "::login"), 1},
		{"check", MetricChecks, extra("check", "is 404", "group", "::login", "myTag", "hola"), 1},
		{"a check outside any group", MetricChecks, extra("check", "outside", "tenant", "acme"), 1},
		{"no group tag outside groups", MetricChecks, extra("group", "::login"), 1},
		{"nested group on a custom metric", "Waiting_Time", extra("group", "::login::form"), 1},
		{"a tag set on exec.vu.tags", "Waiting_Time", extra("tenant", "acme", "step", "last", "env", "staging"), 1},
		{"iterations carry the VU's tags", MetricIterations, extra("env", "staging", "tenant", "acme"), 1},
	} {
		if got := count(c.metric, c.f); got != c.want {
			t.Errorf("%s: %s%+v: got %d samples, want %d", c.what, c.metric, c.f, got, c.want)
		}
	}
}
