package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/router"
	"github.com/llmchaos/llmchaos/sim/supervisor"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// The vGPU device is the simulator's memory (checked here, where both
// packages can be imported; vgpu must not import sim).
var _ sim.Memory = (*vgpu.Device)(nil)

// syncBuffer is a bytes.Buffer safe for a command writing while a test
// reads; the other tests of this package use it under this name.
type syncBuffer = testutil.SyncBuffer

// started is a command running in the background through execute.
type started struct {
	out, err *syncBuffer
	cancel   context.CancelFunc
	done     chan int
}

func startCmd(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{out: &syncBuffer{}, err: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() { s.done <- execute(ctx, args, s.out, s.err) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%v did not stop within 10s of its context", args)
		}
	})
	return s
}

// stop cancels the command and returns its exit code.
func (s *started) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code // for Cleanup
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("command did not stop within 10s of its context")
		return -1
	}
}

// waitOutput waits until re matches w's text and returns the submatches.
func waitOutput(t *testing.T, w *syncBuffer, re *regexp.Regexp, done <-chan int) []string {
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
		case code := <-done:
			t.Fatalf("command exited with %d before printing %v; output:\n%s", code, re, w)
		case <-deadline.C:
			t.Fatalf("no output matching %v within 20s; output:\n%s", re, w)
		case <-tick.C:
		}
	}
}

func TestSimFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "latency", args: []string{"--latency", "fast"}, want: []string{"latency", "fast"}},
		{name: "max-num-seqs", args: []string{"--max-num-seqs", "0"}, want: []string{"max-num-seqs"}},
		{name: "two at once", args: []string{"--max-model-len", "1", "--listen", "nohost"}, want: []string{"max-model-len", "--listen"}},
		{name: "gpu-memory unit", args: []string{"--gpu-memory", "12parsecs"}, want: []string{"--gpu-memory", "parsecs"}},
		{name: "gpu-memory zero", args: []string{"--gpu-memory", "0"}, want: []string{"gpu-memory"}},
		{name: "negative startup", args: []string{"--startup-time", "-1s"}, want: []string{"--startup-time"}},
		{name: "base-port alone", args: []string{"--base-port", "9000"}, want: []string{"--base-port needs --replicas"}},
		{name: "state-file alone", args: []string{"--state-file", "s.json"}, want: []string{"--state-file needs --replicas"}},
		{name: "negative base port", args: []string{"--replicas", "2", "--base-port", "-1"}, want: []string{"--base-port -1"}},
		{name: "listen-fd on the supervisor", args: []string{"--replicas", "2", "--listen-fd", "3"}, want: []string{"--listen-fd is for the supervisor's children"}},
		{name: "ports overflow", args: []string{"--replicas", "3", "--base-port", "65534"}, want: []string{"--base-port 65534"}},
		{name: "negative replicas", args: []string{"--replicas", "-1"}, want: []string{"--replicas"}},
		{name: "negative restart delay", args: []string{"--replicas", "1", "--restart-delay", "-1s"}, want: []string{"--restart-delay"}},
		{name: "missing token file", args: []string{"--admin-token-file", filepath.Join(dir, "nope")}, want: []string{"--admin-token-file", "no such file"}},
		{name: "empty token file", args: []string{"--admin-token-file", empty}, want: []string{"--admin-token-file", "empty"}},
		{name: "a device as token file", args: []string{"--admin-token-file", "/dev/zero"}, want: []string{"--admin-token-file /dev/zero: more than 65536 bytes"}},
		{name: "gpu without a ledger", args: []string{"--gpu", "1"}, want: []string{"--gpu needs --vgpu-dir"}},
		{name: "router alone", args: []string{"--router", "127.0.0.1:0"}, want: []string{"--router needs --replicas and --state-file"}},
		{name: "migrate without router", args: []string{"--migrate", "clean"}, want: []string{"--migrate, --migrate-span and --router-addr-file need --router"}},
		{name: "unknown migrate", args: []string{"--replicas", "2", "--state-file", "s.json", "--router", "127.0.0.1:0", "--migrate", "teleport"}, want: []string{"--migrate", "teleport"}},
		{name: "router address", args: []string{"--replicas", "2", "--state-file", "s.json", "--router", "nohost"}, want: []string{"--router \"nohost\""}},
		{name: "unknown flag", args: []string{"--gpus", "2"}, want: []string{"gpus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"sim"}, tt.args...), &out, &errb)
			if code != exitcode.Usage {
				t.Fatalf("exit code = %d, want %d; stderr %q", code, exitcode.Usage, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr = %q, want it to mention %q", errb.String(), w)
				}
			}
		})
	}
}

