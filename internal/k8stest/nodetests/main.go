// Command nodetests runs the tests that need a real Kubernetes node (their
// names end in OnARealNode, internal/k8stest.StartNode) on one node for the
// whole run: it finds the packages that have such tests, records the host's
// state, starts scripts/k8s-node.sh's node, runs go test over those packages
// with the node's directory in LLMCHAOS_K8S_NODE_DIR (every test binary
// attaches to it, each test in a namespace of its own), stops the node, and
// fails when the host is not as it was (internal/k8stest/hoststate). It
// prints the node's start and stop times.
//
//	go run ./internal/k8stest/nodetests [-- GO-TEST-FLAGS...]
//
// The flags after -- go to go test before the packages (make test-node:
// -race -count=1 -p 1 -timeout 20m). When the node cannot start here (not
// Linux, not root, not built: the script's check says why) it says so and
// exits 0, unless LLMCHAOS_REQUIRE_K8S_NODE=1, where that is a failure.
// SIGINT and SIGTERM reach go test and the node is stopped after it; should
// this process be killed outright, the script's watcher (start --owner)
// stops the node.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/internal/k8stest/hoststate"
)

// Names shared with internal/k8stest (not imported: this command builds
// from the standard library in moments).
const (
	script         = "scripts/k8s-node.sh"
	nodeDirEnv     = "LLMCHAOS_K8S_NODE_DIR"
	requireNodeEnv = "LLMCHAOS_REQUIRE_K8S_NODE"
	// checkCannot is the script check's exit status when the node cannot
	// start here.
	checkCannot = 3
	// nodeWait is how long a start waits for another node on this machine
	// to stop (one node per machine).
	nodeWait = 15 * time.Minute
	// stopTimeout bounds the script's stop (10 s at most per component).
	stopTimeout = 2 * time.Minute
)

// nodeTest matches the declaration of a test that needs the node.
var nodeTest = regexp.MustCompile(`(?m)^func (Test\w*OnARealNode)\(`)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/k8stest/nodetests [-- GO-TEST-FLAGS...]")
		os.Exit(2)
	}
	os.Exit(run(args))
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "nodetests: "+format+"\n", a...)
}

func run(testFlags []string) int {
	// SIGINT and SIGTERM are passed on to go test, which ends; this process
	// stays to stop the node. (Caught, not ignored: an ignored signal
	// would stay ignored in go test.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx := context.Background()
	pkgs, tests, err := nodePackages(ctx)
	if err != nil {
		logf("%v", err)
		return 1
	}
	if len(pkgs) == 0 {
		logf("no test named Test...OnARealNode in this module")
		return 1
	}
	logf("%d node tests in %s", tests, strings.Join(pkgs, " "))
	if out, err := exec.CommandContext(ctx, "bash", script, "check").CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != checkCannot {
			logf("%s check: %v\n%s", script, err, out)
			return 1
		}
		if os.Getenv(requireNodeEnv) == "1" {
			logf("%s=1 and %s", requireNodeEnv, strings.TrimSpace(string(out)))
			return 1
		}
		logf("the node tests are skipped: %s", strings.TrimSpace(string(out)))
		return 0
	}
	dir, err := os.MkdirTemp("", "llmchaos-node-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	facts, err := hoststate.ReadFacts(ctx, script)
	if err != nil {
		logf("%v", err)
		return 1
	}
	before, err := hoststate.Take(ctx, facts, dir)
	if err != nil {
		logf("%v", err)
		return 1
	}
	start := time.Now()
	out, err := scriptRun(ctx, nodeWait+5*time.Minute, "start", dir, "--owner", strconv.Itoa(os.Getpid()),
		"--wait", strconv.Itoa(int(nodeWait.Seconds())))
	if err != nil {
		logf("starting the node in %s: %v\n%s", dir, err, out)
		return 1
	}
	if bytes.Contains(out, []byte("waited")) {
		// The state before was another node's; the script's own record,
		// taken once that one had stopped, is all there is to go by.
		before = nil
	}
	logf("node up in %.1f s (%s); the script's account:\n%s", time.Since(start).Seconds(), dir, scriptLines(out))

	cmd := exec.Command("go", slices.Concat([]string{"test"}, testFlags, pkgs)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), nodeDirEnv+"="+dir, requireNodeEnv+"=1")
	var code int
	select {
	case s := <-sigs:
		logf("%v while the node started: no tests run", s)
		code = 1
	default:
		code = runTests(cmd, sigs)
	}

	stop := time.Now()
	out, err = scriptRun(ctx, stopTimeout, "stop", dir)
	if err != nil {
		logf("stopping the node in %s: %v\n%s", dir, err, out)
		return 1
	}
	logf("node stopped in %.1f s; the script's account:\n%s", time.Since(stop).Seconds(), scriptLines(out))
	if before != nil {
		after, err := hoststate.Take(ctx, facts, dir)
		if err != nil {
			logf("%v", err)
			return 1
		}
		if d := hoststate.Diff(before, after); d != "" {
			logf("the node's stop left the host changed:\n%s", d)
			return 1
		}
		logf("the host is as it was before the node (%d entries of host state compared)", len(before))
	}
	if code != 0 {
		logf("the node's logs stay in %s", dir)
		return code
	}
	if err := os.RemoveAll(dir); err != nil {
		logf("%v", err)
		return 1
	}
	return 0
}

// runTests runs go test (cmd), passing on the signals received meanwhile,
// and returns its exit code.
func runTests(cmd *exec.Cmd, sigs <-chan os.Signal) int {
	if err := cmd.Start(); err != nil {
		logf("go test: %v", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return 1
			}
			if err != nil {
				logf("go test: %v", err)
				return 1
			}
			return 0
		case s := <-sigs:
			logf("%v: passed on to go test; the node stops after it", s)
			_ = cmd.Process.Signal(s)
		}
	}
}

// scriptLines returns the script's own lines of out ("k8s-node: ...",
// "k8s-controlplane: ..."), indented.
func scriptLines(out []byte) string {
	var b strings.Builder
	for l := range strings.Lines(string(out)) {
		if strings.HasPrefix(l, "k8s-") {
			b.WriteString("  " + l)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// scriptRun runs the node script with args and returns its combined output.
func scriptRun(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	// A daemon the script leaves running writes to its own log, not to
	// this pipe; should one inherit it, the wait stays bounded.
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

// nodePackages returns the module's packages with tests that need the node
// (./path form, sorted) and how many tests those are.
func nodePackages(ctx context.Context) ([]string, int, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-f",
		`{{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		return nil, 0, fmt.Errorf("go list: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, 0, err
	}
	var pkgs []string
	tests := 0
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n := 0
		for _, name := range f[1:] {
			b, err := os.ReadFile(filepath.Join(f[0], name))
			if err != nil {
				return nil, 0, err
			}
			n += len(nodeTest.FindAll(b, -1))
		}
		if n == 0 {
			continue
		}
		rel, err := filepath.Rel(wd, f[0])
		if err != nil {
			return nil, 0, err
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel)+"/")
		tests += n
	}
	slices.Sort(pkgs)
	return pkgs, tests, nil
}
