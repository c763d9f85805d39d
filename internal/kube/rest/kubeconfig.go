package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
)

// KubeconfigEnv names the variable that lists kubeconfig files, as
// kubectl reads it.
const KubeconfigEnv = "KUBECONFIG"

// DefaultKubeconfig returns ~/.kube/config.
func DefaultKubeconfig() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".kube", "config")
	}
	return filepath.Join(home, ".kube", "config")
}

// kubeconfig is a kubeconfig file.
type kubeconfig struct {
	CurrentContext string         `json:"current-context"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
}

type namedCluster struct {
	Name    string  `json:"name"`
	Cluster cluster `json:"cluster"`
	dir     string
}

type cluster struct {
	Server                   string `json:"server"`
	TLSServerName            string `json:"tls-server-name"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
	CertificateAuthority     string `json:"certificate-authority"`
	CertificateAuthorityData []byte `json:"certificate-authority-data"`
	ProxyURL                 string `json:"proxy-url"`
	Extensions               []struct {
		Name      string `json:"name"`
		Extension any    `json:"extension"`
	} `json:"extensions"`
}

type namedUser struct {
	Name string   `json:"name"`
	User authInfo `json:"user"`
	dir  string
}

type authInfo struct {
	ClientCertificate     string `json:"client-certificate"`
	ClientCertificateData []byte `json:"client-certificate-data"`
	ClientKey             string `json:"client-key"`
	ClientKeyData         []byte `json:"client-key-data"`
	Token                 string `json:"token"`
	TokenFile             string `json:"tokenFile"`
	Username              string `json:"username"`
	Password              string `json:"password"`
	Exec                  *struct {
		Command            string       `json:"command"`
		Args               []string     `json:"args"`
		Env                []ExecEnvVar `json:"env"`
		APIVersion         string       `json:"apiVersion"`
		InstallHint        string       `json:"installHint"`
		ProvideClusterInfo bool         `json:"provideClusterInfo"`
		InteractiveMode    string       `json:"interactiveMode"`
	} `json:"exec"`
	AuthProvider *struct {
		Name string `json:"name"`
	} `json:"auth-provider"`
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster   string `json:"cluster"`
		User      string `json:"user"`
		Namespace string `json:"namespace"`
	} `json:"context"`
}

// ErrNoConfig is wrapped by LoadKubeconfig's error when no kubeconfig is
// found (no file given, $KUBECONFIG unset or naming no file, no
// ~/.kube/config).
var ErrNoConfig = errors.New("no kubeconfig found")

