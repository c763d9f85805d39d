package k8stest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/k8stest/hoststate"
)

// NodeScript is the path of the node script from the repository root.
const NodeScript = "scripts/k8s-node.sh"

// RequireNodeEnv names the environment variable that, set to 1, fails the
// tests that need a real node when none can start here instead of skipping
// them (.ci/run sets it).
const RequireNodeEnv = "LLMCHAOS_REQUIRE_K8S_NODE"

// NodeDirEnv names the environment variable that points the tests at a
// node already running (its directory, scripts/k8s-node.sh start DIR): the
// node test runner (internal/k8stest/nodetests, which make test and make
// test-node call) starts one node for every package it runs, sets it and
// stops the node after them. Without it, StartNode starts a node of the
// test binary's own when LLMCHAOS_REQUIRE_K8S_NODE=1 (one package run by
// hand) and skips otherwise.
const NodeDirEnv = "LLMCHAOS_K8S_NODE_DIR"

// Node is a control plane with one real node (scripts/k8s-node.sh): a
// kubelet and a containerd whose pods run containers of the images Image
// (llmchaos, FROM scratch, of this checkout) and PauseImage. Pods must use
// imagePullPolicy Never or IfNotPresent: there is no registry.
type Node struct {
	*Cluster
	// Name, IP and PodCIDR are the node's; the host reaches its pods'
	// IPs directly (the node's bridge).
	Name, IP, PodCIDR string
	// Image is the llmchaos image imported into the node.
	Image string
	// NodeDir is the node's directory: its logs (*.log), its control
	// plane's (cp/*.log).
	NodeDir string
}

// nodeWait is how long a start waits for another test binary's node to
// stop (one node per machine; go test runs packages in parallel).
const nodeWait = 15 * time.Minute

var sharedNode struct {
	mu     sync.Mutex
	done   bool
	node   *Node
	err    error
	script string
	// facts and before: the host-wide state before the start, which the
	// stop must leave as it was.
	facts  hoststate.Facts
	before []string
	// attached: the node is the runner's (NodeDirEnv), which stops it.
	attached bool
}

// StartNode returns the node of the run: the runner's when NodeDirEnv
// names one (every test binary of the run shares it; the runner stops it
// and checks the host), else one of the test binary's own, started on
// first use (with its own control plane, no kwok nodes) and stopped by Run,
// which then checks that the host is as it was before the start
// (hoststate) and fails the run if not. Without a runner's node it skips t
// unless LLMCHAOS_REQUIRE_K8S_NODE=1, and then fails it when the node
// cannot start (not Linux, not root, not built: the script's check says
// why). One node per machine: a test binary whose start finds another's
// node running waits for it to stop (up to 15 minutes). Tests share the
// node: each works in a namespace of its own (Namespace).
func StartNode(t testing.TB) *Node {
	t.Helper()
	if os.Getenv(NodeDirEnv) == "" && os.Getenv(RequireNodeEnv) != "1" {
		t.Skipf("needs a real Kubernetes node, which make test and make test-node start where they can "+
			"(as root on Linux, built: scripts/k8s-node.sh check says what is missing); %s=1 starts one here", RequireNodeEnv)
	}
	n, err := startSharedNode()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs: %s", filepath.Join(n.NodeDir, "*.log"))
		}
	})
	return n
}

