package k8stest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// NodeScript is the path of the node script from the repository root.
const NodeScript = "scripts/k8s-node.sh"

// RequireNodeEnv names the environment variable that, set to 1, makes
// StartNode fail a test instead of skipping it when the node cannot start
// here (CI sets it through make test-node).
const RequireNodeEnv = "LLMCHAOS_REQUIRE_K8S_NODE"

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
}

var sharedNode struct {
	mu     sync.Mutex
	done   bool
	node   *Node
	err    error
	script string
}

// StartNode returns the test binary's node, starting it (with its own
// control plane, no kwok nodes) on first use, stopped by Run. It skips t
// when the node cannot start here (not Linux, not root, not built: the
// reason is the script's check), failing it instead with
// LLMCHAOS_REQUIRE_K8S_NODE=1. One node per machine: a second test binary
// that wants one while another holds it fails to start it.
func StartNode(t testing.TB) *Node {
	t.Helper()
	n, err := startSharedNode()
	if err != nil {
		var nb *NotBuiltError
		if errors.As(err, &nb) && os.Getenv(RequireNodeEnv) != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs: %s", filepath.Join(n.Dir, "..", "*.log"))
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
	sharedNode.node, sharedNode.script, sharedNode.err = startNode(context.Background())
	return sharedNode.node, sharedNode.err
}

func startNode(ctx context.Context) (*Node, string, error) {
	cp, err := FindScript()
	if err != nil {
		return nil, "", err
	}
	script := filepath.Join(filepath.Dir(filepath.Dir(cp)), NodeScript)
	if err := Check(ctx, script); err != nil {
		return nil, script, err
	}
	dir, err := os.MkdirTemp("", "llmchaos-node-")
	if err != nil {
		return nil, script, fmt.Errorf("k8stest: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if out, err := runScript(ctx, script, "start", dir, "--owner", strconv.Itoa(os.Getpid())); err != nil {
		return nil, script, fmt.Errorf("k8stest: starting the node in %s: %w\n%s", dir, err, out)
	}
	env, err := readEnv(filepath.Join(dir, "env"))
	if err != nil {
		return nil, script, err
	}
	config, err := clientcmd.BuildConfigFromFlags("", env["KUBECONFIG"])
	if err != nil {
		return nil, script, fmt.Errorf("k8stest: loading %s: %w", env["KUBECONFIG"], err)
	}
	config.QPS, config.Burst = 100, 200
	c := &Cluster{Dir: filepath.Join(dir, "cp"), Kubeconfig: env["KUBECONFIG"], config: config}
	return &Node{Cluster: c, Name: env["NODE_NAME"], IP: env["NODE_IP"], PodCIDR: env["POD_CIDR"], Image: env["IMAGE"]}, script, nil
}

// stopSharedNode stops the node if a test started one.
func stopSharedNode() error {
	sharedNode.mu.Lock()
	defer sharedNode.mu.Unlock()
	n := sharedNode.node
	if n == nil {
		return nil
	}
	sharedNode.node = nil
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	dir := filepath.Dir(n.Dir)
	if out, err := runScript(ctx, sharedNode.script, "stop", dir); err != nil {
		return fmt.Errorf("k8stest: stopping the node in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// readEnv reads a KEY=VALUE file.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("k8stest: %w", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}
