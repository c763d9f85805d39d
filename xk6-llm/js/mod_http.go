package js

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/sobek"
)

// httpModule is one VU's `k6/http`: k6's request functions, timed in Go
// with net/http/httptrace and recorded as k6's http_req_* metrics. A
// network error gives a response with status 0 and error set; it never
// throws.
type httpModule struct {
	vu *VU
	// callback decides http_req_failed (nil: not recorded), as
	// http.setResponseCallback sets it for this VU.
	callback *expectedStatuses
}

// httpVerbs are k6/http's shorthand functions: the method each sends and
// whether it takes a body argument before params.
var httpVerbs = []struct {
	name, method string
	body         bool
}{
	{"get", http.MethodGet, false},
	{"head", http.MethodHead, false},
	{"post", http.MethodPost, true},
	{"put", http.MethodPut, true},
	{"patch", http.MethodPatch, true},
	{"del", http.MethodDelete, true},
	{"options", http.MethodOptions, true},
}

// newHTTPModule is `k6/http`. Importing it registers the HTTP metrics.
func newHTTPModule(vu *VU) *sobek.Object {
	rt := vu.rt
	if err := registerMetrics(vu.shared.Metrics, httpMetrics); err != nil {
		panic(rt.NewGoError(fmt.Errorf("k6/http: %w", err)))
	}
	m := &httpModule{vu: vu, callback: defaultExpected}
	o := rt.NewObject()
	for _, v := range httpVerbs {
		set(o, v.name, func(call sobek.FunctionCall) sobek.Value {
			body, params := sobek.Undefined(), call.Argument(1)
			if v.body {
				body, params = call.Argument(1), call.Argument(2)
			}
			return m.request(v.method, call.Argument(0), body, params)
		})
	}
	set(o, "request", func(call sobek.FunctionCall) sobek.Value {
		return m.request(strings.ToUpper(call.Argument(0).String()), call.Argument(1), call.Argument(2), call.Argument(3))
	})
	set(o, "batch", m.batch)
	set(o, "asyncRequest", func(call sobek.FunctionCall) sobek.Value {
		return m.asyncRequest(strings.ToUpper(call.Argument(0).String()), call.Argument(1), call.Argument(2), call.Argument(3))
	})
	set(o, "cookieJar", func() *sobek.Object {
		if vu.inInit {
			panic(rt.NewGoError(errors.New("http.cookieJar(): the VU's cookie jar does not exist in the init context")))
		}
		return m.jarObject(rt.NewObject(), vu.vuJar())
	})
	set(o, "CookieJar", func(call sobek.ConstructorCall) *sobek.Object { return m.jarObject(call.This, newJar()) })
	set(o, "url", m.urlTemplate)
	for _, v := range tlsVersions {
		set(o, "TLS_"+strings.ReplaceAll(strings.TrimPrefix(v, "tls"), ".", "_"), v) // http.TLS_1_2 = "tls1.2"
	}
	setOCSPConstants(o)
	set(o, "expectedStatuses", m.expectedStatuses)
	set(o, "setResponseCallback", func(v sobek.Value) {
		cb, err := m.responseCallback(v)
		if err != nil {
			panic(rt.NewTypeError("http.setResponseCallback: %v", err))
		}
		m.callback = cb
	})
	return o
}

// request sends one request and returns its response object.
func (m *httpModule) request(method string, urlV, body, params sobek.Value) sobek.Value {
	m.mustNotInit()
	spec, err := m.spec(method, urlV, body, params)
	if err != nil {
		panic(m.vu.rt.NewTypeError("http.request: %v", err))
	}
	res := m.vu.shared.doHTTP(m.vu.context(), m.vu.httpClient(), spec)
	if m.vu.stopIfCut() {
		return sobek.Undefined()
	}
	if err := res.thrown(spec); err != nil {
		panic(m.vu.rt.NewGoError(err))
	}
	return m.response(spec, res)
}

// thrown is the error a request throws under k6's throw option (its
// params.throw): one that got no response; nil otherwise.
func (res *httpResult) thrown(spec *httpSpec) error {
	if !spec.throw || res.err == "" || res.status != 0 {
		return nil
	}
	return fmt.Errorf("%s %s: %s", spec.method, spec.url, res.err)
}

