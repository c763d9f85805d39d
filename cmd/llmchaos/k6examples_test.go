package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// k6ExampleHost matches a URL's origin on a host k6's examples name,
// credentials kept: the test rewrites only that host to the stand-in's.
var k6ExampleHost = regexp.MustCompile(`(https?)://([^/@"'\s]+@)?(httpbin\.org|quickpizza\.grafana\.com|api\.github\.com|localhost:8080|sha256\.badssl\.com)`)

// k6ExampleDomain matches a host k6's examples name as a cookie's domain
// (a quoted bare host name).
var k6ExampleDomain = regexp.MustCompile(`(["'])(httpbin\.org|quickpizza\.grafana\.com)(["'])`)

// withStandInHosts is a script with each host k6's examples name replaced
// by the stand-in's: in a URL its address for the URL's scheme, as a
// cookie domain its IP; nothing else changes.
func withStandInHosts(src string, h *k6ExampleHosts) string {
	src = k6ExampleDomain.ReplaceAllString(src, "${1}127.0.0.1${3}")
	return k6ExampleHost.ReplaceAllStringFunc(src, func(m string) string {
		sub := k6ExampleHost.FindStringSubmatch(m)
		addr := h.plain
		switch {
		case sub[3] == "sha256.badssl.com":
			addr = h.legacyTLS
		case sub[1] == "https":
			addr = h.tls
		}
		return sub[1] + "://" + sub[2] + addr
	})
}

// k6Example is one script of k6's repository (grafana/k6's examples/, read
// from the folder LLMCHAOS_K6_EXAMPLES names) and what k6 gives for it against
// hosts that answer as the real ones do.
type k6Example struct {
	file string
	args []string // k6 run flags besides the outputs
	code int      // k6's exit code
	// codeFromThresholds: the script's thresholds depend on chance or on
	// timing, so k6's code is 99 exactly when the summary export says one
	// failed, else code.
	codeFromThresholds bool
	failing            []string // checks that fail in k6 (every other one passes)
	either             []string // checks whose outcome is left to chance by the script
	untrusted          bool     // the stand-in's certificate is not trusted (the script must skip verification)
	checks             int      // distinct check names the script has
	console            []string // lines the script logs: part of "level message" (level as k6 names it)
	hidden             []string // what the script logs that k6 does not show (console.debug without --verbose)
	stderr             []string // what k6 also reports on stderr (an iteration's exception at its source position)
	served             map[string]int
}

// k6Examples are the example scripts of k6's repository that use only the
// modules llmchaos has. Left out, with the reason: browser/, grpc_*,
// websocket*, experimental/, secrets/ (modules llmchaos does not have); ocsp.js (OCSP stapling); pantheon*.js (a whole Drupal shop with
// 30 s think times).
// malicious.js, an endless loop, has its own test (Ctrl-C ends it).
func k6Examples() []k6Example {
	md := func(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	b64 := func(s string) string { h := sha1.Sum([]byte(s)); return base64.StdEncoding.EncodeToString(h[:]) }
	jwtHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","alg":"HS256"}`))
	jwtPayload := base64.RawURLEncoding.EncodeToString([]byte(`{"key2":"value2"}`))
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte(jwtHeader + "." + jwtPayload))
	jwt := jwtHeader + "." + jwtPayload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	timerLines := make([]string, 11) // logline's timestamps: only their count is known
	return append([]k6Example{
		{file: "base64.js", checks: 8},
		{file: "cookies.js", checks: 21},
		{file: "crypto.js", console: []string{md("some text"), md("some other text"), b64("some other text")}},
		{file: "custom_metrics.js", checks: 1, console: []string{"my_counter  is config ready"}},
		{file: "es6sample.js", checks: 8, codeFromThresholds: true, failing: []string{"always fails"}, either: []string{"top-level test"}},
		{file: "graphql.js", served: map[string]int{"POST /graphql": 2}},
		{file: "html_form_post.js", checks: 6},
		{file: "http_2.js", checks: 2},
		{file: "http_basic_auth.js", checks: 3},
		{file: "http_batch.js", checks: 3},
		{file: "http_digest_auth.js", checks: 3},
		{file: "http_get.js", served: map[string]int{"GET /": 1}},
		{file: "http_verbs.js", checks: 2},
		{file: "json.js", checks: 2},
		{file: "jwt.js", console: []string{"encoded " + jwt, `decoded {"key2":"value2"}`}},
		{file: "localhost.js", checks: 1, codeFromThresholds: true},
		{file: "logging.js", console: []string{"info log a b", "info info a b", "warning warn a b", "error error a b"}, hidden: []string{"debug a b"}},
		{file: "redirects.js", checks: 3, console: []string{"200"}},
		{file: "stages.js", checks: 1},
		{file: "tagging.js", checks: 1},
		{file: "thresholds.js", served: map[string]int{"GET /": 1, "POST /post": 1}},
		// Five minutes of stages; k6's -u/-d replace them (as for any
		// script), the thresholds and checks stay as written.
		{file: "thresholds_readme_example.js", checks: 4, args: []string{"-u", "2", "-d", "2s"}},
		{file: "timers.js", console: timerLines},
		{file: "tls_skip_cert_verification.js", checks: 1, untrusted: true},
		{file: "tlsconfig.js", checks: 2},
		{file: "enhanced/script.ts", console: []string{`{"name":"John","id":`}},
		{file: "enhanced/abort.ts", code: exitcode.ScriptAborted},
		// An exception thrown in an imported module is an iteration's
		// failure at its own file and line (exit 0, as k6).
		{file: "source_map/issue_1804/main.js", stderr: []string{"imported.js:6:", "at f2 (", "main.js:4:"}},
		// TypeScript, and webpack's output of it with an inline source
		// map: the exception is placed in the TypeScript source.
		{file: "source_map/typescript_template/test1.ts", stderr: []string{"test1.ts:2:", "cool is cool"}},
		{file: "source_map/typescript_template/test1.js", stderr: []string{"webpack:///./test1.ts:2:", "cool is cool"}},
		{file: "docker-compose/influxdb-v1/script.js", checks: 2},
		// Three minutes of 10 VUs; -d shortens it, the threshold on
		// http_reqs{expected_response:true} stays.
		{file: "docker-compose/opentelemetry/script.js", checks: 2, args: []string{"-d", "2s"}},
	}, k6WebCryptoExamples()...)
}

