package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// k6DocsStandIn is the local stand-in of the hosts the k6docs scripts
// name: a page, a slow page, any status, a JSON echo and an endpoint that
// checks an HMAC-SHA256 signature and basic auth.
func k6DocsStandIn(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><head><title>stand-in</title></head><body><h1>hello</h1></body></html>")
	})
	mux.HandleFunc("GET /html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, standInShop)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("csrftoken") != "tok-123" ||
			r.PostForm.Get("login") != "admin" || r.PostForm.Get("password") != "123" || r.PostForm.Get("remember") != "on" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<html><body><h2>Welcome, admin!</h2><a href="/logout?from=login">Log out</a></body></html>`)
	})
	mux.HandleFunc("GET /logout", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body><p id=\"bye\">Logged out from "+html.EscapeString(r.URL.Query().Get("from"))+"</p></body></html>")
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(30 * time.Millisecond)
		_, _ = io.WriteString(w, "slow")
	})
	mux.HandleFunc("GET /status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(code)
	})
	mux.HandleFunc("POST /api/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, r.Body)
	})
	mux.HandleFunc("POST /api/signed", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte("secret-key"))
		m.Write(body)
		user, pass, ok := r.BasicAuth()
		if !ok || user != "user" || pass != "passwd" || r.Header.Get("X-Signature") != hex.EncodeToString(m.Sum(nil)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var in map[string]any
		_ = json.Unmarshal(body, &in)
		sum := sha256.Sum256(body)
		in["sha256"] = hex.EncodeToString(sum[:])
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(in)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// standInShop is the stand-in's HTML page: links (relative, absolute,
// with credentials and a port), data-* attributes, a login form the
// stand-in's POST /login accepts, and a table.
const standInShop = `<!DOCTYPE html>
<html lang="en">
<head><title>stand-in shop</title>
<link rel="stylesheet preload" href="/static/style.css">
<meta name="csrf-token" content="tok-123">
</head>
<body>
<h1 class="title main">Products</h1>
<ul id="products">
 <li data-id="1" data-unit-price="9.5" data-tags='["a","b"]' data-new="true"><a href="/p/1?ref=list#top">Lamp</a></li>
 <li data-id="2"><a href="https://user:pw@other.example:8443/p/2">Chair</a></li>
 <li data-id="3" class="sold-out"><a href="p/3">Desk</a></li>
</ul>
<form id="login" action="/login" method="POST">
 <input type="hidden" name="csrftoken" value="tok-123">
 <input type="text" name="login" value="">
 <input type="password" name="password">
 <input type="checkbox" name="remember" checked="checked">
 <select name="lang"><option value="en" selected>English</option><option>French</option></select>
 <textarea name="note">hello</textarea>
 <input type="submit" name="go" value="Go">
</form>
<table id="prices">
 <thead><tr><th>item</th><th>price</th></tr></thead>
 <tbody><tr><td>Lamp</td><td>9.5</td></tr><tr><td>Chair</td><td colspan="2">sold</td></tr></tbody>
</table>
</body>
</html>
`

// expectedExit reads a script's "// expect: exit N" header.
var expectedExit = regexp.MustCompile(`(?m)^// expect: exit (\d+)$`)

// TestK6DocsScriptsExitAsK6 runs each script of testdata/k6docs —
// written in the style of k6's examples and documentation with only the
// modules llmchaos has, the host made a local stand-in — through `k6 run`
// and checks the exit code k6 would give, which its header states.
func TestK6DocsScriptsExitAsK6(t *testing.T) {
	t.Parallel()
	base := k6DocsStandIn(t)
	files, err := filepath.Glob(filepath.Join("testdata", "k6docs", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m := expectedExit.FindSubmatch(src)
			if m == nil {
				t.Fatalf("%s has no // expect: exit N header", file)
			}
			want, _ := strconv.Atoi(string(m[1]))
			var out, errb bytes.Buffer
			code := executeK6(context.Background(), []string{"run", file, "-e", "BASE_URL=" + base, "--quiet", "--no-color"}, &out, &errb)
			if code != want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, out.String(), errb.String())
			}
		})
	}
}