// asyncRequest sends one request without blocking the VU's JavaScript and
// returns a promise of its response (k6's http.asyncRequest): the
// iteration waits for it, and its end (a cut) ends the request
// unrecorded, as a blocking request's.
func (m *httpModule) asyncRequest(method string, urlV, body, params sobek.Value) sobek.Value {
	m.mustNotInit()
	rt := m.vu.rt
	spec, err := m.spec(method, urlV, body, params)
	if err != nil {
		panic(rt.NewTypeError("http.asyncRequest: %v", err))
	}
	promise, resolve, reject := rt.NewPromise()
	ctx, enqueue := m.vu.asyncWork()
	hc := m.vu.httpClient()
	go func() {
		res := m.vu.shared.doHTTP(ctx, hc, spec)
		enqueue(func() error {
			if ctx.Err() != nil {
				return nil
			}
			if err := res.thrown(spec); err != nil {
				return reject(rt.NewGoError(err))
			}
			return resolve(m.response(spec, res))
		})
	}()
	return rt.ToValue(promise)
}

// mustNotInit throws in the init context, where k6 sends no request.
func (m *httpModule) mustNotInit() {
	if m.vu.inInit {
		panic(m.vu.rt.NewGoError(errors.New("making HTTP requests in the init context is not supported: send them in default(), setup() or teardown()")))
	}
}

// batch sends several requests at once (at most k6's batch option, 20,
// in flight, and batchPerHost, 6, to one host) and returns their responses in the form it was given: an array
// for an array, an object with the same keys for an object. Each request
// is a URL string (GET), an array [method, url, body, params] or an object
// {method, url, body, params}.
func (m *httpModule) batch(reqs sobek.Value) sobek.Value {
	m.mustNotInit()
	rt := m.vu.rt
	o, ok := reqs.(*sobek.Object)
	if !ok {
		panic(rt.NewTypeError("http.batch: want an array or an object of requests"))
	}
	keys := o.Keys()
	isArray := o.ClassName() == "Array"
	specs := make([]*httpSpec, len(keys))
	for i, k := range keys {
		spec, err := m.batchSpec(o.Get(k))
		if err != nil {
			panic(rt.NewTypeError("http.batch: request %s: %v", k, err))
		}
		specs[i] = spec
	}
	results := make([]*httpResult, len(specs))
	ctx := m.vu.context()
	ho := m.vu.shared.httpO
	sem := make(chan struct{}, ho.batch)
	perHost := map[string]chan struct{}{}
	for _, spec := range specs {
		if h := spec.hostKey(); ho.batchPerHost > 0 && perHost[h] == nil {
			perHost[h] = make(chan struct{}, ho.batchPerHost)
		}
	}
	var wg sync.WaitGroup
	for i, spec := range specs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if h := perHost[spec.hostKey()]; h != nil {
				h <- struct{}{}
				defer func() { <-h }()
			}
			results[i] = m.vu.shared.doHTTP(ctx, m.vu.httpClient(), spec)
		})
	}
	wg.Wait()
	if m.vu.stopIfCut() {
		return sobek.Undefined()
	}
	for i, res := range results {
		if err := res.thrown(specs[i]); err != nil {
			panic(rt.NewGoError(err)) // the first failed request, as k6 throws it
		}
	}
	var out *sobek.Object
	if isArray {
		out = rt.NewArray()
	} else {
		out = rt.NewObject()
	}
	for i, k := range keys {
		set(out, k, m.response(specs[i], results[i]))
	}
	return out
}

// batchSpec reads one request of http.batch.
func (m *httpModule) batchSpec(v sobek.Value) (*httpSpec, error) {
	o, ok := v.(*sobek.Object)
	if !ok || taggedURLOf(v) != nil {
		return m.spec(http.MethodGet, v, sobek.Undefined(), sobek.Undefined())
	}
	arg := func(i int, name string) sobek.Value {
		var x sobek.Value
		if o.ClassName() == "Array" {
			x = o.Get(strconv.Itoa(i))
		} else {
			x = o.Get(name)
		}
		if x == nil {
			return sobek.Undefined()
		}
		return x
	}
	method := http.MethodGet
	if mv := arg(0, "method"); !sobek.IsUndefined(mv) && !sobek.IsNull(mv) {
		method = strings.ToUpper(mv.String())
	}
	return m.spec(method, arg(1, "url"), arg(2, "body"), arg(3, "params"))
}

