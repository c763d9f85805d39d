package rest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// whoami sends a request with cfg and returns the user the server saw.
func whoami(t *testing.T, cfg *rest.Config) (string, error) {
	t.Helper()
	c, err := rest.New(cfg)
	if err != nil {
		return "", err
	}
	var ns corev1.Namespace
	err = c.Do(context.Background(), rest.Request{Method: http.MethodGet, Path: rest.Path{Prefix: "/api/v1", Resource: "namespaces", Name: "default"}}, &ns)
	return ns.Labels["user"], err
}

// load writes kubeconfig (a format string given the server's URL) to a
// file of its own and loads context kubeContext.
func load(t *testing.T, dir, kubeconfig string, kubeContext string) (*rest.Config, string, error) {
	t.Helper()
	path := write(t, dir, "config", kubeconfig, 0o600)
	return rest.LoadKubeconfig(path, kubeContext)
}

// TestKubeconfigForms loads kubeconfigs in each form kubectl reads and
// sends a request with each to a real TLS server, which says who it saw.
func TestKubeconfigForms(t *testing.T) {
	srv := newAPIServer(t)
	certPEM, keyPEM := srv.ca.client(t, "alice")
	caPEM := srv.caPEM()
	for _, tc := range []struct {
		name string
		// user is the kubeconfig's user entry; files are written next to
		// the kubeconfig first.
		user  string
		files map[string]string
		want  string
	}{
		{name: "client certificate data", want: "cert_alice",
			user: fmt.Sprintf("client-certificate-data: %s\n      client-key-data: %s", b64(certPEM), b64(keyPEM))},
		{name: "client certificate files, relative to the kubeconfig", want: "cert_alice",
			user:  "client-certificate: alice.crt\n      client-key: alice.key",
			files: map[string]string{"alice.crt": string(certPEM), "alice.key": string(keyPEM)}},
		{name: "token", want: "token_s3cret", user: "token: s3cret"},
		{name: "token file", want: "token_from-file",
			user: "tokenFile: token", files: map[string]string{"token": "from-file\n"}},
		{name: "basic auth", want: "basic_bob_pw", user: "username: bob\n      password: pw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				write(t, dir, name, content, 0o600)
			}
			cfg, ns, err := load(t, dir, fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
      %s
contexts:
- name: test
  context: {cluster: test, user: u, namespace: llm}
`, srv.URL, b64(caPEM), tc.user), "")
			if err != nil {
				t.Fatal(err)
			}
			if ns != "llm" {
				t.Errorf("namespace %q, want llm", ns)
			}
			got, err := whoami(t, cfg)
			if err != nil || got != tc.want {
				t.Errorf("server saw %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// tokenKubeconfig is a kubeconfig of one cluster at server, with the
// cluster's further lines (indented by four spaces after the first), and
// a user of token t.
func tokenKubeconfig(server, cluster string) string {
	return fmt.Sprintf(`clusters:
- name: c
  cluster:
    server: %s
    %s
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, server, cluster)
}

// TestKubeconfigTLSChoices: a CA file, insecure-skip-tls-verify, and a
// server whose certificate is not trusted.
func TestKubeconfigTLSChoices(t *testing.T) {
	srv := newAPIServer(t)
	dir := t.TempDir()
	write(t, dir, "ca.crt", string(srv.caPEM()), 0o600)
	for _, tc := range []struct {
		name, cluster, wantErr string
	}{
		{name: "CA file", cluster: "certificate-authority: ca.crt"},
		{name: "insecure", cluster: "insecure-skip-tls-verify: true"},
		{name: "untrusted", cluster: "tls-server-name: 127.0.0.1", wantErr: "certificate"},
		{name: "wrong server name", cluster: "certificate-authority: ca.crt\n    tls-server-name: other.example", wantErr: "other.example"},
		{name: "server name the certificate holds", cluster: "certificate-authority: ca.crt\n    tls-server-name: example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := load(t, dir, tokenKubeconfig(srv.URL, tc.cluster), "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := whoami(t, cfg)
			switch {
			case tc.wantErr == "" && (err != nil || got != "token_t"):
				t.Errorf("server saw %q, %v; want token_t", got, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
}

// TestKubeconfigListMergedAsKubectl: $KUBECONFIG lists files; the first to
// name a context, cluster or user, or a current context, wins; missing
// files are skipped; a context can be chosen; a missing one is an error.
func TestKubeconfigListMergedAsKubectl(t *testing.T) {
	dir := t.TempDir()
	first := write(t, dir, "first", `current-context: a
contexts:
- name: a
  context: {cluster: one, namespace: from-first}
clusters:
- name: one
  cluster: {server: "https://first.example:6443"}
`, 0o600)
	second := write(t, dir, "second", `current-context: b
contexts:
- name: a
  context: {cluster: two, namespace: ignored}
- name: b
  context: {cluster: two}
clusters:
- name: one
  cluster: {server: "https://ignored.example"}
- name: two
  cluster: {server: "https://second.example:6443", proxy-url: "http://proxy.example:3128"}
`, 0o600)
	t.Setenv(rest.KubeconfigEnv, strings.Join([]string{first, filepath.Join(dir, "missing"), second}, string(os.PathListSeparator)))
	for _, tc := range []struct{ context, host, ns, proxy string }{
		{"", "https://first.example:6443", "from-first", ""},
		{"b", "https://second.example:6443", "default", "http://proxy.example:3128"},
	} {
		cfg, ns, err := rest.LoadKubeconfig("", tc.context)
		if err != nil {
			t.Fatalf("context %q: %v", tc.context, err)
		}
		if cfg.Host != tc.host || ns != tc.ns {
			t.Errorf("context %q: host %s namespace %s, want %s %s", tc.context, cfg.Host, ns, tc.host, tc.ns)
		}
		proxy := ""
		if cfg.Proxy != nil {
			u, _ := cfg.Proxy(nil)
			proxy = u.String()
		}
		if proxy != tc.proxy {
			t.Errorf("context %q: proxy %q, want %q", tc.context, proxy, tc.proxy)
		}
	}
	if _, _, err := rest.LoadKubeconfig("", "nope"); err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) {
		t.Errorf("missing context: %v", err)
	}
	if _, _, err := rest.LoadKubeconfig(filepath.Join(dir, "missing"), ""); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a named file that does not exist: %v, want an error naming it", err)
	}
}

// TestInClusterConfig: in a pod, the API server of KUBERNETES_SERVICE_HOST
// and _PORT is reached with the service account's token and CA.
func TestInClusterConfig(t *testing.T) {
	srv := newAPIServer(t)
	dir := t.TempDir()
	write(t, dir, "token", "sa-token", 0o600)
	write(t, dir, "ca.crt", string(srv.caPEM()), 0o600)
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	cfg, err := rest.InClusterConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := whoami(t, cfg)
	if err != nil || got != "token_sa-token" {
		t.Errorf("server saw %q, %v; want token_sa-token", got, err)
	}
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	if _, err := rest.InClusterConfig(dir); err == nil {
		t.Error("no port: no error")
	}
}

// TestExecPluginGivesTokenOrCertificate runs a real credential plugin (a
// shell script) for each API version: it is told the cluster when
// provideClusterInfo is set, its token or certificate is sent, and it is
// run again when the server refuses what it gave.
func TestExecPluginGivesTokenOrCertificate(t *testing.T) {
	srv := newAPIServer(t)
	certPEM, keyPEM := srv.ca.client(t, "plugin-user")
	for _, tc := range []struct {
		name, apiVersion, interactive, status, want string
	}{
		{"v1 token", "client.authentication.k8s.io/v1", "Never", `{"token":"from-plugin"}`, "token_from-plugin"},
		{"v1beta1 token", "client.authentication.k8s.io/v1beta1", "", `{"token":"beta"}`, "token_beta"},
		{"v1 certificate", "client.authentication.k8s.io/v1", "IfAvailable",
			fmt.Sprintf(`{"clientCertificateData":%q,"clientKeyData":%q}`, certPEM, keyPEM), "cert_plugin-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "status.json", tc.status, 0o600)
			script := write(t, dir, "plugin.sh", `#!/bin/sh
echo run >> "$PLUGIN_DIR/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$PLUGIN_DIR/info.json"
printf '{"apiVersion":"%s","kind":"ExecCredential","status":%s}' "$1" "$(cat "$PLUGIN_DIR/status.json")"
`, 0o700)
			cfg, _, err := load(t, dir, fmt.Sprintf(`clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    exec:
      apiVersion: %s
      command: ./plugin.sh
      args: [%s]
      env: [{name: PLUGIN_DIR, value: %s}]
      interactiveMode: %q
      provideClusterInfo: true
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, srv.URL, b64(srv.caPEM()), tc.apiVersion, tc.apiVersion, dir, tc.interactive), "")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ExecProvider.Command != script {
				t.Errorf("command %q, want %q (relative to the kubeconfig)", cfg.ExecProvider.Command, script)
			}
			got, err := whoami(t, cfg)
			if err != nil || got != tc.want {
				t.Fatalf("server saw %q, %v; want %q", got, err, tc.want)
			}
			info, err := os.ReadFile(filepath.Join(dir, "info.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"kind":"ExecCredential"`, `"apiVersion":"` + tc.apiVersion + `"`, `"server":"` + srv.URL + `"`, `"interactive":false`} {
				if !strings.Contains(string(info), want) {
					t.Errorf("KUBERNETES_EXEC_INFO %s lacks %s", info, want)
				}
			}
		})
	}

	t.Run("refused credential runs the plugin again", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "status.json", `{"token":"expired"}`, 0o600)
		write(t, dir, "plugin.sh", `#!/bin/sh
echo run >> "$PLUGIN_DIR/runs"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":%s}' "$(cat "$PLUGIN_DIR/status.json")"
`, 0o700)
		cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srv.caPEM()},
			ExecProvider: &rest.ExecConfig{Command: filepath.Join(dir, "plugin.sh"), APIVersion: "client.authentication.k8s.io/v1",
				InteractiveMode: "Never", Env: []rest.ExecEnvVar{{Name: "PLUGIN_DIR", Value: dir}}}}
		c, err := rest.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		get := func() (string, error) {
			var ns corev1.Namespace
			err := c.Do(t.Context(), rest.Request{Method: http.MethodGet, Path: rest.Path{Prefix: "/api/v1", Resource: "namespaces", Name: "default"}}, &ns)
			return ns.Labels["user"], err
		}
		if _, err := get(); !apierrors.IsUnauthorized(err) {
			t.Fatalf("expired token: %v, want Unauthorized", err)
		}
		write(t, dir, "status.json", `{"token":"fresh"}`, 0o600)
		if got, err := get(); err != nil || got != "token_fresh" {
			t.Errorf("after a refusal: %q, %v; want the plugin's new token", got, err)
		}
		runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
		if n := strings.Count(string(runs), "run"); n != 2 {
			t.Errorf("plugin ran %d times, want 2", n)
		}
	})

	t.Run("errors", func(t *testing.T) {
		dir := t.TempDir()
		bad := write(t, dir, "bad.sh", "#!/bin/sh\necho 'no cluster for you' >&2\nexit 3\n", 0o700)
		for _, tc := range []struct {
			exec rest.ExecConfig
			want string
		}{
			{rest.ExecConfig{Command: bad, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: "Never"}, "no cluster for you"},
			{rest.ExecConfig{Command: bad, APIVersion: "client.authentication.k8s.io/v1"}, "interactiveMode must be given"},
			{rest.ExecConfig{Command: bad, APIVersion: "client.authentication.k8s.io/v1alpha1"}, "v1alpha1"},
			{rest.ExecConfig{Command: bad, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: "Always"}, "no terminal"},
			{rest.ExecConfig{Command: filepath.Join(dir, "none"), APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: "Never",
				InstallHint: "install the none plugin"}, "install the none plugin"},
		} {
			_, err := whoami(t, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srv.caPEM()}, ExecProvider: &tc.exec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want an error with %q", tc.exec, err, tc.want)
			}
		}
	})
}

