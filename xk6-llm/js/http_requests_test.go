package js

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// startHTTPServer serves the endpoints the k6/http tests call:
//
//	/echo            the request as JSON {method, headers, body, query}
//	/status/N        status N with a JSON error body
//	/redirect/N      N redirects, then /echo
//	/bytes           bytes 0..255
//	/slow            no answer until the client goes away
//	/barrier/N       no answer until N requests wait at the barrier
//
// It returns its URL and a channel that gets a value each time a request
// to /slow arrives.
func startHTTPServer(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	slow := make(chan struct{}, 16)
	release := make(chan struct{})
	var barrierMu sync.Mutex
	waiting := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "headers": r.Header, "body": string(b), "query": r.URL.Query(),
		})
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"status %d","code":%d}}`, code, code)
	})
	mux.HandleFunc("/redirect/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n <= 1 {
			http.Redirect(w, r, "/echo", http.StatusFound)
			return
		}
		http.Redirect(w, r, "/redirect/"+strconv.Itoa(n-1), http.StatusFound)
	})
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case slow <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})
	mux.HandleFunc("/barrier/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		barrierMu.Lock()
		waiting++
		if waiting == n {
			close(release)
		}
		barrierMu.Unlock()
		select {
		case <-release:
			fmt.Fprint(w, "released")
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, slow
}

func TestHTTPRequestsAndResponses(t *testing.T) {
	base, _ := startHTTPServer(t)
	r := runIteration(context.Background(), t, `
import http from 'k6/http';
import { get, post, batch } from 'k6/http';