// taggedURL is http.url's value: a URL and the name its requests get.
type taggedURL struct{ url, name string }

// urlKey is the hidden property of http.url's object that holds it.
const urlKey = "__llmchaos_url"

// urlTemplate is k6's http.url tagged template: the URL with the
// template's values in it, named by the template with ${} for each value,
// so that requests to URLs that differ only in those values share one
// name tag.
func (m *httpModule) urlTemplate(call sobek.FunctionCall) sobek.Value {
	rt := m.vu.rt
	parts, ok := call.Argument(0).(*sobek.Object)
	if !ok {
		panic(rt.NewTypeError("http.url: use it as a tagged template, http.url`https://host/items/${id}`"))
	}
	var u, name strings.Builder
	for i := range int(parts.Get("length").ToInteger()) {
		p := parts.Get(strconv.Itoa(i)).String()
		u.WriteString(p)
		name.WriteString(p)
		if i+1 < len(call.Arguments) {
			u.WriteString(call.Arguments[i+1].String())
			name.WriteString("${}")
		}
	}
	t := &taggedURL{url: u.String(), name: name.String()}
	o := rt.NewObject()
	set(o, "url", t.url)
	set(o, "name", t.name)
	set(o, "toString", func() string { return t.url })
	_ = o.DefineDataProperty(urlKey, rt.ToValue(t), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_FALSE)
	return o
}

// taggedURLOf is the http.url value v holds (nil when it is none).
func taggedURLOf(v sobek.Value) *taggedURL {
	o, ok := v.(*sobek.Object)
	if !ok {
		return nil
	}
	if x := o.Get(urlKey); x != nil {
		t, _ := x.Export().(*taggedURL)
		return t
	}
	return nil
}

// spec reads a request from a script's arguments.
func (m *httpModule) spec(method string, urlV, body, params sobek.Value) (*httpSpec, error) {
	if !present(urlV) {
		return nil, errors.New("the URL is missing")
	}
	rawURL, name := urlV.String(), ""
	if t := taggedURLOf(urlV); t != nil {
		rawURL, name = t.url, t.name
	}
	spec := &httpSpec{
		method: method, url: rawURL, header: http.Header{}, timeout: httpDefaultTimeout,
		redirects: m.vu.shared.httpO.maxRedirects, responseType: m.vu.shared.httpO.responseType, expected: m.callback,
		throw: m.vu.shared.httpO.throw,
	}
	spec.header.Set("User-Agent", m.vu.shared.httpO.userAgent) // params.headers may replace it, as in k6
	if !m.vu.inInit {
		spec.jar = m.vu.vuJar()
	}
	if err := readParams(spec, params, true); err != nil {
		return nil, err
	}
	if err := readBody(spec, body); err != nil {
		return nil, err
	}
	spec.checkURL()
	spec.tags = m.vu.withTags(spec.tags) // the VU's (scenario) tags under the request's
	if spec.tags.Class == "" {
		spec.tags.Class = name // http.url's template ("" otherwise: the URL, below)
	}
	spec.defaultName()
	spec.debugFields = m.vu.httpDebugFields(spec)
	return spec, nil
}

// present reports whether v is a value (not undefined or null).
func present(v sobek.Value) bool { return v != nil && !sobek.IsUndefined(v) && !sobek.IsNull(v) }

