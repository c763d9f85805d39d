package docker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// engine is an in-test server that answers as the Docker Engine does for
// the calls the client makes: /_ping with its API version, versioned
// container routes, JSON errors, a stream of events. It records each
// request's method, path and query.
type engine struct {
	version string // the API-Version of /_ping ("" for none)
	events  chan Event

	mu   sync.Mutex
	reqs []string
}

func (e *engine) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.reqs)
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.reqs = append(e.reqs, r.Method+" "+r.URL.RequestURI())
	e.mu.Unlock()
	if r.URL.Path == "/_ping" {
		if e.version != "" {
			w.Header().Set("Api-Version", e.version)
		}
		w.Header().Set("Content-Type", "text/plain")
		return
	}
	fail := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"message":%q}`+"\n", msg)
	}
	prefix := "/v" + e.version
	if e.version == "" {
		prefix = "/v" + MaxAPIVersion
	}
	p, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		fail(http.StatusBadRequest, "unversioned or wrong version: "+r.URL.Path)
		return
	}
	switch {
	case p == "/containers/json" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"Id":"abc123","Names":["/sim-0"],"Labels":{"llmchaos.io/target":"true"},"State":"running",`+
			`"Status":"Up 2 minutes (healthy)","Health":{"Status":"healthy","FailingStreak":0},"Ports":[]}]`)
	case p == "/containers/abc123/json" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"Id":"abc123","Name":"/sim-0","RestartCount":2,"State":{"Status":"paused","Running":true,"Paused":true,`+
			`"Restarting":false,"Pid":4242,"ExitCode":0,"StartedAt":"2026-01-02T03:04:05Z"},"Config":{"Image":"x"}}`)
	case p == "/events" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush()
		for {
			select {
			case ev, ok := <-e.events:
				if !ok {
					return
				}
				_ = json.NewEncoder(w).Encode(ev)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case strings.HasPrefix(p, "/containers/abc123/") && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(p, "/containers/"):
		fail(http.StatusNotFound, "No such container: "+strings.Split(p, "/")[2])
	default:
		fail(http.StatusNotFound, "page not found")
	}
}

// serveUnix serves h on a unix socket in a temporary directory and returns
// its unix:// address.
func serveUnix(t *testing.T, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return "unix://" + sock
}

// TestCallsReachTheEngineAsItExpects: over a unix socket the client
// negotiates the engine's API version once, sends each call to its
// versioned route with the engine's query parameters, decodes the answers
// and keeps an engine's 404 as a not-found error with its message.
func TestCallsReachTheEngineAsItExpects(t *testing.T) {
	eng := &engine{version: "1.41"}
	c, err := New(Options{Host: serveUnix(t, eng)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	cs, err := c.ContainerList(ctx, true, Filters{"label": {"app=vllm"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != "abc123" || cs[0].Names[0] != "/sim-0" || cs[0].State != StateRunning ||
		cs[0].Health == nil || cs[0].Health.Status != "healthy" || cs[0].Labels["llmchaos.io/target"] != "true" {
		t.Errorf("ContainerList = %+v", cs)
	}
	info, err := c.ContainerInspect(ctx, "abc123")
	if err != nil {
		t.Fatal(err)
	}
	if info.State == nil || !info.State.Paused || info.State.Pid != 4242 || info.RestartCount != 2 || info.State.Status != "paused" {
		t.Errorf("ContainerInspect = %+v, state %+v", info, info.State)
	}
	for _, call := range []func() error{
		func() error { return c.ContainerStart(ctx, "abc123") },
		func() error { return c.ContainerStop(ctx, "abc123", 3) },
		func() error { return c.ContainerKill(ctx, "abc123", "SIGTERM") },
		func() error { return c.ContainerPause(ctx, "abc123") },
		func() error { return c.ContainerUnpause(ctx, "abc123") },
	} {
		if err := call(); err != nil {
			t.Error(err)
		}
	}
	err = c.ContainerStart(ctx, "gone")
	if !IsNotFound(err) || !strings.Contains(err.Error(), "No such container: gone") {
		t.Errorf("start of a missing container = %v, want not found with the engine's message", err)
	}
	if _, err := c.ContainerInspect(ctx, " "); err == nil {
		t.Error("inspect of an empty id: want an error")
	}
	want := []string{
		"HEAD /_ping",
		`GET /v1.41/containers/json?all=1&filters=%7B%22label%22%3A%7B%22app%3Dvllm%22%3Atrue%7D%7D`,
		"GET /v1.41/containers/abc123/json",
		"POST /v1.41/containers/abc123/start",
		"POST /v1.41/containers/abc123/stop?t=3",
		"POST /v1.41/containers/abc123/kill?signal=SIGTERM",
		"POST /v1.41/containers/abc123/pause",
		"POST /v1.41/containers/abc123/unpause",
		"POST /v1.41/containers/gone/start",
	}
	if got := eng.requests(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAPIVersionIsNegotiated: the client speaks the engine's version when
// it is older than MaxAPIVersion, MaxAPIVersion with a newer engine or one
// that does not say, refuses an engine older than MinAPIVersion, and
// speaks a pinned version without asking.
func TestAPIVersionIsNegotiated(t *testing.T) {
	for _, tt := range []struct {
		engine, pin, want, wantErr string
	}{
		{engine: "1.41", want: "1.41"},
		{engine: "1.99", want: MaxAPIVersion},
		{engine: "", want: MaxAPIVersion},
		{engine: "1.24", wantErr: "speaks API 1.24; llmchaos needs 1.40 or newer"},
		{engine: "1.45", pin: "1.44", want: "1.44"},
	} {
		t.Run(tt.engine+"/"+tt.pin, func(t *testing.T) {
			eng := &engine{version: tt.engine}
			c, err := New(Options{Host: serveUnix(t, eng), APIVersion: tt.pin})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := c.APIVersion(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("APIVersion = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("APIVersion = %q, %v; want %q", got, err, tt.want)
			}
			if _, err := c.APIVersion(context.Background()); err != nil {
				t.Fatal(err)
			}
			pings := 0
			for _, r := range eng.requests() {
				if strings.HasSuffix(r, "/_ping") {
					pings++
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tt.pin != ""]; pings != want {
				t.Errorf("%d pings for two calls, want %d (%v)", pings, want, eng.requests())
			}
		})
	}
}

// TestEventsAreStreamedUntilTheContextEnds: Events returns once the
// engine answered; each event the engine writes is read in order with its
// times and actor, and the stream ends with the context's cause or with an
// error when the engine ends it.
func TestEventsAreStreamedUntilTheContextEnds(t *testing.T) {
	eng := &engine{version: "1.41", events: make(chan Event)}
	c, err := New(Options{Host: serveUnix(t, eng)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.Events(ctx, Filters{"type": {"container"}, "event": {"die", "start"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sent := []Event{
		{Type: "container", Action: "die", Actor: Actor{ID: "abc123", Attributes: map[string]string{"name": "sim-0", "exitCode": "137"}},
			Time: 100, TimeNano: 100_000_000_005},
		{Type: "container", Action: "start", Actor: Actor{ID: "abc123", Attributes: map[string]string{"name": "sim-0"}}, Time: 101},
	}
	go func() {
		for _, e := range sent {
			eng.events <- e
		}
	}()
	for i, want := range sent {
		got, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got.Action != want.Action || got.Actor.ID != want.Actor.ID || got.Actor.Attributes["name"] != "sim-0" ||
			got.Time != want.Time || got.TimeNano != want.TimeNano {
			t.Errorf("event %d = %+v, want %+v", i, got, want)
		}
	}
	if r := eng.requests(); !strings.HasPrefix(r[1], "GET /v1.41/events?filters=") || !strings.Contains(r[1], "%22die%22%3Atrue") {
		t.Errorf("events request %q, want the filters", r[1])
	}
	cancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v, want context.Canceled", err)
	}

	s2, err := c.Events(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	close(eng.events)
	if _, err := s2.Next(); err == nil || !strings.Contains(err.Error(), "ended the event stream") {
		t.Errorf("Next after the engine ended the stream = %v, want an error saying so", err)
	}
}

// TestBadHostsAndEnvironmentsAreRefused: an address or variable the
// client cannot use is an error naming it.
func TestBadHostsAndEnvironmentsAreRefused(t *testing.T) {
	for _, h := range []string{"ssh://me@host", "/var/run/docker.sock", "tcp://", "unix://"} {
		if _, err := New(Options{Host: h}); err == nil || !strings.Contains(err.Error(), h) {
			t.Errorf("New(%q) = %v, want an error naming it", h, err)
		}
	}
	if _, err := New(Options{APIVersion: "latest"}); err == nil {
		t.Error("New with API version latest: want an error")
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, err := OptionsFromEnv(env(map[string]string{EnvAPIVersion: "one"})); err == nil || !strings.Contains(err.Error(), EnvAPIVersion) {
		t.Errorf("DOCKER_API_VERSION=one: %v, want an error naming it", err)
	}
	dir := t.TempDir()
	if _, err := OptionsFromEnv(env(map[string]string{EnvCertPath: dir})); err == nil || !strings.Contains(err.Error(), "ca.pem") {
		t.Errorf("DOCKER_CERT_PATH without certificates: %v, want an error naming ca.pem", err)
	}
	o, err := OptionsFromEnv(env(map[string]string{EnvHost: "tcp://10.0.0.1:2375", EnvAPIVersion: "v1.43"}))
	if err != nil || o.Host != "tcp://10.0.0.1:2375" || o.APIVersion != "1.43" || o.TLS != nil {
		t.Errorf("OptionsFromEnv = %+v, %v", o, err)
	}
	if _, err := New(Options{Host: "npipe:////./pipe/docker_engine"}); err != nil {
		t.Fatal(err) // connects on the first call
	}
}

// TestTLSFromCertPath: with DOCKER_CERT_PATH and DOCKER_TLS_VERIFY the
// client reaches an engine on TCP that demands a client certificate,
// verifying the engine's certificate against ca.pem; an engine whose
// certificate ca.pem did not sign is refused unless DOCKER_TLS_VERIFY is
// empty.
func TestTLSFromCertPath(t *testing.T) {
	ca, caKey := newCert(t, nil, nil, "test CA", true)
	srvCert, srvKey := newCert(t, ca, caKey, "engine", false)
	cliCert, cliKey := newCert(t, ca, caKey, "client", false)
	pool := x509.NewCertPool()
	pool.AddCert(ca)

	eng := &engine{version: "1.43"}
	srv := httptest.NewUnstartedServer(eng)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	defer srv.Close()
	host := "tcp://" + srv.Listener.Addr().String()

	dir := t.TempDir()
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.Raw)
	writePEM(t, filepath.Join(dir, "cert.pem"), "CERTIFICATE", cliCert.Raw)
	der, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "key.pem"), "EC PRIVATE KEY", der)

	reach := func(env map[string]string) error {
		o, err := OptionsFromEnv(func(k string) string { return env[k] })
		if err != nil {
			return err
		}
		c, err := New(o)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.ContainerList(context.Background(), false, nil)
		return err
	}
	if err := reach(map[string]string{EnvHost: host, EnvCertPath: dir, EnvTLSVerify: "1"}); err != nil {
		t.Errorf("verified TLS with ca.pem: %v", err)
	}
	if got := eng.requests(); len(got) != 2 || got[1] != "GET /v1.43/containers/json" {
		t.Errorf("requests %v", got)
	}
	if err := reach(map[string]string{EnvHost: host}); err == nil {
		t.Error("plain HTTP to a TLS engine: want an error")
	}

	// Another CA in ca.pem: verification fails, and is skipped when
	// DOCKER_TLS_VERIFY is empty.
	other, _ := newCert(t, nil, nil, "other CA", true)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", other.Raw)
	if err := reach(map[string]string{EnvHost: host, EnvCertPath: dir, EnvTLSVerify: "1"}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("engine certificate from another CA with DOCKER_TLS_VERIFY=1 = %v, want a certificate error", err)
	}
	if err := reach(map[string]string{EnvHost: host, EnvCertPath: dir}); err != nil {
		t.Errorf("unverified TLS: %v", err)
	}
}

// newCert makes a certificate for 127.0.0.1 signed by parent (self-signed
// when nil), a CA when isCA.
func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, name string, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         isCA,

		BasicConstraintsValid: true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRealEngine: against the engine of this machine (skipped when none
// answers), the version is negotiated, containers are listed, a missing
// one is not found, and an event subscription is answered and ends with
// its context. The docker replica driver's test (faults/replica) runs
// containers and acts on them through this client.
func TestRealEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("talks to the local Docker engine; skipped under -short")
	}
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.APIVersion(ctx)
	if err != nil {
		t.Skip("no Docker engine answers: ", err)
	}
	if versionLess(v, MinAPIVersion) || versionLess(MaxAPIVersion, v) {
		t.Errorf("negotiated API %s, outside [%s, %s]", v, MinAPIVersion, MaxAPIVersion)
	}
	cs, err := c.ContainerList(ctx, true, Filters{"label": {"llmchaos.test/no-such-label=1"}})
	if err != nil || len(cs) != 0 {
		t.Errorf("list by a label no container has = %v, %v; want none", cs, err)
	}
	if _, err := c.ContainerList(ctx, true, nil); err != nil {
		t.Error(err)
	}
	_, err = c.ContainerInspect(ctx, "llmchaos-no-such-container")
	if !IsNotFound(err) || !strings.Contains(err.Error(), "llmchaos-no-such-container") {
		t.Errorf("inspect of a missing container = %v, want not found naming it", err)
	}
	if err := c.ContainerPause(ctx, "llmchaos-no-such-container"); !IsNotFound(err) {
		t.Errorf("pause of a missing container = %v, want not found", err)
	}
	sctx, scancel := context.WithCancel(ctx)
	s, err := c.Events(sctx, Filters{"type": {"container"}, "label": {"llmchaos.test/no-such-label=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v, want context.Canceled", err)
	}
}