export default function () {
  const B = __ENV.BASE;
  let r = get(B + '/echo?x=1', { headers: { 'X-Test': 'a' }, tags: { name: 'echo' } });
  eq(r.status, 200, 'get status');
  eq(r.status_text, '200 OK', 'status_text');
  eq(r.proto, 'HTTP/1.1', 'proto');
  eq(r.error, '', 'error');
  eq(r.error_code, 0, 'error_code');
  eq(r.url, B + '/echo?x=1', 'url');
  eq(r.json('method'), 'GET', 'json selector');
  eq(r.json('headers.X-Test.0'), 'a', 'request header sent');
  eq(r.json('headers.User-Agent.0'), 'llmchaos', 'default user agent');
  eq(r.json('query.x.#'), 1, 'array length selector');
  eq(r.json('no.such.path'), undefined, 'missing path');
  eq(r.json().query.x[0], '1', 'whole json');
  eq(r.headers['Content-Type'], 'application/json', 'response header');
  eq(r.headers['X-Multi'], 'a, b', 'repeated header joined');
  eq(r.request.method, 'GET', 'request.method');
  eq(r.request.headers['X-Test'][0], 'a', 'request.headers');
  eq(r.remote_ip, '127.0.0.1', 'remote_ip');
  const t = r.timings;
  eq(t.duration > 0, true, 'duration > 0');
  eq(Math.abs(t.duration - (t.sending + t.waiting + t.receiving)) < 1e-6, true, 'duration = sending+waiting+receiving');
  for (const k of ['blocked', 'connecting', 'tls_handshaking', 'sending', 'waiting', 'receiving']) {
    eq(typeof t[k], 'number', 'timings.' + k);
  }

  r = post(B + '/echo', JSON.stringify({ a: 1 }), { headers: { 'Content-Type': 'application/json' }, tags: { name: 'echo' } });
  eq(r.json('method'), 'POST', 'post method');
  eq(r.json('body'), '{"a":1}', 'string body');
  eq(r.request.body, '{"a":1}', 'request.body');
  r = http.put(B + '/echo', { b: 'x y', a: 2 }, { tags: { name: 'echo' } });
  eq(r.json('method'), 'PUT', 'put');
  eq(r.json('body'), 'a=2&b=x+y', 'object body form-encoded');
  eq(r.json('headers.Content-Type.0'), 'application/x-www-form-urlencoded', 'form content type');
  const buf = new Uint8Array([104, 105]).buffer;
  r = http.patch(B + '/echo', buf, { tags: { name: 'echo' } });
  eq(r.json('body'), 'hi', 'ArrayBuffer body');
  eq(http.del(B + '/echo', null, { tags: { name: 'echo' } }).json('method'), 'DELETE', 'del');
  eq(http.options(B + '/echo', null, { tags: { name: 'echo' } }).json('method'), 'OPTIONS', 'options');
  r = http.head(B + '/echo', { tags: { name: 'echo' } });
  eq(r.status, 200, 'head');
  eq(r.body, '', 'head has no body');
  eq(http.request('post', B + '/echo', 'raw', { tags: { name: 'echo' } }).json('body'), 'raw', 'request()');

  r = get(B + '/bytes', { responseType: 'binary' });
  eq(r.body instanceof ArrayBuffer, true, 'binary body is an ArrayBuffer');
  eq(r.body.byteLength, 256, 'binary length');
  eq(new Uint8Array(r.body)[255], 255, 'binary content');
  eq(get(B + '/bytes', { responseType: 'none' }).body, null, 'responseType none');

  r = get(B + '/redirect/3');
  eq(r.status, 200, 'redirects followed');
  eq(r.url, B + '/echo', 'final url');
  r = get(B + '/redirect/3', { redirects: 1 });
  eq(r.status, 302, 'redirect limit returns the last redirect');

  const rs = batch([B + '/echo', ['POST', B + '/echo', 'b1'], { method: 'PUT', url: B + '/echo', body: 'b2' }]);
  eq(rs.length, 3, 'batch array length');
  eq(rs[0].json('method'), 'GET', 'batch string form');
  eq(rs[1].json('body'), 'b1', 'batch array form');
  eq(rs[2].json('method'), 'PUT', 'batch object form');
  const named = batch({ one: B + '/echo', two: { method: 'POST', url: B + '/echo', body: 'x' } });
  eq(named.two.json('body'), 'x', 'batch named form');
}
`+jsAsserts, map[string]string{"BASE": base})
	r.mustPass(t)
	// 12 single requests (8 named echo) and 5 in batches.
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{}); got != 17 {
		t.Errorf("http_reqs: got %v, want 17", got)
	}
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{Class: "echo"}); got != 8 {
		t.Errorf("http_reqs{name:echo}: got %v, want 8", got)
	}
	if got := r.countOf(MetricHTTPReqs, recording.TagFilter{Endpoint: base}); got != 17 {
		t.Errorf("http_reqs{endpoint:%s}: got %v samples, want 17", base, got)
	}
	for _, m := range []string{MetricHTTPReqDuration, MetricHTTPReqBlocked, MetricHTTPReqConnecting, MetricHTTPReqTLSHandshaking,
		MetricHTTPReqSending, MetricHTTPReqWaiting, MetricHTTPReqReceiving, MetricHTTPReqFailed} {
		if got := r.countOf(m, recording.TagFilter{}); got != 17 {
			t.Errorf("%s: got %d samples, want 17", m, got)
		}
	}
	// The 302 of the redirect limit is expected (200-399): nothing failed.
	if s := r.sum.Custom(MetricHTTPReqFailed, recording.TagFilter{}); s.Rate() != 0 {
		t.Errorf("http_req_failed: got rate %v, want 0", s.Rate())
	}
	if d := r.sum.Custom(MetricHTTPReqDuration, recording.TagFilter{}); d.Min() <= 0 {
		t.Errorf("http_req_duration: got min %v ms, want > 0", d.Min())
	}
}

func TestHTTPErrorsGiveAResponseAndNeverThrow(t *testing.T) {
	base, _ := startHTTPServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	r := runIteration(context.Background(), t, `
import http from 'k6/http';