// readParams reads a request's params: headers, tags (name is the request
// class tag, as k6's name groups URLs), timeout (a duration string or
// milliseconds), redirects, cookies, jar, auth, and for k6/http
// responseType and responseCallback. Other keys are ignored.
func readParams(spec *httpSpec, params sobek.Value, httpParams bool) error {
	p, ok := params.(*sobek.Object)
	if !ok || !present(params) {
		return nil
	}
	for _, k := range p.Keys() {
		v := p.Get(k)
		if !present(v) {
			if k == "responseCallback" && httpParams {
				spec.expected = nil
			}
			continue
		}
		switch k {
		case "headers":
			h, ok := v.(*sobek.Object)
			if !ok {
				return errors.New("params.headers: want an object of header names and values")
			}
			for _, name := range h.Keys() {
				val := h.Get(name).String()
				if http.CanonicalHeaderKey(name) == "Host" {
					spec.host = val
					continue
				}
				spec.header.Set(name, val)
			}
		case "tags":
			spec.tags = tagsArg(v)
		case "timeout":
			d, err := durationArg(v)
			if err != nil {
				return fmt.Errorf("params.timeout: %w", err)
			}
			spec.timeout = d
		case "redirects":
			spec.redirects = int(v.ToInteger())
		case "throw":
			if httpParams {
				spec.throw = v.ToBoolean()
			}
		case "cookies":
			cs, err := requestCookies(v)
			if err != nil {
				return err
			}
			spec.cookies = cs
		case "jar":
			j := jarOf(v)
			if j == nil {
				return errors.New("params.jar: want an http.CookieJar")
			}
			spec.jar = j
		case "auth":
			switch a := v.String(); a {
			case "basic", "digest", "ntlm":
				spec.auth = a
			default:
				return fmt.Errorf("params.auth %q: want basic, digest or ntlm", a)
			}
		case "responseType":
			if !httpParams {
				continue
			}
			switch t := v.String(); t {
			case "text", "binary", "none":
				spec.responseType = t
			default:
				return fmt.Errorf("params.responseType %q: want text, binary or none", t)
			}
		case "responseCallback":
			if !httpParams {
				continue
			}
			e, ok := v.Export().(*expectedStatuses)
			if !ok {
				return errors.New("params.responseCallback: want http.expectedStatuses(...) or null")
			}
			spec.expected = e
		}
	}
	return nil
}

// durationArg reads a k6 duration: a string such as "10s" or "500ms" (a
// bare number string is milliseconds), or a number of milliseconds.
func durationArg(v sobek.Value) (time.Duration, error) {
	if _, ok := v.Export().(string); ok {
		s := v.String()
		if ms, err := strconv.ParseFloat(s, 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q: want e.g. \"10s\", \"500ms\" or a number of milliseconds", s)
		}
		return d, nil
	}
	return time.Duration(v.ToFloat() * float64(time.Millisecond)), nil
}