// TestKubeconfigProxyURL: a cluster's proxy-url carries the requests, as
// kubectl's: the API server is reached through an HTTP CONNECT tunnel of a
// real proxy, which sees one tunnel to the server's address.
func TestKubeconfigProxyURL(t *testing.T) {
	srv := newAPIServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tunnels []string
	var conns []net.Conn // closed at the end: the client keeps its connection alive
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil || req.Method != http.MethodConnect {
					_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
					return
				}
				up, err := net.Dial("tcp", req.Host)
				if err != nil {
					_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
					return
				}
				defer up.Close()
				mu.Lock()
				tunnels = append(tunnels, req.Host)
				conns = append(conns, up)
				mu.Unlock()
				_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				go func() {
					_, _ = io.Copy(up, c)
					up.Close()
				}()
				_, _ = io.Copy(c, up)
			})
		}
	})
	cfg, _, err := load(t, t.TempDir(),
		tokenKubeconfig(srv.URL, fmt.Sprintf("certificate-authority-data: %s\n    proxy-url: http://%s", b64(srv.caPEM()), ln.Addr())), "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := whoami(t, cfg)
	if err != nil || got != "token_t" {
		t.Fatalf("server saw %q, %v; want token_t", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := strings.TrimPrefix(srv.URL, "https://"); len(tunnels) != 1 || tunnels[0] != want {
		t.Errorf("the proxy carried tunnels to %q, want one to %s", tunnels, want)
	}
}