// k6WebCryptoExamples are k6's examples of the global crypto: each logs
// what it made, and throws nothing (no error name shows).
func k6WebCryptoExamples() []k6Example {
	wc := func(file string, console ...string) k6Example {
		return k6Example{file: "webcrypto/" + file, console: console, hidden: []string{"Error"}}
	}
	deciphered := "deciphered text == original text:  true"
	return []k6Example{
		wc("derive_bits/derive-bits-ecdh.js", "alice shared secret: ", "bob shared secret: "),
		wc("derive_bits/derive-bits-pbkdf2.js", "Derived Bits:  ["), // of a random salt
		wc("derive_key/derive-key-pbkdf2.js", `"name":"AES-GCM"`),
		wc("digest.js", "315f5bdb76d078c43b8ac0064e4a0164612b1fce77c869345bfc94c75894edd3"),
		wc("encrypt_decrypt/encrypt-decrypt-aes-cbc.js", deciphered),
		wc("encrypt_decrypt/encrypt-decrypt-aes-ctr.js", deciphered),
		wc("encrypt_decrypt/encrypt-decrypt-aes-gcm.js", deciphered),
		wc("encrypt_decrypt/encrypt-decrypt-rsa.js", deciphered),
		wc("generateKey/generateKey-RSA-PSS.js", `"name":"RSA-PSS"`),
		wc("generateKey/generateKey-RSASSA-PKCS1-v1_5.js", `"name":"RSASSA-PKCS1-v1_5"`),
		wc("generateKey/generateKey-aes.js", `"name":"AES-CBC"`),
		wc("generateKey/generateKey-ecdh.js", `"name":"ECDH"`),
		wc("generateKey/generateKey-ecdsa.js", `"name":"ECDSA"`),
		wc("generateKey/generateKey-hmac.js", `"name":"HMAC"`),
		wc("getRandomValues.js", make([]string, 10)...), // ten random numbers
		wc("import_export/export-ecdh-keys.js", "exported private key: 48,129,135,2,1,0", "exported public key: 4,"),
		wc("import_export/export-ecdsa-keys.js", "exported private key: 48,129,135,2,1,0", "exported public key: 4,"),
		wc("import_export/export-rsa-spki.js", "exported private key: 48,130,2", "exported public key: 48,129,159"),
		wc("import_export/import-ecdh-key.js", "alice shared secret: ", "bob shared secret: "),
		wc("import_export/import-ecdsa-keys.js", "alice: "),
		wc("import_export/import-export-aes-key.js", `"name":"AES-CBC"`),
		wc("import_export/import-export-hmac-key.js", `"name":"HMAC"`),
		wc("import_export/import-export-jwk-aes-key.js", "exported again: "),
		wc("import_export/import-export-jwk-aes-static-key.js", "exported again: ", `"k":"LhR2VJFb1NJ8HORgOn7LNKLXhUqPsTjC65UAWFb4GKI"`),
		wc("import_export/import-export-jwk-ecdsa.js", "exported again: ", `"crv":"P-521"`),
		wc("import_export/import-export-jwk-hmac-key.js", "exported again: "),
		wc("import_export/import-export-jwk-hmac-static-key.js", "exported again: ", `"k":"H6gLp3lw7w27NrPUn00WpcKU-IJojJdNzhL_8F6se2k"`),
		wc("import_export/import-jwk-base64-decrypt.js", "result: 'my secret message'"),
		wc("import_export/import-raw-base64-decrypt.js", "result: 'my secret message'"),
		wc("randomUUID.js", "-4"),
		wc("sign_verify/sign-verify-ecdsa.js", "verified:  true"),
		wc("sign_verify/sign-verify-hmac.js", "verified:  true"),
		wc("sign_verify/verify-spki-ecdsa-invalid.js", "verified:  false"),
		wc("sign_verify/verify-spki-ecdsa-valid.js", "verified:  true"),
		wc("sign_verify/verify-spki-rsa-valid.js", "private key type: private", "public key type: public", "verified:  true"),
	}
}