// readBody reads a request body: a string as it is, an ArrayBuffer or a
// typed array as bytes, an object form-encoded (with its Content-Type
// unless params set one), as k6 does.
func readBody(spec *httpSpec, body sobek.Value) error {
	if !present(body) {
		return nil
	}
	switch b := body.Export().(type) {
	case string:
		spec.body = []byte(b)
	case sobek.ArrayBuffer:
		spec.body = append([]byte{}, b.Bytes()...)
	case []byte:
		spec.body = append([]byte{}, b...)
	case map[string]any:
		form := url.Values{}
		for k, v := range b {
			if arr, ok := v.([]any); ok {
				for _, el := range arr {
					form.Add(k, formValue(el)) // an array is the key repeated, as k6 sends it
				}
				continue
			}
			form.Set(k, formValue(v))
		}
		spec.body = []byte(form.Encode())
		if spec.header.Get("Content-Type") == "" {
			spec.header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	default:
		spec.body = []byte(body.String())
	}
	return nil
}

// formValue is one value of a form-encoded object body as k6 writes it:
// null and undefined empty, a nested object or array empty (a flat form
// cannot hold it), others as their string.
func formValue(v any) string {
	switch x := v.(type) {
	case nil, map[string]any, []any:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// expectedStatuses is http.expectedStatuses(...statuses): each argument a
// status or a {min, max} range.
func (m *httpModule) expectedStatuses(call sobek.FunctionCall) sobek.Value {
	rt := m.vu.rt
	e := &expectedStatuses{}
	for i, a := range call.Arguments {
		if o, ok := a.(*sobek.Object); ok {
			lo, hi := o.Get("min"), o.Get("max")
			if !present(lo) || !present(hi) {
				panic(rt.NewTypeError("http.expectedStatuses: argument %d: want a status or {min, max}", i+1))
			}
			e.ranges = append(e.ranges, [2]int{int(lo.ToInteger()), int(hi.ToInteger())})
			continue
		}
		s := int(a.ToInteger())
		e.ranges = append(e.ranges, [2]int{s, s})
	}
	return rt.ToValue(e)
}

// responseCallback reads setResponseCallback's argument: expectedStatuses'
// result, or null for none.
func (m *httpModule) responseCallback(v sobek.Value) (*expectedStatuses, error) {
	if !present(v) {
		return nil, nil
	}
	e, ok := v.Export().(*expectedStatuses)
	if !ok {
		return nil, errors.New("want http.expectedStatuses(...) or null")
	}
	return e, nil
}

// response is k6's response object of a request.
func (m *httpModule) response(spec *httpSpec, res *httpResult) *sobek.Object {
	rt := m.vu.rt
	o := rt.NewObject()
	set(o, "status", res.status)
	set(o, "status_text", res.statusText)
	set(o, "proto", res.proto)
	set(o, "tls_version", res.tlsVersion)
	set(o, "tls_cipher_suite", res.tlsCipher)
	set(o, "ocsp", res.ocsp.object(rt))
	set(o, "url", res.url)
	set(o, "error", res.err)
	set(o, "error_code", res.code)
	set(o, "headers", headerObject(rt, res.header))
	set(o, "cookies", responseCookies(rt, res.header))
	host, port := splitRemote(res.remote)
	set(o, "remote_ip", host)
	set(o, "remote_port", port)
	switch {
	case res.body == nil || spec.responseType == "none":
		set(o, "body", sobek.Null())
	case spec.responseType == "binary":
		set(o, "body", rt.NewArrayBuffer(res.body))
	default:
		set(o, "body", string(res.body))
	}
	tm := res.timings
	timings := rt.NewObject()
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"blocked", tm.Blocked}, {"connecting", tm.Connecting}, {"tls_handshaking", tm.TLSHandshaking},
		{"sending", tm.Sending}, {"waiting", tm.Waiting}, {"receiving", tm.Receiving}, {"duration", tm.Duration},
	} {
		set(timings, f.name, f.v)
	}
	set(o, "timings", timings)
	req := rt.NewObject()
	set(req, "method", spec.method)
	set(req, "url", spec.url)
	// The header as sent, as k6 shows it: each name's values, a Host
	// given in params and User-Agent among them (its "" value, from
	// userAgent: "", sends none).
	sent := res.sentHeader
	if sent == nil {
		sent = spec.header
	}
	reqHeaders := rt.NewObject()
	for k, vs := range sent {
		set(reqHeaders, k, vs)
	}
	if spec.host != "" {
		set(reqHeaders, "Host", []string{spec.host})
	}
	set(req, "headers", reqHeaders)
	set(req, "body", string(spec.body))
	set(o, "request", req)
	var parsed sobek.Value
	set(o, "json", func(call sobek.FunctionCall) sobek.Value {
		if parsed == nil {
			if res.body == nil {
				panic(rt.NewTypeError("response.json(): the response has no body"))
			}
			parse, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("parse"))
			v, err := parse(sobek.Undefined(), rt.ToValue(string(res.body)))
			if err != nil {
				panic(err)
			}
			parsed = v
		}
		if sel := call.Argument(0); present(sel) {
			return jsonSelect(rt, parsed, sel.String())
		}
		return parsed
	})
	m.htmlMethods(o, res)
	return o
}

// headerObject is a header as k6 shows it: canonical names, values joined
// with ", ".
func headerObject(rt *sobek.Runtime, h http.Header) *sobek.Object {
	o := rt.NewObject()
	for k, vs := range h {
		set(o, k, strings.Join(vs, ", "))
	}
	return o
}

// splitRemote splits a remote address into its IP and port ("", 0 when
// none).
func splitRemote(addr string) (string, int) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, 0
	}
	port, _ := strconv.Atoi(addr[i+1:])
	return strings.Trim(addr[:i], "[]"), port
}

// jsonSelect follows a selector such as "choices.0.message.content" into
// a parsed JSON value: keys and array indexes separated by dots ("\." is a
// literal dot), "#" is an array's length; a path that leads nowhere gives
// undefined. It covers the part of k6's (gjson) selector syntax scripts
// use to read a field.
func jsonSelect(rt *sobek.Runtime, v sobek.Value, path string) sobek.Value {
	for _, part := range splitSelector(path) {
		o, ok := v.(*sobek.Object)
		if !ok || !present(v) {
			return sobek.Undefined()
		}
		if part == "#" && o.ClassName() == "Array" {
			v = o.Get("length")
			continue
		}
		v = o.Get(part)
		if v == nil {
			return sobek.Undefined()
		}
	}
	return v
}

// splitSelector splits a selector at its unescaped dots.
func splitSelector(path string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path):
			i++
			b.WriteByte(path[i])
		case path[i] == '.':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(path[i])
		}
	}
	return append(parts, b.String())
}
