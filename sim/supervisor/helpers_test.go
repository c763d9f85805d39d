package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary act as a child program (see TestMain).
const helperEnv = "SUPERVISOR_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode, os.Args[len(os.Args)-1]))
	}
	// Orphaned descendants (children of a killed supervisor or parent) are
	// re-parented to this process, so the tests can reap them and see how
	// they ended instead of leaving zombies behind.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "set child subreaper:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// helperMain runs in a child process. Modes:
//   - replica ADDR: a tiny replica. Exits 3 at once while the file named by
//     $BLOCK_FILE exists; /health answers 503 for $STARTUP, then 200 with its
//     pid; exits 0 on SIGTERM, unless $IGNORE_TERM is set.
//   - supervise STATEFILE: runs Run with replica children on $BASE_PORT.
//   - middle ARG: starts "leaf" as its child, prints the leaf's pid once the
//     leaf watches, then waits to be killed.
//   - leaf MODE: WatchParent (MODE pidfd or poll), prints "watching", and exits
//     0 with "parent died" on stderr when its parent dies.
func helperMain(mode, arg string) int {
	switch mode {
	case "replica":
		return helperReplica(arg)
	case "supervise":
		port, _ := strconv.Atoi(os.Getenv("BASE_PORT"))
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		err := Run(ctx, Options{
			Replicas: 2, BasePort: port, StateFile: arg,
			Command: func(s Slot) *exec.Cmd { return helperCmd("replica", s.Addr, nil) },
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "middle":
		leaf := helperCmd("leaf", arg, nil)
		out, err := leaf.StdoutPipe()
		if err != nil {
			return 1
		}
		if err := leaf.Start(); err != nil {
			return 1
		}
		buf := make([]byte, len("watching\n"))
		if _, err := out.Read(buf); err != nil {
			return 1
		}
		fmt.Println(leaf.Process.Pid)
		leaf.Wait()
		return 0
	case "leaf":
		ctx, stop := watchParent(context.Background(), arg == "pidfd")
		defer stop()
		fmt.Println("watching")
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), ErrParentDied) {
			return 0
		}
		return 1
	}
	return 2
}

func helperReplica(addr string) int {
	if f := os.Getenv("BLOCK_FILE"); f != "" {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintln(os.Stderr, "blocked: exiting 3")
			return 3
		}
	}
	startup, _ := time.ParseDuration(os.Getenv("STARTUP"))
	ready := time.Now().Add(startup)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sigs := []os.Signal{syscall.SIGTERM}
	if os.Getenv("IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
		sigs = []os.Signal{syscall.SIGUSR1}
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if time.Now().Before(ready) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, os.Getpid())
	})}
	go srv.Serve(ln)
	<-ctx.Done()
	srv.Close()
	return 0
}

// helperCmd returns a command that runs the test binary in a helper mode.
func helperCmd(mode, arg string, env []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	// A race-enabled binary sleeps 1 s at exit by default; children here
	// must exit within the stop grace of the tests.
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0"), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// freePorts returns n consecutive ports that were free a moment ago on
// 127.0.0.1 (the kernel picks the first; the rest are checked).
func freePorts(t testing.TB, n int) int {
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

// waitState polls the state file until cond holds for it.
func waitState(t *testing.T, path string, limit time.Duration, what string, cond func([]Replica) bool) []Replica {
	t.Helper()
	var last []Replica
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		rs, err := ReadState(path)
		if err == nil {
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

// processGone reports whether pid has exited (gone or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// reap waits (bounded) for an adopted descendant and returns its wait status.
func reap(t *testing.T, pid int, limit time.Duration) unix.WaitStatus {
	t.Helper()
	var ws unix.WaitStatus
	waitFor(t, limit, fmt.Sprintf("process %d to exit", pid), func() bool {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		return err == nil && got == pid
	})
	return ws
}

// healthPID returns the pid a helper replica on port reports, or 0.
func healthPID(port int) int {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var pid int
	fmt.Fscan(resp.Body, &pid)
	return pid
}
