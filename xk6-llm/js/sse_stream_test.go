package js

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// sseRoutes are the raw engine's SSE endpoints:
//
//	/stream  events merged into one write and split across writes (the
//	         rest is written when the script calls /ack), CRLF, CR and LF
//	         line endings, a last event without its blank line
//	/three   three events, then the connection closes (one per stream)
//	/many    fifty events in one write, then nothing until the client closes
//	/stall   one event, then nothing until the client closes
//	/broken  a chunked stream cut off in the middle, after an error event
//	/429     a JSON error with status 429; /500 the same with 500
//	/ack     200, and the waiting /stream goes on
type sseRoutes struct {
	acks    chan struct{}
	stalled chan struct{} // a /stall or /many stream wrote its events
	closed  chan struct{} // a /stall or /many stream saw the client close
}

func startSSEEngine(t *testing.T) (*rawEngine, *sseRoutes) {
	t.Helper()
	s := &sseRoutes{acks: make(chan struct{}, 8), stalled: make(chan struct{}, 8), closed: make(chan struct{}, 8)}
	wait := func(c *engineConn) bool {
		select {
		case <-s.acks:
			return true
		case <-c.done:
			return false
		}
	}
	jsonError := func(status int, text string) func(c *engineConn) bool {
		return func(c *engineConn) bool {
			body := fmt.Sprintf(`{"error":{"message":"%s","type":"%s","code":%d}}`, text, strings.ReplaceAll(strings.ToLower(text), " ", "_"), status)
			c.write(fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", status, text, len(body), body))
			return true
		}
	}
	e := startRawEngine(t, map[string]func(c *engineConn) bool{
		"/stream": func(c *engineConn) bool {
			c.write(sseHead + "event: delta\nid: 1\ndata: one\n\n" + "data: two-a\ndata: two-b\r\n\r\n" + ": note\ndata: thr")
			if !wait(c) {
				return false
			}
			c.write("ee\n\nretry: 10\r\rdata: four\r")
			if !wait(c) {
				return false
			}
			c.write("\n\r\ndata: never dispatched")
			return false
		},
		"/three": func(c *engineConn) bool {
			c.write(sseHead + "data: 1\n\ndata: 2\n\ndata: 3\n\n")
			return false
		},
		"/many": func(c *engineConn) bool {
			var b strings.Builder
			b.WriteString(sseHead)
			for i := range 50 {
				fmt.Fprintf(&b, "data: %d\n\n", i)
			}
			c.write(b.String())
			s.stalled <- struct{}{}
			c.waitClosed()
			s.closed <- struct{}{}
			return false
		},
		"/stall": func(c *engineConn) bool {
			c.write(sseHead + "data: a\n\n")
			s.stalled <- struct{}{}
			c.waitClosed()
			s.closed <- struct{}{}
			return false
		},
		"/broken": func(c *engineConn) bool {
			chunk := "data: a\n\ndata: {\"error\":{\"message\":\"engine died\"}}\n\n"
			c.write(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(chunk), chunk))
			c.write("40\r\ndata: cut") // a 64-byte chunk that never ends
			return false
		},
		"/429": jsonError(429, "Too Many Requests"),
		"/500": jsonError(500, "Internal Server Error"),
		"/ack": func(c *engineConn) bool {
			s.acks <- struct{}{}
			c.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			return true
		},
	})
	return e, s
}

// waitFor fails the test unless ch delivers within a generous bound.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen within 10 s", what)
	}
}

