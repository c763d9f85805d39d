package js

import (
	"context"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestHTTPURLTemplateNamesRequestsAndGroupsRecordTheirDuration: requests
// to http.url`...${id}` URLs go to the URL with the values in it and share
// the template's name tag (params' name still wins); each group() call
// records a group_duration sample tagged with the group's path, as k6's.
func TestHTTPURLTemplateNamesRequestsAndGroupsRecordTheirDuration(t *testing.T) {
	base, _ := startHTTPServer(t)
	r := runIteration(context.Background(), t, `
import http from 'k6/http';
import { group } from 'k6';

export default function () {
  const B = __ENV.BASE;
  group('items', function () {
    for (let id = 1; id <= 3; id++) {
      const u = http.url`+"`${B}/echo?id=${id}`"+`;
      eq(String(u), B + '/echo?id=' + id, 'the URL as a string');
      const r = http.get(u);
      eq(r.json('query.id.0'), String(id), 'the value reached the server');
      eq(r.url, B + '/echo?id=' + id, 'res.url');
    }
    group('inner', function () {
      http.batch([http.url`+"`${B}/echo?id=${9}`"+`]);
      http.get(http.url`+"`${B}/echo?id=${8}`"+`, { tags: { name: 'own' } });
    });
  });
}
`+jsAsserts, map[string]string{"BASE": base})
	r.mustPass(t)
	// The base URL is itself a template value: the name has ${} for it.
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{Class: "${}/echo?id=${}"}); got != 4 {
		t.Errorf("http_reqs{name:${}/echo?id=${}} = %v, want 4 (3 gets and the batch's)", got)
	}
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{Class: "own"}); got != 1 {
		t.Errorf("http_reqs{name:own} = %v, want 1", got)
	}
	for _, g := range []string{"::items", "::items::inner"} {
		f, err := recording.ParseTagFilter(map[string]string{"group": g})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.countOf(MetricGroupDuration, f); got != 1 {
			t.Errorf("group_duration{group:%s}: %d samples, want 1", g, got)
		}
	}
	if s := r.sum.Custom(MetricGroupDuration, recording.TagFilter{}); s == nil || s.Count != 2 || s.Min() <= 0 {
		t.Errorf("group_duration: %+v, want 2 samples above 0 ms", s)
	}
}
