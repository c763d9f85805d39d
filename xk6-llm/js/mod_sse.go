package js

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/sobek"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
)

// sseEventBuffer is how many parsed events the reader goroutine may hold
// ahead of the JavaScript handlers.
const sseEventBuffer = 64

// sseErrorBodyLimit bounds the bytes of a non-2xx answer's body quoted in
// the error handed to 'error' handlers.
const sseErrorBodyLimit = 512

// newSSEModule is `k6/x/sse` and `k6/experimental/sse`: the xk6-sse API,
// sse.open(url, [params], (client) => {...}). The stream is read and
// parsed (WHATWG rules, client.SSEDecoder) in Go on its own goroutine;
// the handlers run on the VU's goroutine, one event at a time, until the
// stream ends, the script calls client.close(), or the VU's call ends.
// Importing it registers the HTTP metrics and sse_event.
func newSSEModule(vu *VU) *sobek.Object {
	rt := vu.rt
	for _, table := range [][]runMetric{httpMetrics, sseMetrics} {
		if err := registerMetrics(vu.shared.Metrics, table); err != nil {
			panic(rt.NewGoError(fmt.Errorf("sse: %w", err)))
		}
	}
	o := rt.NewObject()
	set(o, "open", vu.sseOpen)
	return o
}

// sseStream is one sse.open call's client: the handlers the script set
// and whether it asked to close.
type sseStream struct {
	handlers map[string][]sobek.Callable
	closed   bool
}

// sseItem is what the reader goroutine hands the VU: an event, or the
// error that ended the stream.
type sseItem struct {
	id, name, data, comment string
	err                     error
}

// sseOpen is sse.open(url, [params], setup): it calls setup(client) so
// that the script registers its handlers, sends the request, then
// dispatches 'open', each 'event' and any 'error' until the stream ends,
// and returns the response {status, headers, url, error}. A connection or
// read error, or a status outside 2xx, goes to the 'error' handlers (with
// e.error() giving its message) and never throws; an exception in a
// handler closes the stream and fails the iteration.
func (vu *VU) sseOpen(call sobek.FunctionCall) sobek.Value {
	rt := vu.rt
	if vu.inInit {
		panic(rt.NewGoError(errors.New("sse.open in the init context is not supported: open streams in default(), setup() or teardown()")))
	}
	params, setupV := call.Argument(1), call.Argument(2)
	if len(call.Arguments) < 3 {
		params, setupV = sobek.Undefined(), call.Argument(1)
	}
	setup, ok := sobek.AssertFunction(setupV)
	if !ok {
		panic(rt.NewTypeError("sse.open: the last argument must be a function (client) => { client.on(...) }"))
	}
	spec, err := vu.sseSpec(call.Argument(0), params)
	if err != nil {
		panic(rt.NewTypeError("sse.open: %v", err))
	}

	st := &sseStream{handlers: map[string][]sobek.Callable{}}
	cl := rt.NewObject()
	set(cl, "on", func(name string, fn sobek.Value) {
		if f, ok := sobek.AssertFunction(fn); ok {
			st.handlers[name] = append(st.handlers[name], f)
		}
	})
	set(cl, "close", func() { st.closed = true })
	if _, err := setup(sobek.Undefined(), cl); err != nil {
		panic(err)
	}

	resp := rt.NewObject()
	set(resp, "url", spec.url)
	set(resp, "status", 0)
	set(resp, "headers", rt.NewObject())
	set(resp, "error", "")
	if spec.badURL != nil {
		set(resp, "error", spec.badURL.Error())
		vu.sseDispatch(st, "error", sseError(rt, spec.badURL.Error()))
		return resp
	}

	x := vu.httpClient().send(vu.context(), spec)
	defer x.end()
	status, failMsg := 0, ""
	if x.resp != nil {
		defer x.resp.Body.Close()
		status = x.resp.StatusCode
		set(resp, "status", status)
		set(resp, "url", x.resp.Request.URL.String())
		set(resp, "headers", headerObject(rt, x.resp.Header))
	}
	// A handler that throws ends the stream: record the request as it
	// stood, then let the exception fail the iteration.
	finished := false
	defer func() {
		if !finished && !x.interrupted() {
			sent, received := x.trace.stamps().wire.since()
			vu.shared.recordHTTP(spec, status, false, x.trace.timings(time.Now()), sent, received)
		}
	}()
	var streamErr error
	switch {
	case x.err != nil:
		streamErr = x.err
	case status < 200 || status > 299:
		failMsg = httpStatusError(x.resp)
	default:
		streamErr = vu.sseRead(st, x)
	}
	end := time.Now()
	finished = true
	msg, _ := x.failure(streamErr)
	if x.interrupted() {
		vu.stopIfCut()
		return resp
	}
	sent, received := x.trace.stamps().wire.since()
	vu.shared.recordHTTP(spec, status, msg != "", x.trace.timings(end), sent, received)
	set(resp, "error", msg)
	switch {
	case msg != "":
		vu.sseDispatch(st, "error", sseError(rt, msg))
	case failMsg != "":
		vu.sseDispatch(st, "error", sseError(rt, failMsg))
	}
	return resp
}

