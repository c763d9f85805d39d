package js

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/sobek"
)

// cookieJar is k6/http's CookieJar: the VU's own (http.cookieJar(),
// emptied before each iteration as k6's is) or one a script makes with
// new http.CookieJar(). Its jar is safe for concurrent use (http.batch
// sends from several goroutines).
type cookieJar struct {
	jar *cookiejar.Jar
}

// newJar is an empty cookie jar.
func newJar() *cookieJar {
	j, _ := cookiejar.New(nil) // a nil options never fails
	return &cookieJar{jar: j}
}

// vuJar is the VU's cookie jar, made on first use; resetJar empties it
// between iterations.
func (vu *VU) vuJar() *cookieJar {
	if vu.jar == nil {
		vu.jar = newJar()
	}
	return vu.jar
}

// resetJar drops the VU's cookies: each iteration starts with none, as in
// k6, unless the noCookiesReset option keeps them. The next use makes a new jar,
// so an iteration that sends no request allocates none.
func (vu *VU) resetJar() {
	if !vu.shared.httpO.keepCookies {
		vu.jar = nil
	}
}

// jarObject is the JavaScript object of j: cookiesForURL, set, clear,
// delete, as k6's CookieJar has them.
func (m *httpModule) jarObject(o *sobek.Object, j *cookieJar) *sobek.Object {
	rt := m.vu.rt
	parse := func(fn, raw string) *url.URL {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			panic(rt.NewTypeError("CookieJar.%s: %q is not a URL", fn, raw))
		}
		return u
	}
	set(o, "cookiesForURL", func(raw string) map[string][]string {
		out := map[string][]string{}
		for _, c := range j.jar.Cookies(parse("cookiesForURL", raw)) {
			out[c.Name] = append(out[c.Name], c.Value)
		}
		return out
	})
	set(o, "set", func(call sobek.FunctionCall) sobek.Value {
		u := parse("set", call.Argument(0).String())
		c := &http.Cookie{Name: call.Argument(1).String(), Value: call.Argument(2).String()}
		if err := cookieOptions(c, call.Argument(3)); err != nil {
			panic(rt.NewTypeError("CookieJar.set: %v", err))
		}
		j.jar.SetCookies(u, []*http.Cookie{c})
		return rt.ToValue(true)
	})
	set(o, "clear", func(raw string) {
		u := parse("clear", raw)
		cs := j.jar.Cookies(u)
		for _, c := range cs {
			c.MaxAge = -1
		}
		j.jar.SetCookies(u, cs)
	})
	set(o, "delete", func(raw, name string) {
		if name == "" {
			panic(rt.NewTypeError("CookieJar.delete: the cookie's name is missing"))
		}
		j.jar.SetCookies(parse("delete", raw), []*http.Cookie{{Name: name, MaxAge: -1}})
	})
	// Hidden from the script's enumeration and JSON, as k6's Go field is.
	_ = o.DefineDataProperty(jarKey, rt.ToValue(j), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_FALSE)
	return o
}

// cookieOptions reads CookieJar.set's options: domain, path, expires (an
// RFC 1123 date), max_age, secure, http_only.
func cookieOptions(c *http.Cookie, v sobek.Value) error {
	o, ok := v.(*sobek.Object)
	if !ok || !present(v) {
		return nil
	}
	for _, k := range o.Keys() {
		x := o.Get(k)
		switch strings.ToLower(k) {
		case "domain":
			c.Domain = x.String()
		case "path":
			c.Path = x.String()
		case "expires":
			if s := x.String(); s != "" {
				t, err := time.Parse(time.RFC1123, s)
				if err != nil {
					return fmt.Errorf("expires %q: want an RFC 1123 date", s)
				}
				c.Expires = t
			}
		case "max_age":
			c.MaxAge = int(x.ToInteger())
		case "secure":
			c.Secure = x.ToBoolean()
		case "http_only":
			c.HttpOnly = x.ToBoolean()
		}
	}
	return nil
}

// jarOf is the jar behind a CookieJar object (nil when v is not one).
func jarOf(v sobek.Value) *cookieJar {
	o, ok := v.(*sobek.Object)
	if !ok {
		return nil
	}
	v = o.Get(jarKey)
	if v == nil {
		return nil
	}
	j, _ := v.Export().(*cookieJar)
	return j
}

// jarKey is the hidden property of a CookieJar object that holds its jar.
const jarKey = "__llmchaos_jar"

// requestCookies reads params.cookies: {name: value} or
// {name: {value, replace}}; a replacing cookie hides the jar's of the same
// name for this request.
func requestCookies(v sobek.Value) ([]requestCookie, error) {
	o, ok := v.(*sobek.Object)
	if !ok {
		return nil, errors.New("params.cookies: want an object of cookie names and values")
	}
	var out []requestCookie
	for _, name := range o.Keys() {
		c := o.Get(name)
		if !present(c) {
			continue
		}
		rc := requestCookie{name: name}
		if co, ok := c.(*sobek.Object); ok && co.ClassName() == "Object" {
			if val := co.Get("value"); present(val) {
				rc.value = val.String()
			}
			if r := co.Get("replace"); r != nil {
				rc.replace = r.ToBoolean()
			}
		} else {
			rc.value = c.String()
		}
		out = append(out, rc)
	}
	return out, nil
}

// requestCookie is one cookie of params.cookies.
type requestCookie struct {
	name, value string
	replace     bool
}

// requestJar is the jar a request uses: its active jar, less the cookies
// that params.cookies replace. Responses' cookies go into the jar.
type requestJar struct {
	jar     *cookiejar.Jar
	replace map[string]bool
}

func (r requestJar) SetCookies(u *url.URL, cs []*http.Cookie) { r.jar.SetCookies(u, cs) }

func (r requestJar) Cookies(u *url.URL) []*http.Cookie {
	cs := r.jar.Cookies(u)
	if len(r.replace) == 0 {
		return cs
	}
	out := cs[:0]
	for _, c := range cs {
		if !r.replace[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// responseCookies is a response's cookies as k6 gives them: by name, each
// a list of {name, value, domain, path, http_only, secure, max_age,
// expires (ms since the epoch, 0 when none)}.
func responseCookies(rt *sobek.Runtime, h http.Header) *sobek.Object {
	o := rt.NewObject()
	byName := map[string][]any{}
	var names []string
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if _, ok := byName[c.Name]; !ok {
			names = append(names, c.Name)
		}
		var expires int64
		if !c.Expires.IsZero() {
			expires = c.Expires.UnixMilli()
		}
		byName[c.Name] = append(byName[c.Name], map[string]any{
			"name": c.Name, "value": c.Value, "domain": c.Domain, "path": c.Path,
			"http_only": c.HttpOnly, "secure": c.Secure, "max_age": c.MaxAge, "expires": expires,
		})
	}
	for _, n := range names {
		set(o, n, byName[n])
	}
	return o
}