func TestSSEParsesEventsMergedAndSplitAcrossWrites(t *testing.T) {
	e, _ := startSSEEngine(t)
	r := runIteration(context.Background(), t, `
import sse from 'k6/x/sse';
import http from 'k6/http';

export default function () {
  const events = [];
  let opened = 0;
  const params = {
    method: 'POST',
    body: '{"stream":true}',
    headers: { 'Content-Type': 'application/json', 'Authorization': 'Bearer k' },
    tags: { name: 'stream' },
  };
  const r = sse.open(__ENV.URL + '/stream', params, function (client) {
    client.on('open', () => { opened++; });
    client.on('event', (e) => {
      events.push([e.id, e.name, e.data, e.comment]);
      if (e.data === 'two-a\ntwo-b' || e.data === 'three') {
        http.get(__ENV.URL + '/ack', { tags: { name: 'ack' } });
      }
    });
    client.on('error', (e) => { throw new Error('unexpected error: ' + e.error()); });
  });
  eq(r.status, 200, 'status');
  eq(r.error, '', 'error');
  eq(r.url, __ENV.URL + '/stream', 'url');
  eq(r.headers['Content-Type'], 'text/event-stream', 'headers');
  eq(opened, 1, 'open events');
  eq(JSON.stringify(events), JSON.stringify([
    ['1', 'delta', 'one', ''],
    ['1', '', 'two-a\ntwo-b', ''],
    ['1', '', 'three', 'note'],
    ['1', '', 'four', ''],
  ]), 'events');
}
`+jsAsserts, map[string]string{"URL": e.URL})
	r.mustPass(t)
	if got := r.sumOf(MetricSSEEvent, recording.TagFilter{Class: "stream"}); got != 4 {
		t.Errorf("sse_event: got %v, want 4", got)
	}
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{Class: "stream"}); got != 1 {
		t.Errorf("http_reqs{name:stream}: got %v, want 1", got)
	}
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{Class: "ack"}); got != 2 {
		t.Errorf("http_reqs{name:ack}: got %v, want 2", got)
	}
	if s := r.sum.Custom(MetricHTTPReqFailed, recording.TagFilter{Class: "stream"}); s == nil || s.Count != 1 || s.Rate() != 0 {
		t.Errorf("http_req_failed{name:stream}: got %+v, want one sample at rate 0", s)
	}
	reqs, bodies := e.requests("/stream")
	if len(reqs) != 1 {
		t.Fatalf("the engine got %d stream requests, want 1", len(reqs))
	}
	q := reqs[0]
	if q.Method != "POST" || bodies[0] != `{"stream":true}` || q.Header.Get("Accept") != "text/event-stream" ||
		q.Header.Get("Authorization") != "Bearer k" || q.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got request %s %q with headers %v, want POST of the body with the params' headers and Accept: text/event-stream", q.Method, bodies[0], q.Header)
	}
	// The stream's duration covers the whole stream, its receiving part
	// the time from the first byte to the end.
	d := r.sum.Custom(MetricHTTPReqDuration, recording.TagFilter{Class: "stream"})
	rcv := r.sum.Custom(MetricHTTPReqReceiving, recording.TagFilter{Class: "stream"})
	if d == nil || rcv == nil || d.Max() <= 0 || rcv.Max() > d.Max() {
		t.Errorf("got duration %v and receiving %v, want 0 < receiving <= duration", d, rcv)
	}
}

func TestSSEStreamsFromAnEngineThatClosesAfterEach(t *testing.T) {
	e, _ := startSSEEngine(t)
	r := runIteration(context.Background(), t, `
import { open } from 'k6/x/sse';
import sse from 'k6/experimental/sse';

export default function () {
  let n = 0;
  for (let i = 0; i < 5; i++) {
    const o = i % 2 ? open : sse.open;
    const r = o(__ENV.URL + '/three', function (client) {
      client.on('event', (e) => { n++; eq(e.data, String((n - 1) % 3 + 1), 'data'); });
    });
    eq(r.status, 200, 'status');
  }
  eq(n, 15, 'events');
}
`+jsAsserts, map[string]string{"URL": e.URL})
	r.mustPass(t)
	if got := r.sumOf(MetricSSEEvent, recording.TagFilter{}); got != 15 {
		t.Errorf("sse_event: got %v, want 15", got)
	}
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{}); got != 5 {
		t.Errorf("http_reqs: got %v, want 5", got)
	}
	if s := r.sum.Custom(MetricHTTPReqFailed, recording.TagFilter{}); s.Rate() != 0 {
		t.Errorf("http_req_failed: got rate %v, want 0", s.Rate())
	}
	if got := e.accepted.Load(); got != 5 {
		t.Errorf("the engine accepted %d connections, want 5", got)
	}
}

