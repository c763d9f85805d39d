package js

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// cookieServer answers /cookies with the cookies it got, /set?k=v with
// those cookies set and a redirect to /cookies, and /digest with an RFC
// 7616 Digest challenge (MD5, qop auth) for user:passwd.
func cookieServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/cookies", func(w http.ResponseWriter, r *http.Request) {
		got := map[string][]string{}
		for _, c := range r.Cookies() {
			got[c.Name] = append(got[c.Name], c.Value)
		}
		_ = json.NewEncoder(w).Encode(got)
	})
	mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.URL.Query() {
			http.SetCookie(w, &http.Cookie{Name: k, Value: vs[0], Path: "/", HttpOnly: true})
		}
		http.Redirect(w, r, "/cookies", http.StatusFound)
	})
	mux.HandleFunc("/digest", func(w http.ResponseWriter, r *http.Request) {
		const realm, nonce = "r", "n0nce"
		h := r.Header.Get("Authorization")
		if !strings.HasPrefix(h, "Digest ") {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Digest realm="%s", nonce="%s", qop="auth", opaque="op"`, realm, nonce))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		p, _ := digestChallenge([]string{h})
		md := func(s string) string { x := md5.Sum([]byte(s)); return hex.EncodeToString(x[:]) }
		want := md(md("user:"+realm+":passwd") + ":" + nonce + ":" + p["nc"] + ":" + p["cnonce"] + ":auth:" + md(r.Method+":"+p["uri"]))
		if p["username"] != "user" || p["response"] != want || p["opaque"] != "op" || p["uri"] != r.URL.RequestURI() {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHTTPCookiesAndDigestAuth: the VU's jar keeps a response's cookies
// (along redirects) for the rest of the iteration and is empty again in the
// next; params.cookies are sent without entering the jar, and replace a
// jar cookie only when asked; a local CookieJar is apart from the VU's;
// jar.set/delete/clear; res.cookies; params.auth digest answers the
// server's challenge; an object body's array repeats its key; a metric's
// add() returns true, as k6's.
func TestHTTPCookiesAndDigestAuth(t *testing.T) {
	base := cookieServer(t)
	src := `
import http from 'k6/http';
import { Counter } from 'k6/metrics';
const c = new Counter('adds');

export default function () {
  const B = __ENV.BASE;
  const vuJar = http.cookieJar();
  eq(JSON.stringify(vuJar.cookiesForURL(B + '/cookies')), '{}', 'the jar is empty at the start of each iteration');
  let r = http.get(B + '/set?a=1');
  eq(JSON.stringify(r.json()), '{"a":["1"]}', 'a cookie set before a redirect is sent after it');
  eq(vuJar.cookiesForURL(B + '/').a[0], '1', 'the VU jar keeps it');
  r = http.get(B + '/cookies', { cookies: { b: '2' } });
  eq(JSON.stringify(r.json()), '{"a":["1"],"b":["2"]}', 'params.cookies join the jar');
  eq(vuJar.cookiesForURL(B + '/').b, undefined, 'params.cookies stay out of the jar');
  r = http.get(B + '/cookies', { cookies: { a: 'x' } });
  eq(JSON.stringify(r.json().a), '["x","1"]', 'without replace both are sent');
  r = http.get(B + '/cookies', { cookies: { a: { value: 'y', replace: true } } });
  eq(JSON.stringify(r.json().a), '["y"]', 'replace hides the jar cookie');

  const local = new http.CookieJar();
  local.set(B + '/cookies', 'l', 'v', { path: '/', http_only: true });
  r = http.get(B + '/cookies', { jar: local });
  eq(JSON.stringify(r.json()), '{"l":["v"]}', 'a local jar only');
  eq(JSON.stringify(Object.keys(local)), '["cookiesForURL","set","clear","delete"]', 'the jar object shows only its methods');
  local.delete(B + '/cookies', 'l');
  eq(JSON.stringify(local.cookiesForURL(B + '/cookies')), '{}', 'delete');
  vuJar.set(B + '/', 'z', '9');
  vuJar.clear(B + '/');
  eq(JSON.stringify(vuJar.cookiesForURL(B + '/')), '{}', 'clear');

  r = http.get(B + '/set?s=3', { redirects: 0 });
  eq(r.cookies.s[0].value, '3', 'res.cookies value');
  eq(r.cookies.s[0].http_only, true, 'res.cookies http_only');
  eq(r.cookies.s[0].path, '/', 'res.cookies path');

  const u = B.replace('http://', 'http://user:passwd@');
  eq(http.get(u + '/digest', { auth: 'digest' }).status, 200, 'digest auth');
  eq(http.get(u + '/digest').status, 401, 'no digest without auth');

  r = http.post(B + '/cookies', { t: ['a', 'b'], n: null, o: { x: 1 } });
  eq(r.request.body, 'n=&o=&t=a&t=b', 'an array repeats its key, null and objects are empty');
  eq(c.add(1), true, 'add returns true');
  eq(c.add(NaN), false, 'NaN is not added');
}
` + jsAsserts
	vu, sh, console := scriptVU(t, src, map[string]string{"BASE": base})
	for i := range 2 {
		if it := runDefault(context.Background(), t, vu); it.Err != nil {
			t.Fatalf("iteration %d: %v\nconsole:\n%s", i, it.Err, console())
		}
	}
	if s := sh.Recorder.Finish(sh.Clock.Now()).Custom("adds", recording.TagFilter{}); s == nil || s.Sum != 2 {
		t.Errorf("adds: %+v, want a sum of 2 (NaN left out)", s)
	}
}
