// Package rest is llmchaos's client of the Kubernetes API over net/http
// and JSON: its configuration (from a kubeconfig as kubectl reads it, or a
// pod's service account), authentication (client certificates, bearer
// tokens and token files, basic auth, exec credential plugins), a
// client-side rate limit, typed API errors (apierrors) and streaming
// watches.
package rest

import (
	"net/http"
	"net/url"
	"time"
)

// Config says how to reach and authenticate to an API server.
type Config struct {
	// Host is the server's URL (https://host:port, with an optional path
	// prefix).
	Host string
	// TLSClientConfig is how the server's certificate is checked and the
	// client's certificate.
	TLSClientConfig TLSClientConfig
	// BearerToken is a token sent in each request's Authorization header.
	BearerToken string
	// BearerTokenFile is a file that holds the token, read again now and
	// then (service account tokens are rotated); it wins over BearerToken.
	BearerTokenFile string
	// Username and Password are sent as basic authentication.
	Username, Password string
	// ExecProvider runs a credential plugin for a token or a client
	// certificate.
	ExecProvider *ExecConfig
	// Proxy, when set, chooses the proxy of each request (a kubeconfig's
	// proxy-url); nil: the environment's (HTTPS_PROXY, NO_PROXY).
	Proxy func(*http.Request) (*url.URL, error)
	// QPS and Burst limit the requests per second (0: no limit).
	QPS   float32
	Burst int
	// UserAgent is sent with each request.
	UserAgent string
	// Timeout bounds each request that is not a watch or a stream (0: none).
	Timeout time.Duration
}

// TLSClientConfig is the TLS side of a Config.
type TLSClientConfig struct {
	// Insecure skips the check of the server's certificate.
	Insecure bool
	// ServerName is the name checked in the server's certificate (default:
	// Host's).
	ServerName string
	// CAFile and CAData are the certificate authorities trusted (PEM);
	// none: the system's.
	CAFile string
	CAData []byte
	// CertFile/KeyFile or CertData/KeyData are the client's certificate
	// and key (PEM).
	CertFile, KeyFile string
	CertData, KeyData []byte
}

// ExecConfig runs a credential plugin, as a kubeconfig's user.exec.
type ExecConfig struct {
	Command    string
	Args       []string
	Env        []ExecEnvVar
	APIVersion string
	// InstallHint is shown when Command cannot be found.
	InstallHint string
	// ProvideClusterInfo passes the cluster's address and CA to the plugin.
	ProvideClusterInfo bool
	// InteractiveMode is Never, IfAvailable or Always (llmchaos never has a
	// terminal to give the plugin: Always fails).
	InteractiveMode string
	// Config is the cluster's extensions.client.authentication.k8s.io/exec.
	Config any
}

// ExecEnvVar is a variable set for a credential plugin.
type ExecEnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CopyConfig returns a copy of cfg.
func CopyConfig(cfg *Config) *Config {
	c := *cfg
	if cfg.ExecProvider != nil {
		e := *cfg.ExecProvider
		c.ExecProvider = &e
	}
	return &c
}