export default function () {
  let r = http.get(__ENV.REFUSED + '/x');
  eq(r.status, 0, 'refused status');
  eq(r.error_code, 1212, 'refused error_code');
  eq(r.error.includes('connection refused'), true, 'refused error: ' + r.error);
  eq(r.body, null, 'no body');

  r = http.get(__ENV.BASE + '/slow', { timeout: '200ms' });
  eq(r.status, 0, 'timeout status');
  eq(r.error, 'request timeout', 'timeout error');
  eq(r.error_code, 1050, 'timeout error_code');
  r = http.get(__ENV.BASE + '/slow', { timeout: 150 });
  eq(r.error_code, 1050, 'timeout in ms');

  r = http.get('not a url');
  eq(r.status, 0, 'invalid url status');
  eq(r.error_code, 1020, 'invalid url error_code');

  r = http.post(__ENV.BASE + '/status/500', '{}');
  eq(r.status, 500, '500 status');
  eq(r.error, '', 'an HTTP status is no transport error');
  eq(r.error_code, 1500, '500 error_code');
  eq(r.json('error.message'), 'status 500', 'error body');
  r = http.get(__ENV.BASE + '/status/429');
  eq(r.error_code, 1429, '429 error_code');
}
`+jsAsserts, map[string]string{"BASE": base, "REFUSED": refused})
	r.mustPass(t)
	// The invalid URL sent nothing; the other five are recorded and all
	// failed (an error, or a status of 400 and more).
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{}); got != 5 {
		t.Errorf("http_reqs: got %v, want 5", got)
	}
	if s := r.sum.Custom(MetricHTTPReqFailed, recording.TagFilter{}); s.Count != 5 || s.Rate() != 1 {
		t.Errorf("http_req_failed: got %d samples at rate %v, want 5 at 1", s.Count, s.Rate())
	}
}

func TestHTTPResponseCallbackDecidesFailed(t *testing.T) {
	base, _ := startHTTPServer(t)
	r := runIteration(context.Background(), t, `
import http from 'k6/http';

export default function () {
  const B = __ENV.BASE;
  http.setResponseCallback(http.expectedStatuses(200, { min: 400, max: 404 }));
  http.get(B + '/status/404', { tags: { name: 'a' } });   // expected
  http.get(B + '/status/503', { tags: { name: 'a' } });   // failed
  http.get(B + '/status/201', { tags: { name: 'a' } });   // failed: only 200 and 400-404
  http.get(B + '/status/503', { tags: { name: 'b' }, responseCallback: http.expectedStatuses(503) }); // expected
  http.get(B + '/status/500', { tags: { name: 'c' }, responseCallback: null });                        // not counted
  http.setResponseCallback(null);
  http.get(B + '/status/500', { tags: { name: 'd' } });  // not counted
}
`+jsAsserts, map[string]string{"BASE": base})
	r.mustPass(t)
	for _, c := range []struct {
		class      string
		count      int64
		passes     int64 // failed samples (a rate counts its 1s as passes)
		wantReqsOf float64
	}{{"a", 3, 2, 3}, {"b", 1, 0, 1}, {"c", 0, 0, 1}, {"d", 0, 0, 1}} {
		f := recording.TagFilter{Class: c.class}
		var count, passes int64
		if s := r.sum.Custom(MetricHTTPReqFailed, f); s != nil {
			count, passes = s.Count, s.Passes
		}
		if count != c.count || passes != c.passes {
			t.Errorf("http_req_failed{name:%s}: got %d samples, %d failed; want %d, %d", c.class, count, passes, c.count, c.passes)
		}
		if got := r.sumOf(MetricHTTPReqs, f); got != c.wantReqsOf {
			t.Errorf("http_reqs{name:%s}: got %v, want %v", c.class, got, c.wantReqsOf)
		}
	}
}

func TestHTTPBatchSendsConcurrently(t *testing.T) {
	base, _ := startHTTPServer(t)
	// Five requests wait at a barrier that opens when all five arrived:
	// sent one after the other, the first would wait until its timeout.
	r := runIteration(context.Background(), t, `
import http from 'k6/http';

