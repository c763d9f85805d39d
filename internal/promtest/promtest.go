package promtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long Start waits for the server to listen and be
// ready: the TSDB of an empty directory opens in well under a second, but
// the race detector and a loaded 2-core machine slow everything down.
const startTimeout = 60 * time.Second

// Server is a running Prometheus.
type Server struct {
	URL string // http://127.0.0.1:PORT

	logMu sync.Mutex
	log   bytes.Buffer
}

// Log returns what the server wrote so far (its log), for failure messages.
func (s *Server) Log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// WriteURL returns the remote write receiver's URL.
func (s *Server) WriteURL() string { return s.URL + "/api/v1/write" }

// listening matches the log line that names the bound address.
var listening = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// Binary returns the path of the prometheus binary, or skips t.
func Binary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (Debian package prometheus; .ci/run installs it): %v", name, err)
	}
	return p
}

// Start runs a Prometheus with config (a prometheus.yml body; "" for one
// without scrape jobs) and flags added to its command line
// ("--enable-feature=native-histograms"), and waits until it answers
// /-/ready.
func Start(t testing.TB, config string, flags ...string) *Server {
	t.Helper()
	bin := Binary(t, "prometheus")
	dir := t.TempDir()
	if config == "" {
		config = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0",
		"--web.enable-remote-write-receiver",
		"--log.level=info",
	}, flags...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second // then SIGKILL
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start prometheus: %v", err)
	}
	s := &Server{}
	addrc := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.logMu.Lock()
			s.log.WriteString(line + "\n")
			s.logMu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				addrc <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	// exited is closed once the process has been waited for, waitErr then
	// holds why it ended: the cleanup and the start-up checks both watch it.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		<-copied // Wait closes the pipe: read it all first
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("prometheus did not exit within 15 s of SIGTERM")
		}
	})

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case addr := <-addrc:
		s.URL = "http://" + addr
	case <-exited:
		t.Fatalf("prometheus exited before listening: %v\n%s", waitErr, s.Log())
	case <-deadline.C:
		t.Fatalf("prometheus did not listen within %v\n%s", startTimeout, s.Log())
	}
	// Listening comes before the TSDB is open; /-/ready says when it is.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-tick.C:
		case <-exited:
			t.Fatalf("prometheus exited before ready: %v\n%s", waitErr, s.Log())
		case <-deadline.C:
			t.Fatalf("prometheus not ready within %v\n%s", startTimeout, s.Log())
		}
	}
}

// Sample is one element of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant query now and returns the vector.
func (s *Server) Query(q string) ([]Sample, error) {
	resp, err := http.Get(s.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: decode: %w", q, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", q, body.Data.ResultType)
	}
	out := make([]Sample, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		str, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", q, r.Value[1], err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// QueryUntil polls the instant query q every 100 ms until it returns a
// non-empty vector, which it returns; it fails t when timeout passes first.
func (s *Server) QueryUntil(t testing.TB, q string, timeout time.Duration) []Sample {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := s.Query(q)
		if err == nil && len(v) > 0 {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %q: nothing within %v (last error %v)\n%s", q, timeout, err, s.Log())
		}
		<-tick.C
	}
}
