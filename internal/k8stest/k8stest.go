package k8stest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	clientgorest "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// RequireEnv names the environment variable that, set to 1, makes Start fail
// a test instead of skipping it when the control plane is not built (CI sets
// it through make test-k8s, so that a broken build cannot pass as skips).
const RequireEnv = "LLMCHAOS_REQUIRE_K8S"

// Script is the path of the control-plane script from the repository root.
const Script = "scripts/k8s-controlplane.sh"

const (
	// startTimeout bounds one start of the control plane. It takes about
	// 20 s; the apiserver alone waits up to 120 s for readyz on a loaded
	// machine, and the nodes and the controller-manager up to 60 s each.
	startTimeout = 5 * time.Minute
	// startAttempts: a start can lose a port it picked to another process
	// before binding it; the script then fails and a second start picks anew.
	startAttempts = 2
	// stopTimeout bounds the script's stop (10 s at most per component).
	stopTimeout = 2 * time.Minute
)

// Cluster is a running control plane. It is shared by every test of the
// test binary: tests must not change cluster-wide objects that others rely
// on (the kwok nodes, the default namespace) and should work in a namespace
// of their own (Namespace).
type Cluster struct {
	// Dir holds the control plane's logs (Dir/*.log), pid files and
	// certificates.
	Dir string
	// Kubeconfig is the path of an admin (system:masters) kubeconfig.
	Kubeconfig string

	config   *rest.Config
	clientGo *clientgorest.Config
}

// NotBuiltError says that the control plane's binaries are not built (or
// etcd, openssl or curl are missing); Detail is the script's explanation.
type NotBuiltError struct {
	Detail string
}

// Error implements error.
func (e *NotBuiltError) Error() string {
	return "k8stest: " + e.Detail
}

// shared is the control plane of this test binary, started by the first
// Start and stopped by Main. It is package state on purpose: the point is
// one control plane per process instead of one per test (a start costs
// about 20 s of two cores).
var shared struct {
	mu      sync.Mutex
	done    bool // a start was tried; cluster or err holds its outcome
	cluster *Cluster
	err     error
	script  string
}

// Start returns the test binary's control plane, starting it on first use.
// It skips t when the binaries are not built (failing it instead when
// LLMCHAOS_REQUIRE_K8S=1) and fails t when the control plane does not start;
// a failed start is not retried by later tests.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := startShared()
	if err != nil {
		var nb *NotBuiltError
		if errors.As(err, &nb) && os.Getenv(RequireEnv) != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs: %s", filepath.Join(c.Dir, "*.log"))
		}
	})
	return c
}

// Main runs the tests of m and then stops the control plane if a test
// started one, and exits. It removes the control plane's directory when the
// tests passed and keeps it (naming it on stderr) when they did not.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that has more to do after the tests: it runs
// them, stops the control plane if a test started one, and returns the exit
// code instead of exiting.
func Run(m *testing.M) int {
	code := m.Run()
	if err := stopSharedNode(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	if err := stopShared(code == 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func startShared() (*Cluster, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.done {
		return shared.cluster, shared.err
	}
	shared.done = true
	shared.cluster, shared.script, shared.err = start(context.Background())
	return shared.cluster, shared.err
}

func stopShared(removeDir bool) error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	c := shared.cluster
	if c == nil {
		return nil
	}
	shared.cluster = nil
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := Stop(ctx, shared.script, c.Dir); err != nil {
		return err
	}
	if !removeDir {
		fmt.Fprintf(os.Stderr, "k8stest: the control plane's logs stay in %s\n", c.Dir)
		return nil
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("k8stest: removing the control plane's directory: %w", err)
	}
	return nil
}

// start locates the script, checks that the control plane is built and
// starts one in a new temporary directory, owned by this process.
func start(ctx context.Context) (*Cluster, string, error) {
	script, err := FindScript()
	if err != nil {
		return nil, "", err
	}
	if err := Check(ctx, script); err != nil {
		return nil, script, err
	}
	dir, err := os.MkdirTemp("", "llmchaos-k8s-")
	if err != nil {
		return nil, script, fmt.Errorf("k8stest: %w", err)
	}
	var errs []error
	for range startAttempts {
		c, err := StartIn(ctx, script, dir, os.Getpid())
		if err == nil {
			return c, script, nil
		}
		errs = append(errs, err)
	}
	return nil, script, errors.Join(errs...)
}

// FindScript returns the absolute path of scripts/k8s-controlplane.sh,
// looking in the working directory and its parents (a test runs in its
// package's directory inside the repository).
func FindScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("k8stest: %w", err)
	}
	for {
		p := filepath.Join(dir, Script)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("k8stest: no %s in the working directory or above it; run the tests from inside the llmchaos repository", Script)
		}
		dir = parent
	}
}

// checkNotBuilt is the script's exit status for "not built".
const checkNotBuilt = 3