func TestSizeFlag(t *testing.T) {
	t.Parallel()
	var n int64
	f := sizeFlag{&n}
	if err := f.Set("80GB"); err != nil || n != 80_000_000_000 {
		t.Errorf("Set(80GB) = %v, n = %d, want nil, %d", err, n, int64(80_000_000_000))
	}
	if got := f.String(); got != "80000000000" {
		t.Errorf("String() = %q, want %q", got, "80000000000")
	}
	if err := f.Set("141GiB"); err != nil || f.String() != "141GiB" {
		t.Errorf("Set(141GiB): err %v, String() = %q, want %q", err, f.String(), "141GiB")
	}
	if err := f.Set("lots"); err == nil {
		t.Error("Set(lots) succeeded, want an error")
	}
}

// TestChildArgsRoundTrip checks that a replica started by the supervisor
// parses exactly the engine configuration of its parent.
func TestChildArgsRoundTrip(t *testing.T) {
	t.Parallel()
	parent := defaultSimOptions()
	parent.Engine.Model = "m x"
	parent.Engine.Latency = sim.LatencyConstant
	parent.Engine.TTFT = 123 * time.Millisecond
	parent.Engine.ITL = 7 * time.Millisecond
	parent.Engine.Seed = 42
	parent.Engine.MaxNumSeqs = 3
	parent.Engine.MaxWaiting = 9
	parent.Engine.MaxModelLen = 4096
	parent.Engine.MaxBatchedTokens = 1024
	parent.Engine.GPUMemory = 40*vgpu.GiB + 5
	parent.Engine.GPUUtilization = 0.85
	parent.Engine.MeanOutputTokens = 33
	parent.VGPUDir = "/tmp/v dir"
	parent.StartupTime = 250 * time.Millisecond
	parent.AdminTokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(parent.AdminTokenFile, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parent.Replicas = 4
	parent.EarlyRoleChunk = true
	slot := supervisor.Slot{Index: 2, Addr: "127.0.0.1:9002", Port: 9002, GPU: 5}

	args := childArgs(parent, slot)
	if args[0] != "sim" {
		t.Fatalf("args[0] = %q, want %q", args[0], "sim")
	}
	child := defaultSimOptions()
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	addSimFlags(fs, &child)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatalf("child cannot parse %q: %v", args, err)
	}
	if err := child.finish(fs); err != nil {
		t.Fatalf("child rejects %q: %v", args, err)
	}
	if child.Engine != parent.Engine {
		t.Errorf("child engine config = %+v, want %+v", child.Engine, parent.Engine)
	}
	want := simOptions{
		Engine: parent.Engine, Listen: slot.Addr, VGPUDir: parent.VGPUDir, GPU: slot.GPU,
		StartupTime: parent.StartupTime, AdminTokenFile: parent.AdminTokenFile, ReplicaIndex: slot.Index,
		RestartDelay: child.RestartDelay, StopGrace: child.StopGrace, EarlyRoleChunk: true, MigrateSpan: router.DefaultSpan,
	}
	if child != want {
		t.Errorf("child options = %+v, want %+v", child, want)
	}
	for _, a := range args {
		if strings.Contains(a, "secret") {
			t.Errorf("argument %q carries the token", a)
		}
	}

	// A slot on a port the supervisor bound: the child serves on the
	// inherited socket.
	slot.ListenFD = supervisor.ListenFD
	child = defaultSimOptions()
	fs = pflag.NewFlagSet("sim", pflag.ContinueOnError)
	addSimFlags(fs, &child)
	if err := fs.Parse(childArgs(parent, slot)[1:]); err != nil {
		t.Fatal(err)
	}
	if err := child.finish(fs); err != nil {
		t.Fatalf("child rejects --listen-fd: %v", err)
	}
	if child.ListenFD != supervisor.ListenFD || child.Listen != slot.Addr {
		t.Errorf("child listen fd %d on %q, want %d on %q", child.ListenFD, child.Listen, supervisor.ListenFD, slot.Addr)
	}
}

