package rest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// tlsConfig returns the TLS configuration of cfg; exec, when not nil,
// gives the client certificate when the server asks for one and cfg has
// none of its own.
func tlsConfig(cfg *Config, exec *execAuth) (*tls.Config, error) {
	t := cfg.TLSClientConfig
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.Insecure, ServerName: t.ServerName} //nolint:gosec // the kubeconfig's choice
	ca := t.CAData
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("certificate authority: %w", err)
		}
		ca = b
	}
	if len(ca) > 0 {
		if t.Insecure {
			return nil, errors.New("a certificate authority and insecure-skip-tls-verify are both given: choose one")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("certificate authority %s: no PEM certificate in it", caSource(t))
		}
		tc.RootCAs = pool
	}
	cert, key := t.CertData, t.KeyData
	var err error
	if t.CertFile != "" {
		if cert, err = os.ReadFile(t.CertFile); err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
	}
	if t.KeyFile != "" {
		if key, err = os.ReadFile(t.KeyFile); err != nil {
			return nil, fmt.Errorf("client key: %w", err)
		}
	}
	switch {
	case len(cert) > 0 || len(key) > 0:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate and key: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	case exec != nil:
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			creds, err := exec.get()
			if err != nil {
				return nil, err
			}
			if creds.cert == nil {
				return &tls.Certificate{}, nil // the plugin gives a token instead
			}
			return creds.cert, nil
		}
	}
	return tc, nil
}

func caSource(t TLSClientConfig) string {
	if t.CAFile != "" {
		return t.CAFile
	}
	return "data"
}

// authTransport adds the credentials of a Config to each request, and
// the user agent.
type authTransport struct {
	next      http.RoundTripper
	userAgent string
	token     string
	tokenFile *tokenFile
	user      string
	password  string
	exec      *execAuth
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if t.userAgent != "" {
		req.Header.Set("User-Agent", t.userAgent)
	}
	if req.Header.Get("Authorization") == "" {
		switch {
		case t.tokenFile != nil:
			tok, err := t.tokenFile.get()
			if err != nil {
				return nil, err
			}
			req.Header.Set("Authorization", "Bearer "+tok)
		case t.token != "":
			req.Header.Set("Authorization", "Bearer "+t.token)
		case t.user != "" || t.password != "":
			req.SetBasicAuth(t.user, t.password)
		case t.exec != nil:
			creds, err := t.exec.get()
			if err != nil {
				return nil, err
			}
			if creds.token != "" {
				req.Header.Set("Authorization", "Bearer "+creds.token)
			}
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && t.exec != nil {
		t.exec.forget() // the next request runs the plugin again
	}
	return resp, err
}

// tokenFile reads a bearer token file, again once a minute, as service
// account tokens are rotated under a running pod.
type tokenFile struct {
	path string
	mu   sync.Mutex
	tok  string
	read time.Time
}

func (f *tokenFile) get() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tok != "" && time.Since(f.read) < time.Minute {
		return f.tok, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		if f.tok != "" {
			return f.tok, nil // keep the last one read rather than fail a request
		}
		return "", fmt.Errorf("bearer token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		if f.tok != "" {
			return f.tok, nil // as for a file gone: keep the last token, as client-go does
		}
		return "", fmt.Errorf("bearer token file %s is empty", f.path)
	}
	f.tok, f.read = tok, time.Now()
	return f.tok, nil
}

// HTTPClientFor returns the HTTP client of cfg: its TLS settings, proxy
// and credentials; no timeout (requests carry their own).
func HTTPClientFor(cfg *Config) (*http.Client, error) {
	var exec *execAuth
	if cfg.ExecProvider != nil && cfg.BearerToken == "" && cfg.BearerTokenFile == "" && cfg.Username == "" {
		var err error
		if exec, err = newExecAuth(cfg); err != nil {
			return nil, err
		}
	}
	tc, err := tlsConfig(cfg, exec)
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tc
	base.MaxIdleConnsPerHost = 25
	if cfg.Proxy != nil {
		base.Proxy = cfg.Proxy
	}
	at := &authTransport{next: base, userAgent: cfg.UserAgent, token: cfg.BearerToken,
		user: cfg.Username, password: cfg.Password, exec: exec}
	if cfg.BearerTokenFile != "" {
		at.tokenFile = &tokenFile{path: cfg.BearerTokenFile}
	}
	return &http.Client{Transport: at}, nil
}
