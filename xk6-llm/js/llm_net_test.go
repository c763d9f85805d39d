package js

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLLMClientConnectsAsTheOptionsSay: an llm.Client's requests go where
// k6/http's would (hosts, on the event loop and, with onToken, through
// net/http), keeping the name in the Host header, and fail as connect
// errors, with k6's words, to a name blockHostnames blocks or an address
// in a blacklistIPs range, named or mapped; nothing reaches the server
// for those.
func TestLLMClientConnectsAsTheOptionsSay(t *testing.T) {
	answer := sseHead + chunkEvent(`{"role":"assistant","content":"Hi"}`, "") + chunkEvent(`{"content":" there."}`, "stop") + "data: [DONE]\n\n"
	e := startRawEngine(t, map[string]func(c *engineConn) bool{
		"/v1/chat/completions": func(c *engineConn) bool { c.write(answer); return false },
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.URL, "http://"))
	src := jsAsserts + `
import llm from 'k6/x/llm';
const msgs = [{ role: 'user', content: 'hi' }];
const at = (base) => new llm.Client({ baseURL: base + '/v1', model: 'm' });
export default function () {
  const named = at('http://llm.test');
  const r = named.chat({ messages: msgs });
  eq(r.ok, true, 'through hosts: ' + r.error);
  eq(r.text, 'Hi there.', 'the answer');
  let tokens = 0;
  const cb = named.chat({ messages: msgs, onToken: () => { tokens++; } });
  eq(cb.ok && tokens > 0, true, 'through hosts with onToken: ' + cb.error);
  for (const [base, words] of [
    ['http://x.blocked.test:` + port + `', 'hostname (x.blocked.test) is in a blocked pattern (*.blocked.test)'],
    ['http://to-bad.test:` + port + `', 'IP (127.0.0.2) is in a blacklisted range (127.0.0.2/32)'],
    ['http://127.0.0.2:` + port + `', 'IP (127.0.0.2) is in a blacklisted range (127.0.0.2/32)'],
  ]) {
    const b = at(base).chat({ messages: msgs });
    eq(b.ok, false, base + ' refused');
    eq(b.errorClass, 'connect', base + ' class');
    eq(b.error.includes(words), true, base + ': ' + b.error);
  }
}
`
	r := runIteration(context.Background(), t, src, nil, withHTTPOptions(t, HTTPOptions{
		Hosts:          map[string]string{"llm.test": "127.0.0.1:" + port, "to-bad.test": "127.0.0.2"},
		BlockHostnames: []string{"*.blocked.test"},
		BlacklistIPs:   []string{"127.0.0.2/32"},
	}))
	r.mustPass(t)
	reqs, _ := e.requests("/v1/chat/completions")
	if len(reqs) != 2 {
		t.Fatalf("the server got %d requests, want the 2 the options let through", len(reqs))
	}
	for _, q := range reqs {
		if q.Host != "llm.test" {
			t.Errorf("Host %q, want llm.test: hosts changes where a connection goes, not the name", q.Host)
		}
	}
}

// TestLLMClientTLSOptions: an llm.Client to an https server that asks for
// a client certificate presents tlsAuth's, and insecureSkipTLSVerify
// accepts the server's own; without tlsAuth the handshake fails (a
// connect error).
func TestLLMClientTLSOptions(t *testing.T) {
	ca := newTestCert(t, "test CA", nil, true)
	vu := newTestCert(t, "vu-client", &ca, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(chunkEvent(`{"role":"assistant","content":"`+r.TLS.PeerCertificates[0].Subject.CommonName+`"}`, "stop") + "data: [DONE]\n\n"))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	src := jsAsserts + `
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.BASE + '/v1', model: 'm' });
export default function () {
  const r = client.chat({ messages: [{ role: 'user', content: 'hi' }] });
  if (__ENV.AUTH !== '1') {
    eq(r.ok, false, 'without a client certificate');
    eq(r.errorClass === 'connect' || r.errorClass === 'reset', true, 'a failed handshake: ' + r.errorClass + ' ' + r.error);
    return;
  }
  eq(r.ok, true, 'with tlsAuth: ' + r.error);
  eq(r.text, 'vu-client', 'the certificate the server saw');
}
`
	for _, withAuth := range []bool{false, true} {
		o := HTTPOptions{InsecureSkipTLSVerify: true}
		env := map[string]string{"BASE": srv.URL}
		if withAuth {
			o.TLSAuth, env["AUTH"] = []TLSAuth{{Cert: vu.pemCert(), Key: vu.pemKey(t)}}, "1"
		}
		runIteration(context.Background(), t, src, env, withHTTPOptions(t, o)).mustPass(t)
	}
}
