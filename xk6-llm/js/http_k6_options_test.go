package js

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"golang.org/x/crypto/ocsp"
)

// testCert is a certificate made for a test and its key.
type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	tls  tls.Certificate
}

// pemCert and pemKey are c's certificate and key in PEM, as k6's tlsAuth
// takes them.
func (c testCert) pemCert() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw}))
}

func (c testCert) pemKey(t *testing.T) string {
	der, err := x509.MarshalECPrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

// newTestCert makes a certificate for cn signed by parent (self-signed
// when parent is nil); ca makes it a CA, ips are its addresses.
func newTestCert(t *testing.T, cn string, parent *testCert, ca bool, ips ...net.IP) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        ca, BasicConstraintsValid: true, IPAddresses: ips,
	}
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{cert: cert, key: key, tls: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}
}

// TestHTTPResponseOCSP: res.ocsp is k6's object: zero times and status ""
// without TLS, status "unknown" for a TLS server that staples nothing,
// and the stapled response's status, reason and times (Unix seconds)
// when the server staples one; the OCSP constants are k6's names.
func TestHTTPResponseOCSP(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plain.Close)
	bare := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(bare.Close)

	leaf := newTestCert(t, "127.0.0.1", nil, true, net.IPv4(127, 0, 0, 1))
	now := time.Now().UTC().Truncate(time.Second)
	staple, err := ocsp.CreateResponse(leaf.cert, leaf.cert, ocsp.Response{
		Status: ocsp.Revoked, SerialNumber: leaf.cert.SerialNumber, ThisUpdate: now.Add(-time.Hour),
		NextUpdate: now.Add(time.Hour), RevokedAt: now.Add(-2 * time.Hour), RevocationReason: ocsp.KeyCompromise,
	}, leaf.key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ocsp.ParseResponse(staple, nil)
	if err != nil {
		t.Fatal(err)
	}
	stapled := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	c := leaf.tls
	c.OCSPStaple = staple
	stapled.TLS = &tls.Config{Certificates: []tls.Certificate{c}}
	stapled.StartTLS()
	t.Cleanup(stapled.Close)

	src := `import http from 'k6/http';
export default function () {
  const o = (url) => { const r = http.get(url); eq(r.status, 200, url); return JSON.stringify(r.ocsp); };
  const z = (s) => JSON.stringify({produced_at: 0, this_update: 0, next_update: 0, revocation_reason: '', revoked_at: 0, status: s});
  eq(o(__ENV.PLAIN), z(''), 'plain HTTP');
  eq(o(__ENV.BARE), z('unknown'), 'TLS without a stapled response');
  eq(o(__ENV.STAPLED), JSON.stringify({produced_at: ` + strconv.FormatInt(parsed.ProducedAt.Unix(), 10) + `,
    this_update: ` + strconv.FormatInt(now.Add(-time.Hour).Unix(), 10) + `, next_update: ` + strconv.FormatInt(now.Add(time.Hour).Unix(), 10) + `,
    revocation_reason: http.OCSP_REASON_KEY_COMPROMISE, revoked_at: ` + strconv.FormatInt(now.Add(-2*time.Hour).Unix(), 10) + `,
    status: http.OCSP_STATUS_REVOKED}), 'stapled');
  eq([http.OCSP_STATUS_GOOD, http.OCSP_STATUS_REVOKED, http.OCSP_STATUS_SERVER_FAILED, http.OCSP_STATUS_UNKNOWN].join(),
    'good,revoked,server_failed,unknown', 'statuses');
  eq([http.OCSP_REASON_UNSPECIFIED, http.OCSP_REASON_CA_COMPROMISE, http.OCSP_REASON_AFFILIATION_CHANGED,
    http.OCSP_REASON_SUPERSEDED, http.OCSP_REASON_CESSATION_OF_OPERATION, http.OCSP_REASON_CERTIFICATE_HOLD,
    http.OCSP_REASON_REMOVE_FROM_CRL, http.OCSP_REASON_PRIVILEGE_WITHDRAWN, http.OCSP_REASON_AA_COMPROMISE].join(),
    'unspecified,ca_compromise,affiliation_changed,superseded,cessation_of_operation,certificate_hold,' +
    'remove_from_crl,privilege_withdrawn,aa_compromise', 'reasons');
}
` + jsAsserts
	r := runIteration(context.Background(), t, src, map[string]string{"PLAIN": plain.URL, "BARE": bare.URL, "STAPLED": stapled.URL},
		func(sh *Shared) {
			if err := sh.SetHTTPOptions(HTTPOptions{InsecureSkipTLSVerify: true}); err != nil {
				t.Fatal(err)
			}
		})
	r.mustPass(t)
}