// TestK6RepositoryExamplesRunAsInK6 runs k6's own example scripts,
// unmodified but for the hosts they name, through the binary called as
// k6 against a stand-in of those hosts (httpbin.org and quickpizza's pages,
// over HTTP and over TLS with HTTP/2), and holds each to what k6 gives: the
// exit code, every check's outcome (from --summary-export), the lines it
// logs (from --console-output) and the requests the stand-in served.
func TestK6RepositoryExamplesRunAsInK6(t *testing.T) {
	t.Parallel()
	dir := k6ExamplesDir(t)
	k6 := k6Binary(t)
	hosts := startK6ExampleHosts(t)
	for _, ex := range k6Examples() {
		t.Run(ex.file, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(filepath.Join(dir, ex.file))
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			// Beside its imports, under its own name.
			if err := os.CopyFS(work, os.DirFS(filepath.Join(dir, filepath.Dir(ex.file)))); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(work, filepath.Base(ex.file))
			if err := os.WriteFile(script, []byte(withStandInHosts(string(src), hosts)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"run", "--no-color", "--quiet", "--summary-export", "summary.json",
				"--console-output", "console.txt", script}, ex.args...)
			cmd := exec.CommandContext(ctx, k6, args...)
			cmd.Dir = work
			cmd.Env = os.Environ()
			if !ex.untrusted {
				cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+hosts.certFile)
			}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			var sum summaryExport
			if b, err := os.ReadFile(filepath.Join(work, "summary.json")); err != nil {
				t.Fatalf("exit %d and no summary export: %v\n%s", code, err, out)
			} else if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatalf("summary export: %v\n%s", err, b)
			}
			want := ex.code
			if ex.codeFromThresholds && sum.thresholdFailed() {
				want = exitcode.Thresholds
			}
			if code != want {
				t.Errorf("exit %d, want %d\n%s", code, want, out)
			}
			checks := map[string][2]int{}
			sum.RootGroup.collect(checks)
			for name, pf := range checks {
				switch {
				case slices.Contains(ex.either, name):
				case slices.Contains(ex.failing, name):
					if pf[0] != 0 || pf[1] == 0 {
						t.Errorf("check %q: %d passes, %d fails; k6 fails it every time", name, pf[0], pf[1])
					}
				case pf[1] != 0 || pf[0] == 0:
					t.Errorf("check %q: %d passes, %d fails; k6 passes it every time", name, pf[0], pf[1])
				}
			}
			for _, name := range append(slices.Clone(ex.failing), ex.either...) {
				if _, ok := checks[name]; !ok {
					t.Errorf("check %q never ran", name)
				}
			}
			if len(checks) != ex.checks {
				t.Errorf("%d checks ran, the script has %d: %v", len(checks), ex.checks, checks)
			}
			logged, _ := os.ReadFile(filepath.Join(work, "console.txt"))
			lines := k6ConsoleFileMessages(t, string(logged))
			if len(lines) < len(ex.console) {
				t.Errorf("%d lines logged, want %d:\n%s", len(lines), len(ex.console), logged)
			}
			for _, msg := range ex.console {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, msg) }) {
					t.Errorf("no logged line has %q:\n%s", msg, logged)
				}
			}
			for _, h := range ex.hidden {
				if strings.Contains(string(logged)+string(out), h) {
					t.Errorf("%q is shown; k6 shows it only with --verbose:\n%s", h, logged)
				}
			}
			flat := strings.Join(strings.Fields(string(out)), " ") // long lines are folded at spaces
			for _, w := range ex.stderr {
				if !strings.Contains(flat, w) {
					t.Errorf("the output does not name %q:\n%s", w, out)
				}
			}
			for req, n := range ex.served {
				if got := hosts.reqs.served(req); got < n {
					t.Errorf("the stand-in served %d of %s, want at least %d", got, req, n)
				}
			}
		})
	}
}

