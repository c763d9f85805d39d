package rest

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Exec credential API versions llmchaos speaks.
const (
	execV1      = "client.authentication.k8s.io/v1"
	execV1beta1 = "client.authentication.k8s.io/v1beta1"
)

// execAuth runs a credential plugin and keeps what it gave until it
// expires or the server refuses it.
type execAuth struct {
	cfg     ExecConfig
	cluster *execCluster
	mu      sync.Mutex
	creds   *execCreds
}

type execCreds struct {
	token  string
	cert   *tls.Certificate
	expiry time.Time
}

// execCluster is what a plugin is told of the cluster (provideClusterInfo).
type execCluster struct {
	Server                   string `json:"server"`
	TLSServerName            string `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
	Config                   any    `json:"config,omitempty"`
}

func newExecAuth(cfg *Config) (*execAuth, error) {
	e := cfg.ExecProvider
	switch e.APIVersion {
	case execV1, execV1beta1:
	default:
		return nil, fmt.Errorf("exec plugin %s: apiVersion %q: llmchaos speaks %s and %s", e.Command, e.APIVersion, execV1, execV1beta1)
	}
	switch e.InteractiveMode {
	case "", "Never", "IfAvailable":
	case "Always":
		return nil, fmt.Errorf("exec plugin %s: interactiveMode Always: llmchaos has no terminal to give it; get a credential first, or use a plugin that runs unattended", e.Command)
	default:
		return nil, fmt.Errorf("exec plugin %s: interactiveMode %q: want Never, IfAvailable or Always", e.Command, e.InteractiveMode)
	}
	if e.APIVersion == execV1 && e.InteractiveMode == "" {
		return nil, fmt.Errorf("exec plugin %s: interactiveMode must be given with apiVersion %s (Never or IfAvailable)", e.Command, execV1)
	}
	a := &execAuth{cfg: *e}
	if e.ProvideClusterInfo {
		ca := cfg.TLSClientConfig.CAData
		if cfg.TLSClientConfig.CAFile != "" {
			b, err := os.ReadFile(cfg.TLSClientConfig.CAFile)
			if err != nil {
				return nil, fmt.Errorf("exec plugin %s: cluster info: %w", e.Command, err)
			}
			ca = b
		}
		a.cluster = &execCluster{Server: cfg.Host, TLSServerName: cfg.TLSClientConfig.ServerName,
			InsecureSkipTLSVerify: cfg.TLSClientConfig.Insecure, CertificateAuthorityData: ca, Config: e.Config}
	}
	return a, nil
}

func (a *execAuth) forget() {
	a.mu.Lock()
	a.creds = nil
	a.mu.Unlock()
}

func (a *execAuth) get() (*execCreds, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.creds != nil && (a.creds.expiry.IsZero() || time.Now().Before(a.creds.expiry)) {
		return a.creds, nil
	}
	c, err := a.run()
	if err != nil {
		return nil, err
	}
	a.creds = c
	return c, nil
}

// run runs the plugin once and reads its ExecCredential.
func (a *execAuth) run() (*execCreds, error) {
	spec := map[string]any{"interactive": false}
	if a.cluster != nil {
		spec["cluster"] = a.cluster
	}
	info, err := json.Marshal(map[string]any{"apiVersion": a.cfg.APIVersion, "kind": "ExecCredential", "spec": spec})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(a.cfg.Command, a.cfg.Args...) //nolint:gosec // the kubeconfig's plugin
	cmd.Env = os.Environ()
	for _, v := range a.cfg.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.Env = append(cmd.Env, "KUBERNETES_EXEC_INFO="+string(info))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if (errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)) && a.cfg.InstallHint != "" {
			return nil, fmt.Errorf("exec plugin %s: %w\n%s", a.cfg.Command, err, a.cfg.InstallHint)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			msg = ": " + msg
		}
		return nil, fmt.Errorf("exec plugin %s: %w%s", a.cfg.Command, err, msg)
	}
	var out struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Status     *struct {
			ExpirationTimestamp   *time.Time `json:"expirationTimestamp"`
			Token                 string     `json:"token"`
			ClientCertificateData string     `json:"clientCertificateData"`
			ClientKeyData         string     `json:"clientKeyData"`
		} `json:"status"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("exec plugin %s: its output is not an ExecCredential: %w", a.cfg.Command, err)
	}
	switch {
	case out.Kind != "ExecCredential":
		return nil, fmt.Errorf("exec plugin %s: kind %q, want ExecCredential", a.cfg.Command, out.Kind)
	case out.APIVersion != a.cfg.APIVersion:
		return nil, fmt.Errorf("exec plugin %s: apiVersion %q, want %q as the kubeconfig says", a.cfg.Command, out.APIVersion, a.cfg.APIVersion)
	case out.Status == nil:
		return nil, fmt.Errorf("exec plugin %s: no status in its ExecCredential", a.cfg.Command)
	}
	st := out.Status
	c := &execCreds{token: st.Token}
	if st.ExpirationTimestamp != nil {
		c.expiry = *st.ExpirationTimestamp
	}
	if (st.ClientCertificateData == "") != (st.ClientKeyData == "") {
		return nil, fmt.Errorf("exec plugin %s: gave a client certificate or key without the other", a.cfg.Command)
	}
	if st.ClientCertificateData != "" {
		pair, err := tls.X509KeyPair([]byte(st.ClientCertificateData), []byte(st.ClientKeyData))
		if err != nil {
			return nil, fmt.Errorf("exec plugin %s: client certificate: %w", a.cfg.Command, err)
		}
		c.cert = &pair
	}
	if c.token == "" && c.cert == nil {
		return nil, fmt.Errorf("exec plugin %s: gave neither a token nor a client certificate", a.cfg.Command)
	}
	return c, nil
}
