package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // database/sql driver "postgres"
)

// Bounds of the waits: initdb and the first start of a cluster take a few
// seconds, more on a loaded 2-core machine under the race detector.
const (
	initTimeout  = 3 * time.Minute
	startTimeout = 90 * time.Second
	stopTimeout  = 30 * time.Second
)

// RequireEnv names the variable that turns a skip into a failure.
const RequireEnv = "LLMCHAOS_REQUIRE_POSTGRES"

// nobody is the unprivileged uid and gid the server runs as under root.
const nobody = 65534

// Server is a running PostgreSQL server.
type Server struct {
	// URL is the server's postgres database as the superuser "postgres"
	// (trust authentication, no TLS).
	URL  string
	port int

	logMu sync.Mutex
	log   bytes.Buffer
	dbs   atomic.Int64
}

// Log returns what the server wrote so far.
func (s *Server) Log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// skip skips t, or fails it when RequireEnv is set.
func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf(format+" ("+RequireEnv+"=1)", args...)
	}
	t.Skipf(format, args...)
}

// binary finds a PostgreSQL server program on PATH or where Debian puts
// them (/usr/lib/postgresql/VERSION/bin, newest first).
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH nor under /usr/lib/postgresql/*/bin (Debian package postgresql; .ci/run installs it)", name)
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start initialises a cluster and starts a server on it, for the rest of t.
func Start(t testing.TB) *Server {
	t.Helper()
	initdb, err := binary("initdb")
	if err != nil {
		skip(t, "PostgreSQL: %v", err)
	}
	postgres, err := binary("postgres")
	if err != nil {
		skip(t, "PostgreSQL: %v", err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	dir, err := os.MkdirTemp("", "llmchaos-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			skip(t, "PostgreSQL refuses to run as root, and the data directory cannot be given to nobody: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		if cred != nil && (os.IsPermission(err) || strings.Contains(err.Error(), "operation not permitted")) {
			skip(t, "PostgreSQL refuses to run as root, and this process cannot run it as nobody: %v", err)
		}
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A port picked free can be taken before the server binds it: try
	// another then.
	for attempt := 1; ; attempt++ {
		s, retry, err := start(t, postgres, data, cred)
		if err == nil {
			return s
		}
		if !retry || attempt == 3 {
			t.Fatal(err)
		}
	}
}

// ready is the server's line once it accepts connections.
const ready = "database system is ready to accept connections"

// start runs the server on a free port and waits until it is ready.
func start(t testing.TB, postgres, data string, cred *syscall.Credential) (*Server, bool, error) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		return nil, false, err
	}
	s := &Server{port: port, URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
	cmd := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, false, err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("start postgres: %w", err)
	}
	readyc := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			line := sc.Text()
			s.logMu.Lock()
			s.log.WriteString(line + "\n")
			s.logMu.Unlock()
			if !once && strings.Contains(line, ready) {
				close(readyc)
				once = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	exited := make(chan error, 1)
	go func() {
		<-copied // Wait closes the pipe: read it all first
		exited <- cmd.Wait()
	}()
	stop := func() error {
		// SIGINT is PostgreSQL's fast shutdown: it ends the sessions and
		// stops cleanly.
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			return err
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("postgres did not stop within %v of SIGINT; killed", stopTimeout)
		}
	}
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case <-readyc:
	case err := <-exited:
		log := s.Log()
		return nil, strings.Contains(log, "could not bind") || strings.Contains(log, "could not create any TCP/IP sockets"),
			fmt.Errorf("postgres exited before it was ready: %v\n%s", err, log)
	case <-deadline.C:
		_ = stop()
		return nil, false, fmt.Errorf("postgres was not ready within %v\n%s", startTimeout, s.Log())
	}
	t.Cleanup(func() {
		if err := stop(); err != nil && !isSignalExit(err) {
			t.Errorf("stop postgres: %v\n%s", err, s.Log())
		}
	})
	return s, false, nil
}

// isSignalExit says the server ended as a fast shutdown ends it.
func isSignalExit(err error) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && (ee.ExitCode() == 0 || !ee.Exited())
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NewDatabase creates an empty database on s for one test and returns its
// URL; it is dropped with the server.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test_%d", s.dbs.Add(1))
	db, err := sql.Open("postgres", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v\n%s", name, err, s.Log())
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}
