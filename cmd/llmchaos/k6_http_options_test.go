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