// withHTTPOptions sets the script options o on the run's shared state.
func withHTTPOptions(t *testing.T, o HTTPOptions) func(*Shared) {
	return func(sh *Shared) {
		if err := sh.SetHTTPOptions(o); err != nil {
			t.Fatal(err)
		}
	}
}

// headerEcho answers each request with the User-Agent header it got
// (or "<none>") and sets a cookie on /set.
func headerEcho(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "42", Path: "/"})
		}
		ua, ok := r.Header["User-Agent"]
		if !ok {
			ua = []string{"<none>"}
		}
		_, _ = w.Write([]byte(strings.Join(ua, "|") + " host=" + r.Host))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPRequestHeadersAreWhatWasSent: res.request.headers lists what
// went out: the default User-Agent (llmchaos's), a params header, the
// form Content-Type, the jar's cookies and a Host given in params; the
// userAgent option replaces the default, and userAgent "" sends none
// (k6 shows it as [""]); a request's own User-Agent wins over both.
func TestHTTPRequestHeadersAreWhatWasSent(t *testing.T) {
	srv := headerEcho(t)
	src := `import http from 'k6/http';
export default function () {
  const want = __ENV.UA === undefined ? 'llmchaos' : __ENV.UA;
  let r = http.get(__ENV.BASE + '/set');
  eq(r.body.split(' ')[0], want === '' ? '<none>' : want, 'the User-Agent the server got');
  eq(JSON.stringify(r.request.headers), JSON.stringify({'User-Agent': [want]}), 'request.headers');
  r = http.post(__ENV.BASE + '/form', {a: '1'}, {headers: {'X-Trace': 't1'}});
  const h = r.request.headers;
  eq(JSON.stringify(Object.keys(h).sort()), JSON.stringify(['Content-Type', 'Cookie', 'User-Agent', 'X-Trace']), 'names');
  eq(h['Cookie'][0], 'sid=42', 'the jar cookie');
  eq(h['Content-Type'][0], 'application/x-www-form-urlencoded', 'form');
  r = http.get(__ENV.BASE, {headers: {'User-Agent': 'mine/1', Host: 'named.test'}});
  eq(r.body, 'mine/1 host=named.test', 'params User-Agent and Host sent');
  eq(r.request.headers['User-Agent'][0], 'mine/1', 'params User-Agent shown');
  eq(r.request.headers['Host'][0], 'named.test', 'Host shown');
}
` + jsAsserts
	for _, ua := range []*string{nil, new(""), new("custom/2.0")} {
		env := map[string]string{"BASE": srv.URL}
		name := "default"
		if ua != nil {
			env["UA"], name = *ua, strconv.Quote(*ua)
		}
		t.Run(name, func(t *testing.T) {
			runIteration(context.Background(), t, src, env, withHTTPOptions(t, HTTPOptions{UserAgent: ua})).mustPass(t)
		})
	}
}

// TestHTTPDiscardResponseBodies: under discardResponseBodies a body is
// null unless the request's responseType asks for it, and it is still
// read (data_received counts it).
func TestHTTPDiscardResponseBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
	}))
	t.Cleanup(srv.Close)
	src := `import http from 'k6/http';
export default function () {
  eq(http.get(__ENV.BASE).body, null, 'discarded');
  eq(http.get(__ENV.BASE, {responseType: 'text'}).body.length, 5000, 'asked for as text');
  eq(http.get(__ENV.BASE, {responseType: 'binary'}).body.byteLength, 5000, 'asked for as binary');
  eq(http.batch([__ENV.BASE])[0].body, null, 'batch: discarded');
}
` + jsAsserts
	r := runIteration(context.Background(), t, src, map[string]string{"BASE": srv.URL}, withHTTPOptions(t, HTTPOptions{DiscardResponseBodies: true}))
	r.mustPass(t)
	if got := r.sumOf(MetricDataReceived, recording.TagFilter{}); got < 4*5000 {
		t.Errorf("data_received = %v, want at least the 4 bodies (20000 B): a discarded body is still read", got)
	}
}