func startSharedNode() (*Node, error) {
	sharedNode.mu.Lock()
	defer sharedNode.mu.Unlock()
	if sharedNode.done {
		return sharedNode.node, sharedNode.err
	}
	sharedNode.done = true
	if dir := os.Getenv(NodeDirEnv); dir != "" {
		sharedNode.attached = true
		sharedNode.node, sharedNode.err = attachNode(dir)
		return sharedNode.node, sharedNode.err
	}
	script, err := nodeScript()
	if err != nil {
		sharedNode.err = err
		return nil, err
	}
	sharedNode.script = script
	ctx := context.Background()
	if err := Check(ctx, script); err != nil {
		sharedNode.err = err
		return nil, err
	}
	dir, err := os.MkdirTemp("", "llmchaos-node-")
	if err != nil {
		sharedNode.err = fmt.Errorf("k8stest: %w", err)
		return nil, sharedNode.err
	}
	if sharedNode.facts, err = hoststate.ReadFacts(ctx, script); err == nil {
		sharedNode.before, err = hoststate.Take(ctx, sharedNode.facts, dir)
	}
	if err == nil {
		var waited bool
		sharedNode.node, waited, err = StartNodeIn(ctx, script, dir, os.Getpid(), nodeWait)
		if waited {
			// The state before was another node's: the script's record
			// of it, taken once that node had stopped, is the reference.
			sharedNode.before = nil
		}
	}
	sharedNode.err = err
	return sharedNode.node, err
}

// nodeScript returns the absolute path of scripts/k8s-node.sh.
func nodeScript() (string, error) {
	cp, err := FindScript()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(filepath.Dir(cp)), NodeScript), nil
}

// StartNodeIn starts a node in dir with the script, waiting up to wait for
// another one on this machine to stop, and reports whether it waited. With
// owner > 0 the node stops by itself when process owner exits. Most tests
// want the shared one (StartNode); StartNodeIn is for tests of starting
// and stopping. A failed start stops what it started.
func StartNodeIn(ctx context.Context, script, dir string, owner int, wait time.Duration) (*Node, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout+wait)
	defer cancel()
	args := []string{"start", dir, "--wait", strconv.Itoa(int(wait.Seconds()))}
	if owner > 0 {
		args = append(args, "--owner", strconv.Itoa(owner))
	}
	out, err := runScript(ctx, script, args...)
	waited := strings.Contains(out, "waited")
	if err != nil {
		return nil, waited, fmt.Errorf("k8stest: starting the node in %s: %w\n%s", dir, err, out)
	}
	n, err := attachNode(dir)
	return n, waited, err
}

// attachNode returns the node running in dir (its env file).
func attachNode(dir string) (*Node, error) {
	env, err := readEnv(filepath.Join(dir, "env"))
	if err != nil {
		return nil, fmt.Errorf("%w (no node runs in %s)", err, dir)
	}
	c, err := loadCluster(filepath.Join(dir, "cp"), env["KUBECONFIG"])
	if err != nil {
		return nil, err
	}
	return &Node{Cluster: c, NodeDir: dir, Name: env["NODE_NAME"], IP: env["NODE_IP"], PodCIDR: env["POD_CIDR"], Image: env["IMAGE"]}, nil
}

// StopNode runs the script's stop on the node's directory.
func StopNode(ctx context.Context, script string, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	if out, err := runScript(ctx, script, "stop", n.NodeDir); err != nil {
		return fmt.Errorf("k8stest: stopping the node in %s: %w\n%s", n.NodeDir, err, out)
	}
	return nil
}

// stopSharedNode stops the node if a test started one, and checks that the
// host is as it was before.
func stopSharedNode() error {
	sharedNode.mu.Lock()
	defer sharedNode.mu.Unlock()
	n := sharedNode.node
	if n == nil || sharedNode.attached {
		return nil
	}
	sharedNode.node = nil
	ctx := context.Background()
	if err := StopNode(ctx, sharedNode.script, n); err != nil {
		return err
	}
	if sharedNode.before == nil {
		return nil
	}
	after, err := hoststate.Take(ctx, sharedNode.facts, n.NodeDir)
	if err != nil {
		return err
	}
	if d := hoststate.Diff(sharedNode.before, after); d != "" {
		return fmt.Errorf("k8stest: the node's stop left the host changed:\n%s", d)
	}
	return nil
}

// readEnv reads a KEY=VALUE file.
func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("k8stest: %w", err)
	}
	return parseEnv(string(b)), nil
}

// parseEnv reads KEY=VALUE lines; other lines are skipped.
func parseEnv(s string) map[string]string {
	env := map[string]string{}
	for l := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.ContainsAny(k, " :") {
			env[k] = v
		}
	}
	return env
}