// k6ConsoleLine is a line of k6's --console-output file without colours:
// its logger's text form, with no field after the message.
var k6ConsoleLine = regexp.MustCompile(`^time="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d))" ` +
	`level=(debug|info|warning|error)(?: msg=("(?:[^"\\]|\\.)*"|[A-Za-z0-9./@^+_-]+))?$`)

// k6ConsoleFileMessages checks that every line of a --console-output file
// is k6's and returns their messages, unquoted, each after its level
// ("info log a b").
func k6ConsoleFileMessages(t *testing.T, logged string) []string {
	t.Helper()
	var msgs []string
	for _, l := range strings.Split(strings.TrimSuffix(logged, "\n"), "\n") {
		if logged == "" {
			break
		}
		m := k6ConsoleLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("console line %q is not k6's (time=\"RFC 3339\" level=L msg=M)", l)
			continue
		}
		msg := m[3]
		if strings.HasPrefix(msg, `"`) {
			var err error
			if msg, err = strconv.Unquote(msg); err != nil {
				t.Errorf("console line %q: msg: %v", l, err)
			}
		}
		msgs = append(msgs, m[2]+" "+msg)
	}
	return msgs
}

// summaryExport is the part of k6's --summary-export this test reads.
type summaryExport struct {
	RootGroup exportGroup                           `json:"root_group"`
	Metrics   map[string]map[string]json.RawMessage `json:"metrics"`
}

// exportGroup is a group of the summary export with its checks and
// sub-groups (an object keyed by name, as k6's legacy export writes them).
type exportGroup struct {
	Checks map[string]struct {
		Passes int `json:"passes"`
		Fails  int `json:"fails"`
	} `json:"checks"`
	Groups map[string]exportGroup `json:"groups"`
}

// collect adds every check of the group and its sub-groups by name.
func (g exportGroup) collect(into map[string][2]int) {
	for name, c := range g.Checks {
		pf := into[name]
		into[name] = [2]int{pf[0] + c.Passes, pf[1] + c.Fails}
	}
	for _, sub := range g.Groups {
		sub.collect(into)
	}
}

// thresholdFailed reports whether the export marks any threshold failed.
func (s summaryExport) thresholdFailed() bool {
	for _, m := range s.Metrics {
		var th map[string]bool
		if raw, ok := m["thresholds"]; ok && json.Unmarshal(raw, &th) == nil {
			for _, failed := range th {
				if failed {
					return true
				}
			}
		}
	}
	return false
}

// TestK6EndlessLoopExampleEndsOnCtrlC runs k6's malicious.js, an iteration
// that loops forever without a call out of JavaScript, and sends the
// process SIGINT once it reports the iteration running: the loop is
// interrupted and the run ends with k6's code for an external abort, its
// summary export written.
func TestK6EndlessLoopExampleEndsOnCtrlC(t *testing.T) {
	t.Parallel()
	dir := k6ExamplesDir(t)
	k6 := k6Binary(t)
	work := t.TempDir()
	script, err := filepath.Abs(filepath.Join(dir, "malicious.js"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k6, "run", "--no-color", "--summary-export", "summary.json", script)
	cmd.Dir = work
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- code
	}()
	waitOutput(t, &out, regexp.MustCompile(`running \(\S+\), 1/1 VUs`), done)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitcode.ScriptExternalAbort {
			t.Errorf("exit %d, want %d\n%s", code, exitcode.ScriptExternalAbort, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not end within 30s of SIGINT:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(work, "summary.json")); err != nil {
		t.Errorf("no summary export after the interrupt: %v", err)
	}
}

// k6ExamplesEnv names the folder of k6's example scripts: the examples/
// folder of a checkout of grafana/k6 (make k6-examples fills one from a
// local snapshot). k6's scripts are published under the AGPL with the rest
// of that repository, so llmchaos keeps none of them; the scripts written
// for llmchaos in k6's style are testdata/k6docs.
const k6ExamplesEnv = "LLMCHAOS_K6_EXAMPLES"

// k6ExamplesDir is the folder LLMCHAOS_K6_EXAMPLES names, checked to hold
// every script the tests run; without the variable the test is skipped,
// saying how to run it.
func k6ExamplesDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(k6ExamplesEnv)
	if dir == "" {
		t.Skipf("%s is not set: it names the examples/ folder of a checkout of grafana/k6 (AGPL, not kept here); "+
			"make k6-examples K6_REPO=DIR runs this test", k6ExamplesEnv)
	}
	for _, ex := range append(k6Examples(), k6Example{file: "malicious.js"}) {
		if _, err := os.Stat(filepath.Join(dir, ex.file)); err != nil {
			t.Fatalf("%s=%s does not hold k6's %s: %v", k6ExamplesEnv, dir, ex.file, err)
		}
	}
	return dir
}