// Check runs the script's check: nil when the control plane is built, a
// *NotBuiltError saying what is missing when it is not.
func Check(ctx context.Context, script string) error {
	out, err := runScript(ctx, script, "check")
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == checkNotBuilt {
		return &NotBuiltError{Detail: strings.TrimSpace(out)}
	}
	if err != nil {
		return fmt.Errorf("k8stest: %s check: %w\n%s", script, err, out)
	}
	return nil
}

// StartIn starts a control plane in dir (which it creates if needed) with
// the script and loads its kubeconfig. With owner > 0 the control plane
// stops by itself when process owner exits. Most tests want the shared one
// (Start); StartIn is for tests of starting and stopping. It stops what it
// started when the start fails.
func StartIn(ctx context.Context, script, dir string, owner int) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	args := []string{"start", dir}
	if owner > 0 {
		args = append(args, "--owner", strconv.Itoa(owner))
	}
	if out, err := runScript(ctx, script, args...); err != nil {
		stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancelStop()
		return nil, errors.Join(fmt.Errorf("k8stest: starting the control plane in %s: %w\n%s", dir, err, out),
			Stop(stopCtx, script, dir))
	}
	return loadCluster(dir, filepath.Join(dir, "kubeconfig"))
}

// loadCluster returns the cluster of kubeconfig, with the configurations
// of llmchaos's client and client-go's.
func loadCluster(dir, kubeconfig string) (*Cluster, error) {
	config, _, err := rest.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		return nil, fmt.Errorf("k8stest: loading %s: %w", kubeconfig, err)
	}
	clientGo, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("k8stest: loading %s with client-go: %w", kubeconfig, err)
	}
	// Tests create and watch many objects in a short time; a default limit
	// (client-go's is 5 requests/s) would make them wait on the client.
	config.QPS, config.Burst = 100, 200
	clientGo.QPS, clientGo.Burst = 100, 200
	return &Cluster{Dir: dir, Kubeconfig: kubeconfig, config: config, clientGo: clientGo}, nil
}

// Stop runs the script's stop on dir: it kills the control plane started
// there and removes its certificates and data; the logs stay.
func Stop(ctx context.Context, script, dir string) error {
	if out, err := runScript(ctx, script, "stop", dir); err != nil {
		return fmt.Errorf("k8stest: stopping the control plane in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// runScript runs the script with bash and returns its combined output.
// Cancelling ctx kills the script; what it already started is left to stop.
func runScript(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The control plane the script leaves running writes to its own log
	// files, not to this pipe; should one inherit it, the wait stays bounded.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		err = fmt.Errorf("%w (%w)", err, ctxErr)
	}
	return out.String(), err
}

// Config returns a copy of the admin client configuration of llmchaos's
// client, for the caller to change freely.
func (c *Cluster) Config() *rest.Config {
	return rest.CopyConfig(c.config)
}

// ClientGoConfig returns a copy of the admin configuration of client-go,
// for tests that set up what llmchaos's client does not reach (RBAC,
// kustomize).
func (c *Cluster) ClientGoConfig() *clientgorest.Config {
	return clientgorest.CopyConfig(c.clientGo)
}

// Client returns an admin clientset (llmchaos's own, as the code under
// test uses), failing t if it cannot be made.
func (c *Cluster) Client(t testing.TB) *kube.Clientset {
	t.Helper()
	client, err := kube.NewClientset(c.Config())
	if err != nil {
		t.Fatalf("k8stest: clientset for %s: %v", c.Kubeconfig, err)
	}
	return client
}

// Clientset returns client-go's admin clientset, for tests that reach API
// groups llmchaos's own (Client) leaves out (authorization, node, ...),
// failing t if it cannot be made.
func (c *Cluster) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(c.ClientGoConfig())
	if err != nil {
		t.Fatalf("k8stest: clientset for %s: %v", c.Kubeconfig, err)
	}
	return client
}

// Namespace creates a namespace with a generated name (llmchaos-test-XXXXX)
// for t, deleted when t ends, and returns its name.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	client := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "llmchaos-test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("k8stest: creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		// The namespace controller deletes what is in it afterwards; nothing
		// waits for that.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("k8stest: deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// FixedNamespace gives t the namespace called name, for tests of what
// fixes its namespace (the catalog's experiments, deploy/kubernetes):
// it waits (up to 2 minutes) until one of that name left by an earlier
// test is gone, creates it, and deletes it when t ends. Tests that use the
// same name must not run at the same time (make test-node runs packages
// one after another).
func (c *Cluster) FixedNamespace(t testing.TB, name string) {
	t.Helper()
	client := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		_, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("k8stest: namespace %s of an earlier test still there: %v", name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("k8stest: creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("k8stest: deleting namespace %s: %v", name, err)
		}
	})
}
