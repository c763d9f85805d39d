package simtest

import (
	"fmt"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// binDir holds bin/llmchaos, built once by TestMain; it doubles as the
// Docker build context of the image test.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// Orphans (children of a killed supervisor or balloon parent) are
	// re-parented here, so the tests can reap them and see how they ended.
	if err := testutil.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testutil.RunWithLLMChaos(m, "llmchaos-simtest-*", func(dir string) { binDir = dir })
}

// llmchaosBin is the path of the built binary.
func llmchaosBin() string { return testutil.BinPath(binDir) }

// llmchaos starts the built binary.
func llmchaos(t *testing.T, args ...string) *testutil.Proc {
	t.Helper()
	return testutil.StartProc(t, []string{"TMPDIR=" + t.TempDir()}, llmchaosBin(), args...)
}

// startBalloon starts a balloon and waits until it holds.
func startBalloon(t *testing.T, args ...string) *testutil.Proc {
	t.Helper()
	b := llmchaos(t, append([]string{"gpu-balloon"}, args...)...)
	b.WaitOutput(t, b.Out, regexp.MustCompile(`holding .* on vgpu \d+`))
	return b
}

// servingAddr waits for a single replica's "serving" log line and returns its address.
func servingAddr(t *testing.T, p *testutil.Proc) string {
	t.Helper()
	return p.WaitOutput(t, p.Err, regexp.MustCompile(`msg=serving addr=(\S+)`))[1]
}

// healthCode returns the status of GET /health on addr, or 0 when nothing
// answers within a second.
func healthCode(addr string) int { return testutil.HealthCode(addr, time.Second) }

// waitState polls a supervisor's state file until cond holds.
func waitState(t *testing.T, path string, limit time.Duration, what string, cond func([]replicastate.Replica) bool) []replicastate.Replica {
	t.Helper()
	return testutil.WaitValue(t, limit, what, func() ([]replicastate.Replica, error) { return replicastate.Read(path) }, cond)
}

// regexpMust compiles re.
func regexpMust(re string) *regexp.Regexp { return regexp.MustCompile(re) }

// signal sends sig to pid.
func signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill -%d %d: %v", sig, pid, err)
	}
}
