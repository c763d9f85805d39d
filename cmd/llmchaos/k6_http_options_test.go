package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestK6RunActsOnHTTPOptions: k6 run reads the script's userAgent,
// hosts and discardResponseBodies (no warning that they are ignored): the
// server gets the script's User-Agent on a name the hosts map sends to
// it, and bodies are null unless a request asks for one. A bad hosts
// entry is an options error naming it.
func TestK6RunActsOnHTTPOptions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Header.Get("User-Agent") + "@" + r.Host))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	dir := t.TempDir()
	script := filepath.Join(dir, "opts.js")
	src := `import http from 'k6/http';
import { check } from 'k6';
export const options = {
  iterations: 1,
  userAgent: 'suite/3',
  hosts: { 'api.example.test': '127.0.0.1:` + port + `' },
  discardResponseBodies: true,
  thresholds: { checks: ['rate==1'] },
};
export default function () {
  const plain = http.get('http://api.example.test/');
  const text = http.get('http://api.example.test/', { responseType: 'text' });
  check(null, {
    'discarded': () => plain.status === 200 && plain.body === null,
    'sent as the script says': () => text.body === 'suite/3@api.example.test',
    'shown as sent': () => text.request.headers['User-Agent'][0] === 'suite/3',
  });
}
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := executeK6(context.Background(), []string{"run", script, "--no-color", "--progress", "0"}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0 (every check passes):\n%s%s", code, out.String(), errb.String())
	}
	if strings.Contains(errb.String(), "is a k6 option llmchaos does not support") {
		t.Errorf("an option acted on is still warned of:\n%s", errb.String())
	}

	bad := strings.Replace(src, `'127.0.0.1:`+port+`'`, `'nowhere'`, 1)
	if err := os.WriteFile(script, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	code = executeK6(context.Background(), []string{"run", script, "--no-color", "--progress", "0"}, &out, &errb)
	if code == exitcode.OK || !strings.Contains(errb.String(), `hosts["api.example.test"] "nowhere": want an IP address`) {
		t.Errorf("a hosts entry that is no IP: exit %d, stderr:\n%s", code, errb.String())
	}
}

// TestK6RunHTTPOptionFlags: k6's --user-agent, --batch, --batch-per-host
// and --discard-response-bodies (and their K6_* variables) replace the
// script's options: the server gets the flag's User-Agent (none for ""),
// bodies are null, exec.test.options shows the batch limits; --batch 0 is
// exit 2 naming the flag.
func TestK6RunHTTPOptionFlags(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua, ok := r.Header["User-Agent"]
		_, _ = w.Write([]byte(strings.Join(ua, ",") + "|" + map[bool]string{true: "sent", false: "none"}[ok]))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	script := filepath.Join(dir, "flags.js")
	src := `import http from 'k6/http';
import exec from 'k6/execution';
export const options = { iterations: 1, userAgent: 'script/1', batch: 3, batchPerHost: 2 };
export default function () {
  const plain = http.get(__ENV.URL);
  const text = http.get(__ENV.URL, { responseType: 'text' });
  const o = exec.test.options;
  console.log('got=' + text.body + ' plain=' + (plain.body === null ? 'null' : 'body') +
    ' batch=' + o.batch + ' perHost=' + o.batchPerHost);
}
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, env map[string]string, flags ...string) (int, string) {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var out, errb bytes.Buffer
		args := append([]string{"run", script, "-e", "URL=" + srv.URL, "--log-format=raw", "--no-summary", "--quiet"}, flags...)
		code := executeK6(context.Background(), args, &out, &errb)
		return code, errb.String()
	}
	for _, c := range []struct {
		name  string
		env   map[string]string
		flags []string
		want  string
	}{
		{"the script's options", nil, nil, "got=script/1|sent plain=body batch=3 perHost=2"},
		{"flags", nil, []string{"--user-agent", "cli/2", "--discard-response-bodies", "--batch", "7", "--batch-per-host", "0"},
			"got=cli/2|sent plain=null batch=7 perHost=0"},
		{"empty user agent", nil, []string{"--user-agent="}, "got=|none plain=body batch=3 perHost=2"},
		{"K6_* variables", map[string]string{"K6_USER_AGENT": "env/3", "K6_BATCH": "9", "K6_BATCH_PER_HOST": "4",
			"K6_DISCARD_RESPONSE_BODIES": "true"}, nil, "got=env/3|sent plain=null batch=9 perHost=4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := run(t, c.env, c.flags...) // the subtest's t: its variables end with it
			if code != exitcode.OK || !strings.Contains(stderr, c.want+"\n") {
				t.Errorf("exit %d, stderr:\n%s\nwant the line %q", code, stderr, c.want)
			}
		})
	}
	for _, bad := range []struct{ flag, want string }{
		{"--batch=0", "--batch 0: want 1 or more"},
		{"--batch-per-host=-1", `"-1": want a whole number, 0 or more`},
		{"--batch=many", `"many": want a whole number, 0 or more`},
	} {
		code, stderr := run(t, nil, bad.flag)
		if code != exitcode.Usage || !strings.Contains(stderr, bad.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", bad.flag, code, stderr, bad.want)
		}
	}
}
