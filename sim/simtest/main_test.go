package simtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/sim/supervisor"
)

// binDir holds bin/llmchaos, built once by TestMain; it doubles as the
// Docker build context of the image test.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "llmchaos-simtest-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go") // go test passes GOROOT on
	}
	// Static, as `make build` makes it, so that the image test can use it.
	build := exec.Command(goTool, "build", "-trimpath", "-o", filepath.Join(dir, "bin", "llmchaos"), "github.com/llmchaos/llmchaos/cmd/llmchaos")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build llmchaos:", err)
		return 1
	}
	// Orphans (children of a killed supervisor or balloon parent) are
	// re-parented here, so the tests can reap them and see how they ended.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "set child subreaper:", err)
		return 1
	}
	return m.Run()
}

// llmchaosBin is the path of the built binary.
func llmchaosBin() string { return filepath.Join(binDir, "bin", "llmchaos") }

// syncBuffer is a bytes.Buffer safe for a process writing while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running child process with its output captured.
type proc struct {
	cmd      *exec.Cmd
	out, err *syncBuffer
	done     chan struct{} // closed once the process has been waited for
}

// startProc starts name with args; the test's cleanup kills what is left.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, nil, name, args...)
}

// startProcEnv is startProc with env added to the test's environment.
func startProcEnv(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), args, p.out, p.err)
		}
	})
	return p
}

// llmchaos starts the built binary.
func llmchaos(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, []string{"TMPDIR=" + t.TempDir()}, llmchaosBin(), args...)
}

// exitCode waits up to limit for the process to exit and returns its exit
// code (-1 when a signal ended it).
func (p *proc) exitCode(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("%v still running after %v; stderr:\n%s", p.cmd.Args, limit, p.err)
		return 0
	}
}

// waitOutput waits until re matches the text of w.
func (p *proc) waitOutput(t *testing.T, w *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := re.FindStringSubmatch(w.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(w.String()); m != nil {
				return m
			}
			t.Fatalf("%v exited (%v) before printing %v; stderr:\n%s", p.cmd.Args, p.cmd.ProcessState, re, p.err)
		case <-deadline.C:
			t.Fatalf("%v printed nothing matching %v within 20s; stderr:\n%s", p.cmd.Args, re, p.err)
		case <-tick.C:
		}
	}
}

// startBalloon starts a balloon and waits until it holds.
func startBalloon(t *testing.T, args ...string) *proc {
	t.Helper()
	b := llmchaos(t, append([]string{"gpu-balloon"}, args...)...)
	b.waitOutput(t, b.out, regexp.MustCompile(`holding .* on vgpu \d+`))
	return b
}

// servingAddr waits for a single replica's "serving" log line and returns its address.
func servingAddr(t *testing.T, p *proc) string {
	t.Helper()
	return p.waitOutput(t, p.err, regexp.MustCompile(`msg=serving addr=(\S+)`))[1]
}

// healthCode returns the status of GET /health on addr, or 0 when nothing answers.
func healthCode(addr string) int {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond every 10 ms until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// waitState polls a supervisor's state file until cond holds.
func waitState(t *testing.T, path string, limit time.Duration, what string, cond func([]supervisor.Replica) bool) []supervisor.Replica {
	t.Helper()
	var last []supervisor.Replica
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if rs, err := supervisor.ReadState(path); err == nil {
			last = rs
			if cond(rs) {
				return rs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state %+v", limit, what, last)
		}
		<-tick.C
	}
}

// freePorts returns the first of n consecutive ports free a moment ago.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := base+n-1 <= 65535
		for p := base + 1; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// reap waits (bounded) for an adopted descendant and returns its wait status.
func reap(t *testing.T, pid int, limit time.Duration) unix.WaitStatus {
	t.Helper()
	var ws unix.WaitStatus
	waitFor(t, limit, fmt.Sprintf("process %d to exit", pid), func() bool {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.ECHILD) {
			// Not (or no longer) our child: it is gone once /proc has no
			// entry for it. Report it as killed, since nothing else here
			// ends these processes.
			if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(serr) {
				ws = unix.WaitStatus(unix.SIGKILL)
				return true
			}
			return false
		}
		return err == nil && got == pid
	})
	return ws
}

// streamResult is what a client saw of one streamed completion.
type streamResult struct {
	chunks int   // content chunks received
	done   bool  // saw data: [DONE]
	err    error // transport error, if any
	status int
}

// stream posts a streaming completion to addr and reads it to the end. first
// (if not nil) is closed when the first content chunk arrives.
func stream(ctx context.Context, addr string, maxTokens int, first chan<- struct{}) streamResult {
	body := fmt.Sprintf(`{"model":"llmchaos-sim","prompt":"tell me a long story","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return streamResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamResult{err: err}
	}
	defer resp.Body.Close()
	r := streamResult{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			r.done = true
		case strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`):
			r.chunks++
			if r.chunks == 1 && first != nil {
				close(first)
			}
		}
	}
	r.err = sc.Err()
	return r
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
