package js

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestHTTPTLSFieldsAndSkippingVerification: a request to a server whose
// certificate nobody trusts fails with k6's error code 1310 (unknown
// authority) until the script's insecureSkipTLSVerify is set; then the
// response names the TLS version (http.TLS_1_x's value) and cipher suite
// the server saw, and HTTP/2.
func TestHTTPTLSFieldsAndSkippingVerification(t *testing.T) {
	var mu sync.Mutex
	var seen *tls.ConnectionState
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.TLS
		mu.Unlock()
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := writeScripts(t, map[string]string{"script.js": `
import http from 'k6/http';
export default function () {
  const r = http.get(__ENV.BASE);
  if (__ENV.SKIP !== '1') {
    eq(r.status, 0, 'untrusted: no response');
    eq(r.error_code, 1310, 'untrusted: k6 error code');
    return;
  }
  eq(r.status, 200, 'status');
  eq(r.proto, 'HTTP/2.0', 'proto');
  eq(r.tls_version, __ENV.WANT_VERSION, 'tls_version');
  eq([http.TLS_1_0, http.TLS_1_1, http.TLS_1_2, http.TLS_1_3].join(), 'tls1.0,tls1.1,tls1.2,tls1.3', 'constants');
  eq(r.tls_cipher_suite, __ENV.WANT_SUITE, 'tls_cipher_suite');
}
` + jsAsserts})
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		env := map[string]string{"BASE": srv.URL}
		if skip {
			// The server's choice, known once a first connection is made.
			c := srv.Client()
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			c.CloseIdleConnections()
			mu.Lock()
			env["SKIP"], env["WANT_VERSION"], env["WANT_SUITE"] = "1", tlsVersions[seen.Version], tls.CipherSuiteName(seen.CipherSuite)
			mu.Unlock()
		}
		sh, err := NewShared(SharedOptions{Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.SetHTTPOptions(HTTPOptions{InsecureSkipTLSVerify: skip}); err != nil {
			t.Fatal(err)
		}
		vu, err := NewVU(context.Background(), 1, prog, sh)
		if err != nil {
			t.Fatal(err)
		}
		if it := runDefault(context.Background(), t, vu); it.Err != nil {
			t.Errorf("insecureSkipTLSVerify %v: %v", skip, it.Err)
		}
		sh.Close()
		if skip {
			mu.Lock()
			if v, s := tlsVersions[seen.Version], tls.CipherSuiteName(seen.CipherSuite); v != env["WANT_VERSION"] || s != env["WANT_SUITE"] {
				t.Errorf("the server saw the script's request as %s %s, the script's response said %s %s", v, s, env["WANT_VERSION"], env["WANT_SUITE"])
			}
			mu.Unlock()
		}
	}
}

// TestSetHTTPOptionsRefusesWhatK6Refuses: an unknown TLS version or cipher
// suite name and a negative maxRedirects are errors naming the option.
func TestSetHTTPOptionsRefusesWhatK6Refuses(t *testing.T) {
	neg := -1
	for _, tt := range []struct {
		o    HTTPOptions
		want string
	}{
		{HTTPOptions{TLSMin: "tls1.4"}, `tlsVersion.min "tls1.4"`},
		{HTTPOptions{TLSMax: "TLS12"}, `tlsVersion.max "TLS12"`},
		{HTTPOptions{TLSCipherSuites: []string{"TLS_RSA_WITH_AES_128_GCM_SHA256", "RC4"}}, `unknown cipher suite "RC4"`},
		{HTTPOptions{MaxRedirects: &neg}, "maxRedirects -1"},
	} {
		sh, err := NewShared(SharedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.SetHTTPOptions(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want an error with %q", tt.o, err, tt.want)
		}
		sh.Close()
	}
	sh, err := NewShared(SharedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	ok := HTTPOptions{TLSMin: "tls1.0", TLSMax: "tls1.2", TLSCipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_AES_128_GCM_SHA256"}}
	if err := sh.SetHTTPOptions(ok); err != nil {
		t.Errorf("tlsconfig.js's options: %v", err)
	}
	if got := sh.http.tr.TLSClientConfig; got.MinVersion != tls.VersionTLS10 || got.MaxVersion != tls.VersionTLS12 ||
		len(got.CipherSuites) != 2 || got.CipherSuites[0] != tls.TLS_RSA_WITH_RC4_128_SHA {
		t.Errorf("TLS config %+v", got)
	}
}
