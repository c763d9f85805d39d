package main

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// k6ExampleHosts is the local stand-in of the hosts k6's example scripts
// and the code blocks of k6's docs name (httpbin.org,
// quickpizza.grafana.com with its API, test.k6.io, api.github.com,
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

// countingMux is an http.ServeMux that counts the requests of each path
// and keeps, in order, those it has no route for (answered 404).
type countingMux struct {
	*http.ServeMux
	counts  chan map[string]int
	unknown chan []string
}

func (m *countingMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := <-m.counts
	c[r.Method+" "+r.URL.Path]++
	m.counts <- c
	if _, pattern := m.Handler(r); pattern == "" {
		u := <-m.unknown
		m.unknown <- append(u, r.Method+" "+r.URL.RequestURI())
	}
	m.ServeMux.ServeHTTP(w, r)
}

// unknownCount is how many requests the stand-in had no route for.
func (m *countingMux) unknownCount() int {
	u := <-m.unknown
	defer func() { m.unknown <- u }()
	return len(u)
}

// unknownSince lists the requests without a route after the first n.
func (m *countingMux) unknownSince(n int) []string {
	u := <-m.unknown
	defer func() { m.unknown <- u }()
	return slices.Clone(u[n:])
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
	mux := &countingMux{ServeMux: http.NewServeMux(), counts: make(chan map[string]int, 1), unknown: make(chan []string, 1)}
	mux.counts <- map[string]int{}
	mux.unknown <- nil
	httpbinRoutes(mux.ServeMux)
	quickpizzaRoutes(mux.ServeMux)
	quickpizzaAPIRoutes(mux.ServeMux)
	testK6IORoutes(mux.ServeMux)
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
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><head><title>httpbin.org</title><meta charset=\"utf-8\"></head>"+
			"<body><h2>httpbin stand-in</h2><p>The home page of the stand-in of the hosts k6's examples and docs name: "+
			"httpbin.org, quickpizza.grafana.com and test.k6.io.</p></body></html>")
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

// quickpizzaUser is the user quickpizza.grafana.com has for scripts (its
// login page's hint; any password logs in as it), and the token its
// login answers.
const (
	quickpizzaUser, quickpizzaPassword = "default", "12345678"
	quickpizzaToken                    = "abcdef0123456789"
)