export default function () {
  const u = __ENV.BASE + '/barrier/5';
  const p = { timeout: '20s' };
  const rs = http.batch([['GET', u, null, p], ['GET', u, null, p], ['GET', u, null, p], ['GET', u, null, p], ['GET', u, null, p]]);
  for (const r of rs) {
    eq(r.status, 200, 'status');
    eq(r.body, 'released', 'body');
  }
}
`+jsAsserts, map[string]string{"BASE": base})
	r.mustPass(t)
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{}); got != 5 {
		t.Errorf("http_reqs: got %v, want 5", got)
	}
}

func TestHTTPRetriesOnceWhenTheServerClosedAReusedConnection(t *testing.T) {
	// Like an engine that closes after each answer without saying so: the
	// first request on a connection is answered, the second one read and
	// the connection closed under it.
	e := startRawEngine(t, map[string]func(c *engineConn) bool{
		"/v1/tool": func(c *engineConn) bool {
			if c.n > 0 {
				return false
			}
			body := `{"ok":true}`
			c.write(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
			return true
		},
	})
	r := runIteration(context.Background(), t, `
import http from 'k6/http';

export default function () {
  for (let i = 0; i < 4; i++) {
    const r = http.post(__ENV.URL + '/v1/tool', JSON.stringify({ i: i }));
    eq(r.status, 200, 'status of request ' + i);
    eq(r.json('ok'), true, 'body of request ' + i);
  }
}
`+jsAsserts, map[string]string{"URL": e.URL})
	r.mustPass(t)
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{}); got != 4 {
		t.Errorf("http_reqs: got %v, want 4", got)
	}
	if s := r.sum.Custom(MetricHTTPReqFailed, recording.TagFilter{}); s.Rate() != 0 {
		t.Errorf("http_req_failed: got rate %v, want 0", s.Rate())
	}
	// Requests 1 and 3 went out on a reused connection that the engine
	// closed, and again on a new one: 6 received on 4 connections.
	if reqs, _ := e.requests("/v1/tool"); len(reqs) != 6 || e.accepted.Load() != 4 {
		t.Errorf("the engine got %d requests on %d connections, want 6 on 4", len(reqs), e.accepted.Load())
	}
}

func TestHTTPInterruptedRequestIsNotRecorded(t *testing.T) {
	base, slow := startHTTPServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-slow:
			cancel()
		case <-ctx.Done():
		}
	}()
	r := runIteration(ctx, t, `
import http from 'k6/http';
export default function () {
  http.get(__ENV.BASE + '/slow', { timeout: '60s' });
  throw new Error('not reached');
}
`, map[string]string{"BASE": base})
	if !r.it.Interrupted {
		t.Fatalf("got iteration %+v, want it interrupted", r.it)
	}
	if got := r.countOf(MetricHTTPReqs, recording.TagFilter{}); got != 0 {
		t.Errorf("http_reqs: got %d samples, want none for a request the run cut", got)
	}
}

func TestHTTPInInitContextThrows(t *testing.T) {
	vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": `
import http from 'k6/http';
http.get('http://127.0.0.1:1/');
export default function () {}
`}))
	if err == nil || !strings.Contains(err.Error(), "init context") {
		t.Fatalf("got vu %v, error %v; want an init context error", vu, err)
	}
}

func TestHTTPMetricsRegisteredOnlyWhenImported(t *testing.T) {
	_, sh, err := loadVU(t, writeScripts(t, map[string]string{"script.js": "export default function () {}\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sh.Metrics.Lookup(MetricHTTPReqs); ok {
		t.Errorf("%s registered by a script that imports no HTTP module", MetricHTTPReqs)
	}
	for _, mod := range []string{"k6/http", "k6/x/sse", "k6/experimental/sse"} {
		_, sh, err := loadVU(t, writeScripts(t, map[string]string{"script.js": "import m from '" + mod + "';\nexport default function () {}\n"}))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range httpMetrics {
			if _, ok := sh.Metrics.Lookup(m.name); !ok {
				t.Errorf("import %s: %s not registered", mod, m.name)
			}
		}
		_, sse := sh.Metrics.Lookup(MetricSSEEvent)
		if want := mod != "k6/http"; sse != want {
			t.Errorf("import %s: %s registered %v, want %v", mod, MetricSSEEvent, sse, want)
		}
	}
}