// TestHTTPHostsOverrideDNS: a name in hosts goes to its IP (with the
// request's port) or IP:port; a host:port key wins over the name; a
// *.suffix pattern matches names at any depth below it.
func TestHTTPHostsOverrideDNS(t *testing.T) {
	srv := headerEcho(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	src := `import http from 'k6/http';
export default function () {
  for (const url of ['http://api.test:` + port + `/', 'http://Api.Test:` + port + `/', 'http://moved.test/', 'http://a.b.wild.test/']) {
    const r = http.get(url);
    eq(r.status, 200, url + ': ' + r.error);
    eq(r.remote_ip, '127.0.0.1', url + ' remote_ip');
    eq(r.body.split(' host=')[1].toLowerCase(), url.split('/')[2].toLowerCase(), url + ': the Host header keeps the name');
  }
}
` + jsAsserts
	runIteration(context.Background(), t, src, nil, withHTTPOptions(t, HTTPOptions{Hosts: map[string]string{
		"api.test":      "127.0.0.1",
		"moved.test:80": "127.0.0.1:" + port,
		"moved.test":    "127.0.0.2:1",
		"*.wild.test":   "127.0.0.1:" + port,
	}})).mustPass(t)
}

// TestHostsMapResolve: which entry a dial address takes, k6's way.
func TestHostsMapResolve(t *testing.T) {
	h, errs := newHostsMap(map[string]string{
		"a.test": "10.0.0.1", "a.test:8443": "10.0.0.2:9", "*.w.test": "10.0.0.3", "*.x.w.test": "10.0.0.4:7",
		"v6.test": "::1",
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct{ addr, want string }{
		{"a.test:80", "10.0.0.1:80"},
		{"A.TEST:80", "10.0.0.1:80"},
		{"a.test:8443", "10.0.0.2:9"},
		{"b.w.test:443", "10.0.0.3:443"},
		{"c.b.w.test:443", "10.0.0.3:443"},
		{"y.x.w.test:443", "10.0.0.4:7"},
		{"v6.test:80", "[::1]:80"},
		{"other.test:80", "other.test:80"},
	} {
		if got := h.resolve(c.addr); got != c.want {
			t.Errorf("resolve(%q) = %q, want %q", c.addr, got, c.want)
		}
	}
	// A lone * matches every host:port first, as k6's trie does, even
	// where a name has an entry of its own.
	h, _ = newHostsMap(map[string]string{"a.test": "10.0.0.1", "*": "10.0.0.9:1"})
	if got := h.resolve("a.test:80"); got != "10.0.0.9:1" {
		t.Errorf(`with "*": resolve("a.test:80") = %q, want 10.0.0.9:1`, got)
	}
	h, _ = newHostsMap(map[string]string{"*.w.test": "10.0.0.3"})
	if got := h.resolve("w.test:80"); got != "w.test:80" {
		t.Errorf("*.w.test matched w.test itself (%q): k6's pattern needs a label before the suffix", got)
	}
	_, errs = newHostsMap(map[string]string{"bad host": "10.0.0.1", "ok.test": "not-an-ip", "p.test": "10.0.0.1:99999"})
	var msgs []string
	for _, e := range errs {
		var oe *HTTPOptionError
		if !errors.As(e, &oe) {
			t.Fatalf("%v is not an *HTTPOptionError", e)
		}
		msgs = append(msgs, e.Error())
	}
	for _, want := range []string{`hosts["bad host"]: not a host name`, `hosts["ok.test"] "not-an-ip": want an IP address`, `hosts["p.test"] "10.0.0.1:99999"`} {
		if !strings.Contains(strings.Join(msgs, "\n"), want) {
			t.Errorf("errors %q lack %q", msgs, want)
		}
	}
}

// connLog is a server that answers each request with the remote
// address it came from.
func connLog(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.RemoteAddr))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPNoConnectionReuseOptions: noConnectionReuse sends each request
// on a connection of its own; noVUConnectionReuse keeps one within an
// iteration and a new one for the next; without them the VU's requests
// share one keep-alive connection throughout.
func TestHTTPNoConnectionReuseOptions(t *testing.T) {
	srv := connLog(t)
	src := `import http from 'k6/http';
export default function () {
  const a = http.get(__ENV.BASE).body, b = http.get(__ENV.BASE).body;
  if (__ENV.WANT_SAME === '1') { eq(a, b, 'one connection within the iteration'); }
  else { eq(a === b, false, 'a connection per request'); }
  console.log(a);
}
` + jsAsserts
	for _, c := range []struct {
		name                 string
		o                    HTTPOptions
		sameIter, sameAcross bool
	}{
		{"default", HTTPOptions{}, true, true},
		{"noConnectionReuse", HTTPOptions{NoConnectionReuse: true}, false, false},
		{"noVUConnectionReuse", HTTPOptions{NoVUConnectionReuse: true}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"BASE": srv.URL, "WANT_SAME": map[bool]string{true: "1", false: "0"}[c.sameIter]}
			vu, _, console := scriptVU(t, src, env, withHTTPOptions(t, c.o))
			for i := range 2 {
				if it := runDefault(context.Background(), t, vu); it.Err != nil {
					t.Fatalf("iteration %d: %v", i, it.Err)
				}
			}
			lines := strings.Split(strings.TrimSpace(console()), "\n")
			if len(lines) != 2 {
				t.Fatalf("console %q: want a line per iteration", console())
			}
			if same := lines[0] == lines[1]; same != c.sameAcross {
				t.Errorf("iterations' connections %q: same %v, want %v", lines, same, c.sameAcross)
			}
		})
	}
}