func TestSimServesUntilCancelled(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "secret-admin-token-4711"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startCmd(t, "sim", "--listen", "127.0.0.1:0", "--startup-time", "0s", "--gpu-memory", "40GiB",
		"--admin-token-file", tokenFile, "--vgpu-dir", t.TempDir())
	m := waitOutput(t, s.err, regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`), s.done)
	resp, err := http.Get("http://" + m[1] + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health = %d, want 200", resp.StatusCode)
	}
	// The token comes from the file, trimmed: the right one is let in, a wrong one not.
	for _, tc := range []struct {
		token string
		want  int
	}{{"wrong", http.StatusUnauthorized}, {token, http.StatusOK}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+m[1]+"/admin/state", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("/admin/state with token %q = %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
	if code := s.stop(t); code != exitcode.OK {
		t.Errorf("exit code after Ctrl-C = %d, want %d; stderr:\n%s", code, exitcode.OK, s.err)
	}
	if strings.Contains(s.err.String(), token) {
		t.Errorf("the admin token appears in the logs:\n%s", s.err)
	}
}

func TestSimRefusesToStartWithoutMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hog, err := vgpu.Open(dir, 0, 40*vgpu.GiB)
	if err != nil {
		t.Fatal(err)
	}
	defer hog.Close()
	if err := hog.Reserve(30*vgpu.GiB, "balloon"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"sim", "--listen", "127.0.0.1:0", "--vgpu-dir", dir, "--gpu-memory", "40GiB"}, &out, &errb)
	if code != exitcode.NoGPUMemory {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitcode.NoGPUMemory, errb.String())
	}
	for _, want := range []string{"cannot start", "10.00 GiB", "40.00 GiB"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not mention %q:\n%s", want, errb.String())
		}
	}
	if free, _ := hog.Free(); free != 10*vgpu.GiB {
		t.Errorf("free after the refused start = %d, want %d (a refused replica holds nothing)", free, 10*vgpu.GiB)
	}
}

func TestSimCapacityMismatchIsUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := vgpu.Open(dir, 0, 40*vgpu.GiB)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"sim", "--listen", "127.0.0.1:0", "--vgpu-dir", dir, "--gpu-memory", "80GiB"}, &out, &errb)
	if code != exitcode.Usage {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitcode.Usage, errb.String())
	}
	if !strings.Contains(errb.String(), "--gpu-memory") || !strings.Contains(errb.String(), "40.0 GiB") {
		t.Errorf("stderr = %q, want it to name --gpu-memory and the recorded 40.0 GiB", errb.String())
	}
}

func TestSimListenDefaultsToLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct{ listen, want string }{
		{":8123", "127.0.0.1:8123"},
		{":0", "127.0.0.1:0"},
		{"0.0.0.0:8000", "0.0.0.0:8000"},
		{"[::1]:8000", "[::1]:8000"},
		{"localhost:8000", "localhost:8000"},
	}
	for _, tt := range tests {
		t.Run(tt.listen, func(t *testing.T) {
			o := defaultSimOptions()
			fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
			addSimFlags(fs, &o)
			if err := fs.Parse([]string{"--listen", tt.listen}); err != nil {
				t.Fatal(err)
			}
			if err := o.finish(fs); err != nil {
				t.Fatal(err)
			}
			if o.Listen != tt.want {
				t.Errorf("got %q, want %q", o.Listen, tt.want)
			}
		})
	}
}
