package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// connEngine is an in-test OpenAI-compatible engine that streams a short
// chat answer and serves a page, noting the client address (one per
// connection) of each chat and page request.
type connEngine struct {
	url   string
	mu    sync.Mutex
	reqs  int
	conns map[string]bool
}

func startConnEngine(t *testing.T) *connEngine {
	t.Helper()
	e := &connEngine{conns: map[string]bool{}}
	note := func(r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.reqs++
		e.conns[r.RemoteAddr] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		note(r)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`,
			`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
			`[DONE]`,
		} {
			_, _ = io.WriteString(w, "data: "+ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		note(r)
		_, _ = io.WriteString(w, "page")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// counts returns the requests and the connections they came on.
func (e *connEngine) counts() (reqs, conns int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reqs, len(e.conns)
}

// TestK6NoConnectionReuseCoversLLMRequests: `k6 run --no-connection-reuse`
// (or K6_NO_CONNECTION_REUSE) sends every request on a new connection,
// the k6/x/llm client's streamed chats as well as k6/http's, as k6's
// noConnectionReuse does for all of a script's HTTP; without it both keep
// their connections.
func TestK6NoConnectionReuseCoversLLMRequests(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "chat.js")
	src := `import llm from 'k6/x/llm';
import http from 'k6/http';
import { check } from 'k6';
const client = new llm.Client({ baseURL: __ENV.URL + '/v1', model: 'm' });
export const options = { iterations: 4, thresholds: { checks: ['rate==1'] } };
export default function () {
  const r = client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  const page = http.get(__ENV.URL + '/page');
  check(r, { 'chat ok': (x) => x.ok && x.text === 'hi', 'page ok': () => page.status === 200 });
}
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		env   map[string]string
		fresh bool
	}{
		{"flag", []string{"--no-connection-reuse"}, nil, true},
		{"K6_NO_CONNECTION_REUSE", nil, map[string]string{"K6_NO_CONNECTION_REUSE": "true"}, true},
		{"reuse", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			e := startConnEngine(t)
			var out, errb bytes.Buffer
			args := append([]string{"run", script, "-e", "URL=" + e.url, "--quiet", "--no-preflight"}, tc.flags...)
			if code := executeK6(context.Background(), args, &out, &errb); code != exitcode.OK {
				t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
			}
			reqs, conns := e.counts()
			if reqs != 8 {
				t.Fatalf("%d requests, want 8 (4 chats, 4 pages)", reqs)
			}
			switch {
			case tc.fresh && conns != 8:
				t.Errorf("8 requests on %d connections, want one each", conns)
			case !tc.fresh && conns > 2:
				t.Errorf("8 sequential requests on %d connections, want the LLM client's and k6/http's kept (at most 2)", conns)
			}
		})
	}
}