// TestHTTPTLSAuthPresentsTheClientCertificate: a server that requires a
// client certificate from its CA refuses a run without tlsAuth and
// answers one whose tlsAuth holds a certificate from that CA (after one
// the server does not accept: Go picks by the server's CAs, as in k6);
// a key that does not match its certificate is an option error.
func TestHTTPTLSAuthPresentsTheClientCertificate(t *testing.T) {
	ca := newTestCert(t, "test CA", nil, true)
	other := newTestCert(t, "other CA", nil, true)
	client := newTestCert(t, "vu-client", &ca, false)
	stranger := newTestCert(t, "stranger", &other, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	src := `import http from 'k6/http';
export default function () {
  const r = http.get(__ENV.BASE);
  if (__ENV.AUTH !== '1') {
    eq(r.status, 0, 'without a client certificate: no response');
    eq(r.error !== '', true, 'an error');
    return;
  }
  eq(r.status, 200, 'status: ' + r.error);
  eq(r.body, 'vu-client', 'the certificate the server saw');
}
` + jsAsserts
	auth := []TLSAuth{
		{Cert: stranger.pemCert(), Key: stranger.pemKey(t), Domains: []string{"elsewhere.test"}},
		{Cert: client.pemCert(), Key: client.pemKey(t), Domains: []string{"127.0.0.1"}},
	}
	for _, withAuth := range []bool{false, true} {
		o := HTTPOptions{InsecureSkipTLSVerify: true}
		env := map[string]string{"BASE": srv.URL}
		if withAuth {
			o.TLSAuth, env["AUTH"] = auth, "1"
		}
		runIteration(context.Background(), t, src, env, withHTTPOptions(t, o)).mustPass(t)
	}
	sh, err := NewShared(SharedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	err = sh.SetHTTPOptions(HTTPOptions{TLSAuth: []TLSAuth{{Cert: client.pemCert(), Key: stranger.pemKey(t)}}})
	var oe *HTTPOptionError
	if !errors.As(err, &oe) || oe.Option != "tlsAuth[0]" {
		t.Errorf("a key that is not the certificate's: %v, want an error naming tlsAuth[0]", err)
	}
}

// TestHTTPThrowOption: under throw a request that gets no response
// throws (http.request, http.batch, a rejected asyncRequest), unless its
// params.throw is false; an HTTP error status never throws.
func TestHTTPThrowOption(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	src := `import http from 'k6/http';
function throws(f, what) {
  try { f(); } catch (e) { if (String(e).indexOf('connection refused') < 0) { throw new Error(what + ': ' + e); } return; }
  throw new Error(what + ': did not throw');
}
export default async function () {
  eq(http.get(__ENV.OK).status, 500, 'an error status does not throw');
  throws(() => http.get(__ENV.DEAD), 'http.get');
  throws(() => http.batch([__ENV.OK, __ENV.DEAD]), 'http.batch');
  eq(http.get(__ENV.DEAD, {throw: false}).error_code, 1212, 'params.throw false');
  let rejected = '';
  await http.asyncRequest('GET', __ENV.DEAD).catch((e) => { rejected = String(e); });
  eq(rejected.indexOf('connection refused') >= 0, true, 'asyncRequest rejects: ' + rejected);
}
` + jsAsserts
	runIteration(context.Background(), t, src, map[string]string{"OK": srv.URL, "DEAD": dead}, withHTTPOptions(t, HTTPOptions{Throw: true})).mustPass(t)
}

// TestHTTPBatchPerHost: http.batch keeps at most batchPerHost requests
// in flight to one host. The server holds each request until a third
// arrives or a while passes, so a broken limit shows as three at once.
func TestHTTPBatchPerHost(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	third := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == 3 {
			close(third)
		}
		mu.Unlock()
		select {
		case <-third:
		case <-time.After(50 * time.Millisecond):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	src := `import http from 'k6/http';
export default function () {
  const rs = http.batch(Array(6).fill(__ENV.BASE));
  eq(rs.filter((r) => r.status === 200).length, 6, 'all answered');
}
` + jsAsserts
	runIteration(context.Background(), t, src, map[string]string{"BASE": srv.URL}, withHTTPOptions(t, HTTPOptions{BatchPerHost: new(2)})).mustPass(t)
	if most > 2 {
		t.Errorf("%d requests in flight at once, want at most batchPerHost (2)", most)
	}
}

// TestHTTPNoCookiesResetAndHTTPDebugOptions: under noCookiesReset the
// VU's jar keeps a cookie into the next iteration (without it each
// iteration starts empty); the httpDebug option logs requests as
// --http-debug does.
func TestHTTPNoCookiesResetAndHTTPDebugOptions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "42", Path: "/"})
		}
		_, _ = w.Write([]byte("cookie=" + r.Header.Get("Cookie")))
	}))
	t.Cleanup(srv.Close)
	src := `import http from 'k6/http';
let n = 0;
export default function () {
  console.log(http.get(__ENV.BASE + (n++ === 0 ? '/set' : '/echo')).body);
}
`
	for _, keep := range []bool{false, true} {
		var log strings.Builder
		var mu sync.Mutex
		vu, _, console := scriptVU(t, src, map[string]string{"BASE": srv.URL}, func(sh *Shared) {
			sh.log = lockedWriter{&mu, &log}
		}, withHTTPOptions(t, HTTPOptions{NoCookiesReset: keep, HTTPDebug: "headers"}))
		for i := range 2 {
			if it := runDefault(context.Background(), t, vu); it.Err != nil {
				t.Fatalf("iteration %d: %v", i, it.Err)
			}
		}
		want := "cookie="
		if keep {
			want = "cookie=sid=42"
		}
		if lines := strings.Split(strings.TrimSpace(console()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `msg="`+want+`"`) {
			t.Errorf("noCookiesReset %v: console %q, want the second iteration to log %q", keep, lines, want)
		}
		mu.Lock()
		if !strings.Contains(log.String(), "GET /echo HTTP/1.1") {
			t.Errorf("httpDebug headers: the log lacks the request:\n%s", log.String())
		}
		mu.Unlock()
	}
}