// sseSpec reads sse.open's URL and params {method, headers, body, tags,
// timeout}. A stream has no timeout unless params set one.
func (vu *VU) sseSpec(urlV, params sobek.Value) (*httpSpec, error) {
	if !present(urlV) {
		return nil, errors.New("the URL is missing")
	}
	spec := &httpSpec{
		method: http.MethodGet, url: urlV.String(), header: http.Header{}, redirects: vu.shared.httpO.maxRedirects,
		expected: defaultExpected,
	}
	spec.header.Set("Accept", "text/event-stream")
	spec.header.Set("User-Agent", vu.shared.httpO.userAgent)
	if err := readParams(spec, params, false); err != nil {
		return nil, err
	}
	if p, ok := params.(*sobek.Object); ok && present(params) {
		if m := p.Get("method"); present(m) {
			spec.method = strings.ToUpper(strings.TrimSpace(m.String()))
		}
		if b := p.Get("body"); present(b) {
			spec.body = []byte(b.String())
		}
	}
	spec.checkURL()
	spec.tags = vu.withTags(spec.tags) // the VU's (scenario) tags under the stream's
	spec.defaultName()
	spec.debugFields = vu.httpDebugFields(spec)
	return spec, nil
}

// sseRead dispatches 'open' and then the stream's events until it ends,
// the script closes it, or the VU's call ends. It returns the error that
// ended the stream (nil for its end, a close or an interruption). The
// reader goroutine is done when it returns, also when a handler throws.
func (vu *VU) sseRead(st *sseStream, x *exchange) error {
	rt := vu.rt
	items := make(chan sseItem, sseEventBuffer)
	done := make(chan struct{})
	go readSSE(x.resp.Body, items, done)
	defer func() {
		x.cancel(errSSEClosed)
		close(done)
		for range items { // wait for the reader to stop
		}
	}()
	vu.sseDispatch(st, "open")
	ctx := vu.context()
	for !st.closed {
		select {
		case it, ok := <-items:
			if !ok {
				return nil
			}
			if it.err != nil {
				return it.err
			}
			_ = vu.addSample(MetricSSEEvent, x.spec.tags, 1)
			ev := rt.NewObject()
			set(ev, "id", it.id)
			set(ev, "name", it.name)
			set(ev, "data", it.data)
			set(ev, "comment", it.comment)
			vu.sseDispatch(st, "event", ev)
		case <-ctx.Done():
			vu.stopIfCut()
			return nil
		}
	}
	return nil
}

// readSSE parses body's events and sends them on items, then the error
// that ended it (none for a clean end), and closes items. It stops early
// when done is closed.
func readSSE(body io.Reader, items chan<- sseItem, done <-chan struct{}) {
	defer close(items)
	dec := client.NewSSEDecoder(body, 0)
	for {
		ev, err := dec.Next()
		it := sseItem{err: err}
		if err == nil {
			it = sseItem{id: string(ev.ID), name: string(ev.Type), data: string(ev.Data), comment: string(ev.Comment)}
		} else if errors.Is(err, io.EOF) {
			return
		}
		select {
		case items <- it:
		case <-done:
			return
		}
		if err != nil {
			return
		}
	}
}

// sseDispatch calls the handlers of name with args; an exception
// propagates (the deferred clean-up of the stream still runs).
func (vu *VU) sseDispatch(st *sseStream, name string, args ...sobek.Value) {
	for _, h := range st.handlers[name] {
		if _, err := h(sobek.Undefined(), args...); err != nil {
			panic(err)
		}
	}
}

// sseError is the value 'error' handlers get: as in xk6-sse, e.error()
// returns the message; it also has message and toString().
func sseError(rt *sobek.Runtime, msg string) *sobek.Object {
	o := rt.NewObject()
	set(o, "message", msg)
	set(o, "error", func() string { return msg })
	set(o, "toString", func() string { return msg })
	return o
}

// httpStatusError describes a non-2xx answer to an SSE request with the
// start of its body (an engine's JSON error, usually).
func httpStatusError(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, sseErrorBodyLimit))
	msg := "unexpected HTTP status " + resp.Status
	if s := strings.TrimSpace(string(b)); s != "" {
		msg += ": " + s
	}
	return msg
}
