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

	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
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
	if err := testutil.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// helperMain runs in a child process. Modes:
//   - replica ADDR: a tiny replica on ADDR (fd:N: on the inherited
//     listening socket N). Exits 3 at once while the file named by
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
	var (
		ln  net.Listener
		err error
	)
	if fd, ok := strings.CutPrefix(addr, "fd:"); ok {
		n, _ := strconv.Atoi(fd)
		f := os.NewFile(uintptr(n), "listener")
		ln, err = net.FileListener(f)
		f.Close()
	} else {
		ln, err = net.Listen("tcp", addr)
	}
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

// waitState polls the state file until cond holds for it.
func waitState(t *testing.T, path string, limit time.Duration, what string, cond func([]replicastate.Replica) bool) []replicastate.Replica {
	t.Helper()
	return testutil.WaitValue(t, limit, what, func() ([]replicastate.Replica, error) { return replicastate.Read(path) }, cond)
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

// healthPID returns the pid a helper replica on port reports, or 0.
func healthPID(port int) int {
	_, body := testutil.Health("127.0.0.1:"+strconv.Itoa(port), time.Second)
	var pid int
	fmt.Sscan(body, &pid)
	return pid
}