// TestHTTPBlockHostnamesAndBlacklistIPs: a blocked name fails with k6's
// 1111 before any lookup, a connection to a blacklisted range with 1110
// (also when a hosts entry leads there), others go through.
func TestHTTPBlockHostnamesAndBlacklistIPs(t *testing.T) {
	srv := headerEcho(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	src := `import http from 'k6/http';
export default function () {
  const get = (host) => http.get('http://' + host + ':` + port + `/');
  for (const h of ['blocked.test', 'a.b.blocked.test', 'Exact.Test']) {
    const r = get(h);
    eq(r.error_code, 1111, h + ': ' + r.error);
    eq(r.error, 'hostname is blocked', h);
  }
  for (const h of ['127.0.0.2', 'to-bad.test']) {
    const r = get(h);
    eq(r.error_code, 1110, h + ': ' + r.error);
    eq(r.error, 'ip is blacklisted', h);
  }
  eq(get('127.0.0.1').status, 200, 'an address outside the ranges');
  eq(get('fine.test').status, 200, 'a name neither blocked nor leading to a range');
}
` + jsAsserts
	runIteration(context.Background(), t, src, nil, withHTTPOptions(t, HTTPOptions{
		BlockHostnames: []string{"*blocked.test", "exact.test"},
		BlacklistIPs:   []string{"127.0.0.2/32", "10.0.0.0/8"},
		Hosts:          map[string]string{"to-bad.test": "127.0.0.2", "fine.test": "127.0.0.1"},
	})).mustPass(t)
	_, errs := newDialGuard([]string{"bad:80"}, []string{"10.0.0.1"})
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "blockHostnames[0]") || !strings.Contains(errs[1].Error(), "blacklistIPs[0]") {
		t.Errorf("errors %v: want blockHostnames[0] and blacklistIPs[0] named", errs)
	}
}
