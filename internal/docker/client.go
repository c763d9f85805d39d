package docker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// MaxAPIVersion is the newest API version the client speaks: the one
	// used with an engine that serves it or a newer one.
	MaxAPIVersion = "1.56"
	// MinAPIVersion is the oldest API version the client accepts from an
	// engine (Docker 19.03's).
	MinAPIVersion = "1.40"
	// DefaultHost is the engine's address when DOCKER_HOST is not set.
	DefaultHost = "unix:///var/run/docker.sock"
)

// The environment variables OptionsFromEnv reads, as the docker CLI does.
const (
	EnvHost       = "DOCKER_HOST"
	EnvAPIVersion = "DOCKER_API_VERSION"
	EnvCertPath   = "DOCKER_CERT_PATH"
	EnvTLSVerify  = "DOCKER_TLS_VERIFY"
)

// localHost is the HTTP host of requests over a socket or pipe.
const localHost = "api.moby.localhost"

// dialTimeout bounds connecting to the engine.
const dialTimeout = 10 * time.Second

// Options says how to reach an engine.
type Options struct {
	// Host is the engine's address: unix:///path/to/socket,
	// tcp://host:port (with an optional base path) or, on Windows,
	// npipe:////./pipe/name. Empty is DefaultHost.
	Host string
	// TLS, when set, secures a tcp host (https).
	TLS *tls.Config
	// APIVersion pins the API version ("1.41"); empty negotiates it with
	// the engine on the first call.
	APIVersion string
}

// OptionsFromEnv returns the options the docker CLI's environment gives
// (getenv is os.Getenv, or a stand-in): DOCKER_HOST; DOCKER_CERT_PATH, the
// directory of ca.pem, cert.pem and key.pem for TLS, verifying the
// engine's certificate (against the system's roots and ca.pem) only when
// DOCKER_TLS_VERIFY is set to a non-empty value; DOCKER_API_VERSION.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	o := Options{Host: getenv(EnvHost)}
	if v := strings.TrimSpace(getenv(EnvAPIVersion)); v != "" {
		v = strings.TrimPrefix(v, "v")
		if !validVersion(v) {
			return Options{}, fmt.Errorf("%s=%q: want an API version such as 1.41", EnvAPIVersion, getenv(EnvAPIVersion))
		}
		o.APIVersion = v
	}
	if dir := getenv(EnvCertPath); dir != "" {
		cfg, err := tlsFromDir(dir, getenv(EnvTLSVerify) != "")
		if err != nil {
			return Options{}, fmt.Errorf("%s=%s: %w", EnvCertPath, dir, err)
		}
		o.TLS = cfg
	}
	return o, nil
}

// tlsFromDir is the TLS configuration of the certificates in dir.
func tlsFromDir(dir string, verify bool) (*tls.Config, error) {
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(dir, "ca.pem"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return &tls.Config{
		RootCAs:            roots,
		Certificates:       []tls.Certificate{cert},
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: !verify, //nolint:gosec // DOCKER_TLS_VERIFY unset asks for it, as with the docker CLI.
	}, nil
}

// Client is a client of one engine. Its methods are safe for concurrent
// use; Close releases its idle connections.
type Client struct {
	host     string // as given, for messages
	scheme   string // http or https
	addr     string // the URL's host
	basePath string
	tr       *http.Transport
	hc       *http.Client

	mu      sync.Mutex
	version string // pinned or negotiated; "" until then
}

// New returns a client of the engine o names. It connects on the first
// call.
func New(o Options) (*Client, error) {
	host := o.Host
	if host == "" {
		host = DefaultHost
	}
	proto, rest, ok := strings.Cut(host, "://")
	if !ok || rest == "" {
		return nil, fmt.Errorf("docker host %q: want unix:///path, tcp://host:port or npipe:///path", host)
	}
	c := &Client{host: host, scheme: "http", version: o.APIVersion}
	if o.APIVersion != "" && !validVersion(o.APIVersion) {
		return nil, fmt.Errorf("docker API version %q: want one such as 1.41", o.APIVersion)
	}
	c.tr = &http.Transport{MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second}
	dialer := &net.Dialer{Timeout: dialTimeout}
	switch proto {
	case "unix":
		c.addr = localHost
		c.tr.DisableCompression = true
		c.tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", rest)
		}
	case "npipe":
		c.addr = localHost
		c.tr.DisableCompression = true
		c.tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialPipe(ctx, rest)
		}
	case "tcp":
		u, err := url.Parse("tcp://" + rest)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("docker host %q: want tcp://host:port", host)
		}
		c.addr, c.basePath = u.Host, strings.TrimSuffix(u.Path, "/")
		c.tr.Proxy = http.ProxyFromEnvironment
		c.tr.DialContext = dialer.DialContext
		if o.TLS != nil {
			c.scheme = "https"
			c.tr.TLSClientConfig = o.TLS.Clone()
		}
	default:
		return nil, fmt.Errorf("docker host %q: unsupported scheme %s (want unix://, tcp:// or npipe://)", host, proto)
	}
	c.hc = &http.Client{Transport: c.tr, CheckRedirect: noRedirect}
	return c, nil
}