// quickpizzaAPIRoutes serves quickpizza.grafana.com's API as far as k6's
// docs read it: its httpbin-like endpoints under /api (status, bytes,
// delay, echo of a body, cookies, headers, basic auth, JSON of the query),
// the users a script registers, the login that answers a token, and the
// token-guarded catalogue.
func quickpizzaAPIRoutes(mux *http.ServeMux) {
	// The users, by name, with their passwords: the default one and those
	// a script registers (POST /api/users); every one gets the token.
	var users sync.Map
	users.Store(quickpizzaUser, quickpizzaPassword)
	mux.HandleFunc("/api/status/{status}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("status"))
		if err != nil || n < 100 || n > 599 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(n)
	})
	mux.HandleFunc("GET /api/bytes/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		b := make([]byte, max(0, min(n, 1<<20)))
		_, _ = rand.Read(b)
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /api/delay/{delay}", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.PathValue("delay"))
		if err != nil {
			if d, err = time.ParseDuration(r.PathValue("delay") + "s"); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("GET /api/get", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("DELETE /api/delete", func(http.ResponseWriter, *http.Request) {})
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		_, _ = io.Copy(w, r.Body)
	}
	mux.HandleFunc("POST /api/post", echo)
	mux.HandleFunc("PUT /api/put", echo)
	mux.HandleFunc("PATCH /api/patch", echo)
	mux.HandleFunc("GET /api/cookies", func(w http.ResponseWriter, r *http.Request) {
		cookies := map[string]string{}
		for _, c := range r.Cookies() {
			cookies[c.Name] = c.Value
		}
		writeJSON(w, map[string]any{"cookies": cookies})
	})
	mux.HandleFunc("POST /api/cookies", func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.URL.Query() {
			http.SetCookie(w, &http.Cookie{Name: k, Value: vs[0]})
		}
	})
	mux.HandleFunc("GET /api/headers", func(w http.ResponseWriter, r *http.Request) {
		headers := map[string]string{"Host": r.Host}
		for k, vs := range r.Header {
			headers[k] = strings.Join(vs, ",")
		}
		writeJSON(w, map[string]any{"headers": headers})
	})
	mux.HandleFunc("GET /api/basic-auth/{user}/{passwd}", func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		writeJSON(w, map[string]any{"user": r.PathValue("user"), "password": r.PathValue("passwd"),
			"authenticated": user == r.PathValue("user") && pass == r.PathValue("passwd")})
	})
	mux.HandleFunc("GET /api/json", func(w http.ResponseWriter, r *http.Request) {
		data := map[string]string{}
		for k, vs := range r.URL.Query() {
			data[k] = vs[0]
		}
		writeJSON(w, data)
	})
	mux.HandleFunc("POST /api/users/token/login", func(w http.ResponseWriter, r *http.Request) {
		var login struct{ Username, Password string }
		if err := json.NewDecoder(r.Body).Decode(&login); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		// As quickpizza's, any password logs in as the default user.
		if pw, ok := users.Load(login.Username); !ok || pw != login.Password && login.Username != quickpizzaUser {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"error": "authentication failed"})
			return
		}
		if r.URL.Query().Get("set_cookie") != "" {
			http.SetCookie(w, &http.Cookie{Name: "qp_user_token", Value: quickpizzaToken, Path: "/"})
		}
		writeJSON(w, map[string]string{"token": quickpizzaToken})
	})
	mux.HandleFunc("POST /api/users", func(w http.ResponseWriter, r *http.Request) {
		var u map[string]any
		if err := json.NewDecoder(r.Body).Decode(&u); err != nil || u["username"] == nil || u["password"] == nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		name, _ := u["username"].(string)
		pw, _ := u["password"].(string)
		if _, taken := users.LoadOrStore(name, pw); taken {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "username already taken"})
			return
		}
		delete(u, "password")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(u)
	})
	// The catalogue wants the user's token (header or cookie).
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			tok := strings.TrimPrefix(strings.TrimPrefix(r.Header.Get("Authorization"), "Token "), "Bearer ")
			if c, err := r.Cookie("qp_user_token"); err == nil {
				tok = c.Value
			}
			if tok != quickpizzaToken {
				w.WriteHeader(http.StatusUnauthorized)
				writeJSON(w, map[string]string{"error": "authentication failed"})
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /api/doughs", authed(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"doughs": []any{map[string]any{"ID": 1, "name": "Thin", "caloriesPerSlice": 150}}})
	}))
	mux.HandleFunc("GET /api/tools", authed(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"tools": []string{"Knife", "Pizza cutter"}})
	}))
	mux.HandleFunc("GET /api/ingredients/{type}", authed(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"ingredients": []any{map[string]any{"ID": 1, "name": "Mozzarella", "type": r.PathValue("type")}}})
	}))
	// Ratings: created, listed, read, updated and deleted by id.
	var ratingsMu sync.Mutex
	ratings := map[int]map[string]any{}
	nextRating := 1
	mux.HandleFunc("GET /api/ratings", authed(func(w http.ResponseWriter, _ *http.Request) {
		ratingsMu.Lock()
		defer ratingsMu.Unlock()
		list := []any{}
		for id := 1; id < nextRating; id++ {
			if r, ok := ratings[id]; ok {
				list = append(list, r)
			}
		}
		writeJSON(w, map[string]any{"ratings": list})
	}))
	mux.HandleFunc("POST /api/ratings", authed(func(w http.ResponseWriter, r *http.Request) {
		var rating map[string]any
		if err := json.NewDecoder(r.Body).Decode(&rating); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ratingsMu.Lock()
		rating["id"] = nextRating
		ratings[nextRating] = rating
		nextRating++
		ratingsMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(rating)
	}))
	mux.HandleFunc("DELETE /api/ratings", authed(func(w http.ResponseWriter, _ *http.Request) {
		ratingsMu.Lock()
		clear(ratings)
		ratingsMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	byID := func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		ratingsMu.Lock()
		defer ratingsMu.Unlock()
		rating, ok := ratings[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			writeJSON(w, map[string]string{"error": "not found"})
			return
		}
		switch r.Method {
		case http.MethodDelete:
			delete(ratings, id)
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodPut, http.MethodPatch:
			var upd map[string]any
			if err := json.NewDecoder(r.Body).Decode(&upd); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			for k, v := range upd {
				rating[k] = v
			}
			rating["id"] = id
		}
		writeJSON(w, rating)
	}
	for _, m := range []string{"GET", "PUT", "PATCH", "DELETE"} {
		mux.HandleFunc(m+" /api/ratings/{id}", authed(byID))
	}
	mux.HandleFunc("GET /api/names", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"names": []string{"Pizza Margherita", "Quattro Formaggi"}})
	})
	mux.HandleFunc("GET /api/quotes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"quotes": []string{"Pizza is a circle of joy."}})
	})
	// A recommendation: any restrictions, one pizza that keeps them.
	mux.HandleFunc("POST /api/pizza", authed(func(w http.ResponseWriter, r *http.Request) {
		var restrictions map[string]any
		_ = json.NewDecoder(r.Body).Decode(&restrictions)
		writeJSON(w, map[string]any{"pizza": map[string]any{"id": 1, "name": "Stand-in Special",
			"dough":       map[string]any{"ID": 1, "name": "Thin", "caloriesPerSlice": 150},
			"ingredients": []any{map[string]any{"ID": 1, "name": "Mozzarella", "caloriesPerSlice": 50, "vegetarian": true}},
			"tool":        "Knife"}, "calories": 200, "vegetarian": true})
	}))
	// The admin page: a login form (posted back to /admin) and links.
	admin := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		msg := ""
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			msg = "<p id=\"result\">Login attempted as " + html.EscapeString(r.PostForm.Get("username")) + "</p>"
		}
		_, _ = io.WriteString(w, `<!DOCTYPE html><html><head><title>QuickPizza</title></head><body><h1>QuickPizza Admin</h1>`+msg+
			`<form method="post" action="/admin"><input name="username" type="text"><input name="password" type="password">`+
			`<button type="submit">Sign in</button></form><nav><a href="/">Home</a><a href="/admin">Admin</a></nav></body></html>`)
	}
	mux.HandleFunc("GET /admin", admin)
	mux.HandleFunc("POST /admin", admin)
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/x-icon")
		_, _ = w.Write([]byte{0, 0, 1, 0})
	})
}