// LoadKubeconfig reads the configuration of a kubeconfig, as kubectl
// does: file, when given, alone (it must exist); else the files of
// $KUBECONFIG (a list, merged: the first file to name a cluster, user or
// context, or a current context, wins; missing files are skipped); else
// ~/.kube/config. kubeContext chooses the context ("" for the current
// one). It returns the configuration and the context's namespace
// ("default" when it names none).
func LoadKubeconfig(file, kubeContext string) (*Config, string, error) {
	var files []string
	explicit := file != ""
	switch {
	case explicit:
		files = []string{file}
	case os.Getenv(KubeconfigEnv) != "":
		for _, f := range filepath.SplitList(os.Getenv(KubeconfigEnv)) {
			if f != "" {
				files = append(files, f)
			}
		}
	default:
		files = []string{DefaultKubeconfig()}
	}
	var merged kubeconfig
	read := 0
	for _, f := range files {
		kc, err := readKubeconfig(f)
		if errors.Is(err, os.ErrNotExist) && !explicit {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		read++
		merge(&merged, kc)
	}
	if read == 0 {
		return nil, "", fmt.Errorf("%w (looked at %s)", ErrNoConfig, strings.Join(files, ", "))
	}
	return merged.config(kubeContext)
}

func readKubeconfig(file string) (*kubeconfig, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	kc := &kubeconfig{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return kc, nil
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", file, err)
	}
	if err := json.Unmarshal(js, kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", file, err)
	}
	dir := filepath.Dir(file)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for i := range kc.Clusters {
		kc.Clusters[i].dir = dir
	}
	for i := range kc.Users {
		kc.Users[i].dir = dir
	}
	return kc, nil
}

// merge adds what b names that a does not yet.
func merge(a, b *kubeconfig) {
	if a.CurrentContext == "" {
		a.CurrentContext = b.CurrentContext
	}
	for _, c := range b.Clusters {
		if find(a.Clusters, c.Name, func(c namedCluster) string { return c.Name }) == nil {
			a.Clusters = append(a.Clusters, c)
		}
	}
	for _, u := range b.Users {
		if find(a.Users, u.Name, func(u namedUser) string { return u.Name }) == nil {
			a.Users = append(a.Users, u)
		}
	}
	for _, c := range b.Contexts {
		if find(a.Contexts, c.Name, func(c namedContext) string { return c.Name }) == nil {
			a.Contexts = append(a.Contexts, c)
		}
	}
}

func find[T any](list []T, name string, nameOf func(T) string) *T {
	for i := range list {
		if nameOf(list[i]) == name {
			return &list[i]
		}
	}
	return nil
}

// resolve makes path, relative to a kubeconfig's directory, absolute.
func resolve(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

func (kc *kubeconfig) config(kubeContext string) (*Config, string, error) {
	name := kubeContext
	if name == "" {
		name = kc.CurrentContext
	}
	if name == "" {
		return nil, "", errors.New("no current context: name one (context) or set current-context")
	}
	ctx := find(kc.Contexts, name, func(c namedContext) string { return c.Name })
	if ctx == nil {
		return nil, "", fmt.Errorf("context %q does not exist", name)
	}
	cl := find(kc.Clusters, ctx.Context.Cluster, func(c namedCluster) string { return c.Name })
	if cl == nil {
		return nil, "", fmt.Errorf("context %q: cluster %q does not exist", name, ctx.Context.Cluster)
	}
	c := cl.Cluster
	if c.Server == "" {
		return nil, "", fmt.Errorf("context %q: cluster %q has no server", name, ctx.Context.Cluster)
	}
	cfg := &Config{Host: c.Server, TLSClientConfig: TLSClientConfig{
		Insecure: c.InsecureSkipTLSVerify, ServerName: c.TLSServerName,
		CAFile: resolve(cl.dir, c.CertificateAuthority), CAData: c.CertificateAuthorityData,
	}}
	if len(c.CertificateAuthorityData) > 0 {
		cfg.TLSClientConfig.CAFile = "" // the data wins, as in kubectl
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil {
			return nil, "", fmt.Errorf("cluster %q: proxy-url %q: %w", ctx.Context.Cluster, c.ProxyURL, err)
		}
		switch u.Scheme {
		case "http", "https", "socks5":
		default:
			return nil, "", fmt.Errorf("cluster %q: proxy-url %q: scheme %q, want http, https or socks5", ctx.Context.Cluster, c.ProxyURL, u.Scheme)
		}
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return u, nil }
	}
	if ctx.Context.User != "" {
		u := find(kc.Users, ctx.Context.User, func(u namedUser) string { return u.Name })
		if u == nil {
			return nil, "", fmt.Errorf("context %q: user %q does not exist", name, ctx.Context.User)
		}
		if err := u.apply(cfg, cl); err != nil {
			return nil, "", fmt.Errorf("context %q: user %q: %w", name, ctx.Context.User, err)
		}
	}
	ns := ctx.Context.Namespace
	if ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

func (u *namedUser) apply(cfg *Config, cl *namedCluster) error {
	a := u.User
	if a.AuthProvider != nil {
		return fmt.Errorf("auth-provider %q is not supported (kubectl dropped it too): use an exec credential plugin", a.AuthProvider.Name)
	}
	t := &cfg.TLSClientConfig
	t.CertData, t.KeyData = a.ClientCertificateData, a.ClientKeyData
	if len(t.CertData) == 0 {
		t.CertFile = resolve(u.dir, a.ClientCertificate)
	}
	if len(t.KeyData) == 0 {
		t.KeyFile = resolve(u.dir, a.ClientKey)
	}
	cfg.BearerToken = a.Token
	cfg.BearerTokenFile = resolve(u.dir, a.TokenFile)
	cfg.Username, cfg.Password = a.Username, a.Password
	if a.Exec != nil {
		e := a.Exec
		cmd := e.Command
		if strings.ContainsRune(cmd, filepath.Separator) {
			cmd = resolve(u.dir, cmd) // a path, relative to the kubeconfig; a bare name is looked up in $PATH
		}
		cfg.ExecProvider = &ExecConfig{Command: cmd, Args: e.Args, Env: e.Env, APIVersion: e.APIVersion,
			InstallHint: e.InstallHint, ProvideClusterInfo: e.ProvideClusterInfo, InteractiveMode: e.InteractiveMode}
		for _, x := range cl.Cluster.Extensions {
			if x.Name == "client.authentication.k8s.io/exec" {
				cfg.ExecProvider.Config = x.Extension
			}
		}
	}
	return nil
}