// FromEnv returns a client of the engine the environment names
// (OptionsFromEnv with os.Getenv).
func FromEnv() (*Client, error) {
	o, err := OptionsFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return New(o)
}

// noRedirect: the engine's API never redirects; a redirect is returned as
// the answer (and so as an error).
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Host is the engine's address, as configured.
func (c *Client) Host() string { return c.host }

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// Error is an engine's answer that is not a success: its HTTP status and
// its message.
type Error struct {
	StatusCode int
	Message    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("docker engine: %s (HTTP %d)", e.Message, e.StatusCode)
}

// IsNotFound reports whether err is an engine's 404: no such container.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// Ping asks the engine for its API version (the API-Version header of
// /_ping; "" from an engine too old to say). An engine that answers with
// an error still tells its version (a daemon in trouble answers 500).
func (c *Client) Ping(ctx context.Context) (string, error) {
	p := path.Join("/", c.basePath, "_ping")
	res, err := c.roundTrip(ctx, http.MethodHead, p, nil)
	if err == nil && res.StatusCode != http.StatusOK {
		// Some proxies refuse HEAD: ask again with GET.
		drain(res)
		res, err = c.roundTrip(ctx, http.MethodGet, p, nil)
	}
	if err != nil {
		return "", err
	}
	defer drain(res)
	if v := res.Header.Get("Api-Version"); v != "" || res.StatusCode == http.StatusOK {
		return v, nil
	}
	return "", &Error{StatusCode: res.StatusCode, Message: errorMessage(res, http.MethodGet, p)}
}

// APIVersion returns the API version of the client's requests: the pinned
// one, else the one negotiated (once) with the engine.
func (c *Client) APIVersion(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != "" {
		return c.version, nil
	}
	v, err := c.Ping(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case v == "":
		v = MaxAPIVersion
	case !validVersion(v):
		return "", fmt.Errorf("docker engine at %s: API version %q", c.host, v)
	case versionLess(v, MinAPIVersion):
		return "", fmt.Errorf("docker engine at %s speaks API %s; llmchaos needs %s or newer", c.host, v, MinAPIVersion)
	case versionLess(MaxAPIVersion, v):
		v = MaxAPIVersion
	}
	c.version = v
	return v, nil
}

// do sends a request of the API (p below /vX.Y) and returns the engine's
// successful answer, whose body the caller closes.
func (c *Client) do(ctx context.Context, method, p string, query url.Values, header http.Header) (*http.Response, error) {
	v, err := c.APIVersion(ctx)
	if err != nil {
		return nil, err
	}
	u := path.Join("/", c.basePath, "v"+v, p)
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return c.send(ctx, method, u, header)
}

// send sends a request for the path and query u and turns an answer that
// is not a success into an *Error.
func (c *Client) send(ctx context.Context, method, u string, header http.Header) (*http.Response, error) {
	res, err := c.roundTrip(ctx, method, u, header)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res, nil
	}
	defer drain(res)
	return nil, &Error{StatusCode: res.StatusCode, Message: errorMessage(res, method, u)}
}

// roundTrip sends a request for the path and query u and returns the
// engine's answer, whatever its status.
func (c *Client) roundTrip(ctx context.Context, method, u string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+c.addr+u, nil)
	if err != nil {
		return nil, fmt.Errorf("docker engine at %s: %w", c.host, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", "llmchaos")
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("cannot reach the docker engine at %s: %w", c.host, err)
	}
	return res, nil
}

// errorMessage is the message of an engine's error answer: the message
// of its JSON body, else its text, else its status.
func errorMessage(res *http.Response, method, u string) string {
	var body []byte
	if method != http.MethodHead {
		body, _ = io.ReadAll(io.LimitReader(res.Body, 1<<20))
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && strings.TrimSpace(e.Message) != "" {
		return strings.TrimSpace(e.Message)
	}
	if s := strings.TrimSpace(string(body)); s != "" && !strings.HasPrefix(s, "{") {
		return s
	}
	return fmt.Sprintf("%s %s: %s", method, u, res.Status)
}

// drain reads what is left of res's body (so that its connection is
// reused) and closes it.
func drain(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
}

// validVersion reports whether v reads major.minor.
func validVersion(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	_, err1 := strconv.ParseUint(major, 10, 16)
	_, err2 := strconv.ParseUint(minor, 10, 16)
	return ok && err1 == nil && err2 == nil
}

// versionLess reports whether API version a is older than b; both are
// valid.
func versionLess(a, b string) bool {
	amaj, amin, _ := strings.Cut(a, ".")
	bmaj, bmin, _ := strings.Cut(b, ".")
	x, _ := strconv.Atoi(amaj)
	y, _ := strconv.Atoi(bmaj)
	if x != y {
		return x < y
	}
	x, _ = strconv.Atoi(amin)
	y, _ = strconv.Atoi(bmin)
	return x < y
}