// testK6IORoutes serves test.k6.io's pages at the stand-in's root, as
// far as k6's docs read them (quickpizza.grafana.com keeps them, its
// contact, news and messages pages at the same paths).
func testK6IORoutes(mux *http.ServeMux) {
	page := func(title, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=UTF-8")
			_, _ = fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>%s</title></head><body>%s</body></html>", title, body)
		}
	}
	mux.HandleFunc("GET /contacts.php", page("Contact us", `<h3>Contact us</h3><p>A stand-in of test.k6.io's contacts page.</p>`))
	mux.HandleFunc("GET /news.php", page("In the news", `<h3>In the news</h3><ul><li>k6 stand-in</li></ul>`))
	mux.HandleFunc("GET /browser.php", page("Browser test", `<h1>Browser test</h1>`))
	mux.HandleFunc("GET /my_messages.php", page("My messages", `<h2>Unauthorized</h2><form action="/login.php" method="post">`+
		`<input type="hidden" name="csrftoken" value="tok-123"><input name="login"><input name="password" type="password"></form>`))
	mux.HandleFunc("GET /admin.php", page("Admin", `<h2>Admin</h2>`))
	mux.HandleFunc("GET /flip_coin.php", func(w http.ResponseWriter, r *http.Request) {
		bet := r.URL.Query().Get("bet")
		if bet != "heads" && bet != "tails" {
			bet = "heads"
		}
		page("Flip a coin", "<p>Your bet: <strong>"+bet+"</strong>. Result: <strong>heads</strong>.</p>")(w, r)
	})
	mux.HandleFunc("GET /images/logo.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	// httpbin's /status/N answers N.
	mux.HandleFunc("/status/{status}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("status"))
		if err != nil || n < 100 || n > 599 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(n)
	})
}
