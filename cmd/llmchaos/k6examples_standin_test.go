package main

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// k6ExampleHosts is the local stand-in of the hosts k6's example scripts
// name (httpbin.org, quickpizza.grafana.com, api.github.com,
// localhost:8080): one handler served over plain HTTP and over TLS with
// HTTP/2, and a PEM file of the TLS server's certificate for a client that
// should trust it (SSL_CERT_FILE).
type k6ExampleHosts struct {
	plain, tls string // host:port of each server
	// legacyTLS is sha256.badssl.com's stand-in: TLS 1.2 at most, with
	// RSA key exchange suites (tlsconfig.js asks for one).
	legacyTLS string
	certFile  string
	// reqs counts the requests of each path the stand-in served.
	reqs *countingMux
}

// countingMux is an http.ServeMux that counts the requests of each path.
type countingMux struct {
	*http.ServeMux
	counts chan map[string]int
}

func (m *countingMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := <-m.counts
	c[r.Method+" "+r.URL.Path]++
	m.counts <- c
	m.ServeMux.ServeHTTP(w, r)
}

// served returns how many requests of "METHOD /path" the stand-in served.
func (m *countingMux) served(key string) int {
	c := <-m.counts
	defer func() { m.counts <- c }()
	return c[key]
}

// startK6ExampleHosts starts the stand-in for the test's life.
func startK6ExampleHosts(t *testing.T) *k6ExampleHosts {
	t.Helper()
	mux := &countingMux{ServeMux: http.NewServeMux(), counts: make(chan map[string]int, 1)}
	mux.counts <- map[string]int{}
	httpbinRoutes(mux.ServeMux)
	quickpizzaRoutes(mux.ServeMux)
	plain := httptest.NewServer(mux)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewUnstartedServer(mux)
	tlsSrv.EnableHTTP2 = true
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	legacy := httptest.NewUnstartedServer(mux)
	legacy.TLS = &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
		tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
	legacy.StartTLS()
	t.Cleanup(legacy.Close)
	cert := filepath.Join(t.TempDir(), "stand-in.pem")
	// httptest's servers share one certificate.
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(cert, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return &k6ExampleHosts{
		plain: strings.TrimPrefix(plain.URL, "http://"), tls: strings.TrimPrefix(tlsSrv.URL, "https://"),
		legacyTLS: strings.TrimPrefix(legacy.URL, "https://"), certFile: cert, reqs: mux,
	}
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// scheme is the request's scheme as the client used it.
func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// httpbinEcho is httpbin's answer to /get, /post and the other verbs:
// args, headers, url, and for a body its form, json or data.
func httpbinEcho(w http.ResponseWriter, r *http.Request) {
	args := map[string]any{}
	for k, vs := range r.URL.Query() {
		args[k] = oneOrMany(vs)
	}
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[k] = strings.Join(vs, ",")
	}
	out := map[string]any{"args": args, "headers": headers, "url": scheme(r) + "://" + r.Host + r.URL.RequestURI()}
	if r.Method != http.MethodGet {
		body, _ := io.ReadAll(r.Body)
		form := map[string]any{}
		var js any
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch ct {
		case "application/x-www-form-urlencoded":
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			if err := r.ParseForm(); err == nil {
				for k, vs := range r.PostForm {
					form[k] = oneOrMany(vs)
				}
			}
		case "application/json":
			_ = json.Unmarshal(body, &js)
		}
		out["form"], out["json"], out["data"] = form, js, string(body)
	}
	writeJSON(w, out)
}

// oneOrMany is a repeated form or query value as httpbin shows it: a
// string once, a list when repeated.
func oneOrMany(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}

// httpbinRoutes serves the part of httpbin.org that k6's examples use.
func httpbinRoutes(mux *http.ServeMux) {
	for _, verb := range []string{"get", "post", "put", "patch", "delete"} {
		mux.HandleFunc(strings.ToUpper(verb)+" /"+verb, httpbinEcho)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><head><title>httpbin.org</title></head><body><h2>httpbin stand-in</h2></body></html>")
	})
	mux.HandleFunc("GET /cookies", func(w http.ResponseWriter, r *http.Request) {
		cookies := map[string]string{}
		for _, c := range r.Cookies() {
			cookies[c.Name] = c.Value
		}
		writeJSON(w, map[string]any{"cookies": cookies})
	})
	mux.HandleFunc("GET /cookies/set", func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.URL.Query() {
			http.SetCookie(w, &http.Cookie{Name: k, Value: vs[0], Path: "/"})
		}
		http.Redirect(w, r, "/cookies", http.StatusFound)
	})
	mux.HandleFunc("GET /basic-auth/{user}/{passwd}", func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != r.PathValue("user") || pass != r.PathValue("passwd") {
			w.Header().Set("WWW-Authenticate", `Basic realm="Fake Realm"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		writeJSON(w, map[string]any{"authenticated": true, "user": user})
	})
	mux.HandleFunc("GET /digest-auth/{qop}/{user}/{passwd}", digestAuth)
	// httpbin's /redirect/N and /relative-redirect/N answer alike: N-1 more
	// relative redirects, then /get.
	redirect := func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 1 {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if n == 1 {
			http.Redirect(w, r, "/get", http.StatusFound)
			return
		}
		http.Redirect(w, r, "/relative-redirect/"+strconv.Itoa(n-1), http.StatusFound)
	}
	mux.HandleFunc("GET /redirect/{n}", redirect)
	mux.HandleFunc("GET /relative-redirect/{n}", redirect)
	// api.github.com's GraphQL endpoint, as far as graphql.js reads it.
	mux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		writeJSON(w, map[string]any{"data": map[string]any{"repository": map[string]any{"issues": map[string]any{
			"edges": []any{map[string]any{"node": map[string]any{"id": "I_1", "number": 1, "title": "first"}}}}}}})
	})
	// localhost:8080 in localhost.js.
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = io.WriteString(w, "body{}")
	})
	mux.HandleFunc("GET /teddy.jpg", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg")
		_, _ = w.Write([]byte{0xff, 0xd8, 0xff, 0xd9})
	})
}

// digestAuth is httpbin's /digest-auth/{qop}/{user}/{passwd}: a 401 with
// a Digest challenge (MD5, the qop given), then 200 for a request whose
// Authorization answers it (RFC 7616).
func digestAuth(w http.ResponseWriter, r *http.Request) {
	user, pass, qop := r.PathValue("user"), r.PathValue("passwd"), r.PathValue("qop")
	const realm = "me@kennethreitz.com"
	p := digestParams(r.Header.Get("Authorization"))
	if p == nil || p["username"] != user || p["realm"] != realm {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce)
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Digest realm="%s", nonce="%x", qop="%s", opaque="%x", algorithm=MD5, stale=FALSE`,
			realm, nonce, qop, nonce[:8]))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	md5hex := func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	ha1 := md5hex(user + ":" + realm + ":" + pass)
	ha2 := md5hex(r.Method + ":" + p["uri"])
	want := md5hex(ha1 + ":" + p["nonce"] + ":" + p["nc"] + ":" + p["cnonce"] + ":" + p["qop"] + ":" + ha2)
	if p["response"] != want || p["qop"] != qop || p["uri"] != r.URL.RequestURI() {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	writeJSON(w, map[string]any{"authenticated": true, "user": user})
}

// digestParams reads a Digest Authorization header's parameters (nil when
// it is not one).
func digestParams(h string) map[string]string {
	rest, ok := strings.CutPrefix(h, "Digest ")
	if !ok {
		return nil
	}
	out := map[string]string{}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ,")
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		if strings.HasPrefix(v, `"`) {
			end := strings.IndexByte(v[1:], '"')
			if end < 0 {
				return nil
			}
			out[k], rest = v[1:end+1], v[end+2:]
			continue
		}
		val, after, _ := strings.Cut(v, ",")
		out[k], rest = strings.TrimSpace(val), after
	}
	return out
}

// quickpizzaRoutes serves the test.k6.io pages quickpizza.grafana.com
// keeps, as far as k6's examples read them.
func quickpizzaRoutes(mux *http.ServeMux) {
	page := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		_, _ = io.WriteString(w, `<!DOCTYPE html><html><head><title>test.k6.io</title>
<link rel="stylesheet" href="/test.k6.io/static/css/site.css"></head>
<body><p class="description">This is a replacement of the service test.k6.io, kept as a stand-in.</p></body></html>`)
	}
	mux.HandleFunc("GET /test.k6.io", page)
	mux.HandleFunc("GET /test.k6.io/{$}", page)
	mux.HandleFunc("GET /pi.php", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "3.14")
	})
	for path, ct := range map[string]string{
		"/test.k6.io/static/css/site.css": "text/css", "/test.k6.io/static/favicon.ico": "image/x-icon",
		"/test.k6.io/static/js/prisms.js": "application/javascript",
	} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", ct)
			_, _ = io.WriteString(w, "/* static */")
		})
	}
}