func TestSSEErrorsGoToTheErrorHandler(t *testing.T) {
	e, _ := startSSEEngine(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	r := runIteration(context.Background(), t, `
import sse from 'k6/x/sse';

function run(url, params) {
  const got = { open: 0, events: [], errors: [] };
  got.res = sse.open(url, params || {}, function (client) {
    client.on('open', () => { got.open++; });
    client.on('event', (e) => { got.events.push(e.data); });
    client.on('error', (e) => { got.errors.push(e.error()); });
  });
  return got;
}

export default function () {
  let g = run(__ENV.URL + '/429', { tags: { name: 'throttled' } });
  eq(g.res.status, 429, '429 status');
  eq(g.open, 0, '429 not opened');
  eq(g.events.length, 0, '429 events');
  eq(g.errors.length, 1, '429 errors');
  eq(g.errors[0].includes('429 Too Many Requests') && g.errors[0].includes('"code":429'), true, '429 error: ' + g.errors[0]);

  g = run(__ENV.URL + '/500', { tags: { name: 'failed' } });
  eq(g.res.status, 500, '500 status');
  eq(g.errors[0].includes('Internal Server Error'), true, '500 error: ' + g.errors[0]);

  g = run(__ENV.URL + '/broken', { tags: { name: 'broken' } });
  eq(g.res.status, 200, 'broken status');
  eq(g.open, 1, 'broken opened');
  eq(JSON.stringify(g.events), JSON.stringify(['a', '{"error":{"message":"engine died"}}']), 'broken events');
  eq(g.errors.length, 1, 'broken errors');
  eq(g.errors[0].includes('unexpected EOF'), true, 'broken error: ' + g.errors[0]);
  eq(g.res.error, g.errors[0], 'broken response error');

  g = run(__ENV.URL + '/stall', { tags: { name: 'stalled' }, timeout: '1s' });
  eq(JSON.stringify(g.events), '["a"]', 'stalled events');
  eq(JSON.stringify(g.errors), '["request timeout"]', 'stalled errors');
  eq(g.res.error, 'request timeout', 'stalled response error');

  g = run(__ENV.REFUSED + '/x', { tags: { name: 'refused' } });
  eq(g.res.status, 0, 'refused status');
  eq(g.open, 0, 'refused not opened');
  eq(g.errors.length === 1 && g.errors[0].includes('connection refused'), true, 'refused error: ' + g.errors);
  eq(g.res.error, g.errors[0], 'refused response error');
}
`+jsAsserts, map[string]string{"URL": e.URL, "REFUSED": refused})
	r.mustPass(t)
	for _, class := range []string{"throttled", "failed", "broken", "stalled", "refused"} {
		f := recording.TagFilter{Class: class}
		if got := r.sumOf(MetricHTTPReqs, f); got != 1 {
			t.Errorf("http_reqs{name:%s}: got %v, want 1", class, got)
		}
		if s := r.sum.Custom(MetricHTTPReqFailed, f); s == nil || s.Count != 1 || s.Rate() != 1 {
			t.Errorf("http_req_failed{name:%s}: got %+v, want one failure", class, s)
		}
	}
	if got := r.sumOf(MetricSSEEvent, recording.TagFilter{}); got != 3 {
		t.Errorf("sse_event: got %v, want 3 (2 broken, 1 stalled)", got)
	}
}

func TestSSEClientCloseEndsTheStream(t *testing.T) {
	e, s := startSSEEngine(t)
	r := runIteration(context.Background(), t, `
import sse from 'k6/x/sse';

export default function () {
  let n = 0;
  const r = sse.open(__ENV.URL + '/many', function (client) {
    client.on('event', () => { if (++n === 3) client.close(); });
    client.on('error', (e) => { throw new Error('unexpected error: ' + e.error()); });
  });
  eq(n, 3, 'events before close');
  eq(r.status, 200, 'status');
  eq(r.error, '', 'a close is no error');
}
`+jsAsserts, map[string]string{"URL": e.URL})
	r.mustPass(t)
	waitFor(t, s.closed, "the engine seeing the stream closed")
	if got := r.sumOf(MetricSSEEvent, recording.TagFilter{}); got != 3 {
		t.Errorf("sse_event: got %v, want 3", got)
	}
	if s := r.sum.Custom(MetricHTTPReqFailed, recording.TagFilter{}); s == nil || s.Count != 1 || s.Rate() != 0 {
		t.Errorf("http_req_failed: got %+v, want one sample at 0", s)
	}
}

func TestSSEHandlerExceptionFailsTheIterationAndClosesTheStream(t *testing.T) {
	e, s := startSSEEngine(t)
	r := runIteration(context.Background(), t, `
import sse from 'k6/x/sse';
export default function () {
  sse.open(__ENV.URL + '/many', function (client) {
    client.on('event', (e) => { throw new Error('boom at ' + e.data); });
  });
}
`, map[string]string{"URL": e.URL})
	if r.it.Err == nil || !strings.Contains(r.it.Err.Error(), "boom at 0") {
		t.Fatalf("got iteration error %v, want the handler's exception", r.it.Err)
	}
	waitFor(t, s.closed, "the engine seeing the stream closed")
	if got := r.sumOf(MetricHTTPReqs, recording.TagFilter{}); got != 1 {
		t.Errorf("http_reqs: got %v, want 1", got)
	}
}

func TestSSEInterruptedByTheEndOfTheCall(t *testing.T) {
	e, s := startSSEEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stalled:
			cancel()
		case <-ctx.Done():
		}
	}()
	r := runIteration(ctx, t, `
import sse from 'k6/x/sse';
export default function () {
  sse.open(__ENV.URL + '/stall', function (client) {});
  throw new Error('not reached');
}
`, map[string]string{"URL": e.URL})
	if !r.it.Interrupted {
		t.Fatalf("got iteration %+v, want it interrupted", r.it)
	}
	waitFor(t, s.closed, "the engine seeing the stream closed")
	if got := r.countOf(MetricHTTPReqs, recording.TagFilter{}); got != 0 {
		t.Errorf("http_reqs: got %d samples, want none for a stream the run cut", got)
	}
}

func TestSSEOpenArguments(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"no callback", "sse.open('http://127.0.0.1:1/', {});", "the last argument must be a function"},
		{"no url", "sse.open(undefined, {}, () => {});", "the URL is missing"},
		{"bad timeout", "sse.open('http://127.0.0.1:1/', { timeout: 'soon' }, () => {});", "params.timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runIteration(context.Background(), t, "import sse from 'k6/x/sse';\nexport default function () {\n  "+tt.body+"\n}\n", nil)
			if r.it.Err == nil || !strings.Contains(r.it.Err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", r.it.Err, tt.want)
			}
		})
	}
}
