package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/gameday"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// gamedayExperiment is a game day against a simulator of one replica,
// with a threshold probe of the steady state (faults wait for it).
const gamedayExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: gameday-kill}
target:
  sim: {replicas: 1, startup_time: 200ms, latency: constant, ttft: 20ms, itl: 2ms}
workload: {preset: chat, rate: 10, duration: 10m, output_tokens: "16"}
steady_state:
  - threshold: "error_rate: rate<0.5"
recovery: {window: 1s, hold: 1s}
`

// bgGameday is a `llmchaos gameday` of the real binary in the background.
type bgGameday struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	runDir string
	url    string
	token  string
	exited chan struct{}
}

var consoleLine = regexp.MustCompile(`console for \S+: (http://[^/]+)/\?token=(\S+)`)

// startGameday starts a game day of experiment with args and waits for its
// console's URL and for its load to run, faults allowed.
func startGameday(t *testing.T, args ...string) *bgGameday {
	t.Helper()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "gameday.yaml")
	if err := os.WriteFile(file, []byte(gamedayExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &bgGameday{out: &syncBuffer{}, runDir: filepath.Join(dir, "run"), exited: make(chan struct{})}
	g.cmd = exec.Command(bin, append([]string{"gameday", file, "--out", g.runDir}, args...)...)
	g.cmd.Dir = dir
	pr, pw := io.Pipe()
	g.cmd.Stdout, g.cmd.Stderr = io.MultiWriter(g.out, pw), g.out
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = g.cmd.Wait()
		pw.Close()
		close(g.exited)
	}()
	t.Cleanup(func() {
		_ = g.cmd.Process.Kill()
		<-g.exited
	})
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := consoleLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case m := <-found:
		g.url, g.token = m[1], m[2]
	case <-g.exited:
		t.Fatalf("llmchaos gameday exited before serving:\n%s", g.out)
	case <-time.After(60 * time.Second):
		t.Fatalf("no console URL within 60s:\n%s", g.out)
	}
	g.waitFor(t, "faults allowed", func() bool {
		var st struct {
			Status struct {
				GateOpen bool `json:"gate_open"`
			}
		}
		return g.api(t, "GET", "/api/status", "", &st) == http.StatusOK && st.Status.GateOpen
	})
	return g
}

// api calls the console's API with the token.
func (g *bgGameday) api(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, g.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		_ = json.Unmarshal(b, out)
	}
	return res.StatusCode
}

func (g *bgGameday) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case <-g.exited:
			t.Fatalf("llmchaos gameday exited before %s:\n%s", what, g.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 60s:\n%s", what, g.out)
		}
	}
}

// killMidManualFault injects a proxy fault through the console of a real
// `llmchaos gameday`, checks that it acts, and kills the process with
// SIGKILL: what it left behind.
func killMidManualFault(t *testing.T, args ...string) killedRun {
	t.Helper()
	g := startGameday(t, args...)
	var inj struct {
		Fault struct{ Name, Target string }
	}
	if code := g.api(t, "POST", "/api/faults", `{"name":"slow-by-hand","type":"network.latency","params":{"latency":"300ms"}}`, &inj); code != http.StatusCreated {
		t.Fatalf("inject through the console: %d\n%s", code, g.out)
	}
	// "proxy endpoint-0 127.0.0.1:PORT → 127.0.0.1:PORT"
	f := strings.Fields(inj.Fault.Target)
	if len(f) < 3 {
		t.Fatalf("fault target %q", inj.Fault.Target)
	}
	proxyAddr := f[2]
	start := time.Now()
	res, err := http.Get("http://" + proxyAddr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("the proxy answered in %v with a 300ms latency fault", d)
	}
	pend, err := faults.Pending(g.runDir)
	if err != nil {
		t.Fatal(err)
	}
	var helpers []faults.ProcessSpec
	names := map[string]bool{}
	for _, p := range pend {
		names[p.Name] = true
		for _, s := range p.Specs {
			if s.Kind == faults.KindProcess {
				var ps faults.ProcessSpec
				if err := json.Unmarshal(s.Data, &ps); err != nil {
					t.Fatal(err)
				}
				helpers = append(helpers, ps)
			}
		}
	}
	replicas, err := replicastate.Read(filepath.Join(g.runDir, "sim", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !names["slow-by-hand"] || len(helpers) != 2 || len(replicas) != 1 || replicas[0].PID == 0 {
		t.Fatalf("pending %+v, helpers %+v, replicas %+v: want the simulator, a proxy and the fault", pend, helpers, replicas)
	}
	// kill -9 the console mid-fault.
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-g.exited
	pids := []faults.ProcessSpec{{PID: replicas[0].PID, Name: "replica 0"}}
	return killedRun{bin: needBinary(t), runDir: g.runDir, proxyAddr: proxyAddr, pids: append(pids, helpers...)}
}

// TestGamedayKill9GuardReverts: a game day's console process killed with
// SIGKILL while a fault injected by hand is applied: its guard reverts
// the fault and stops the helpers by itself; the proxy's port is free.
func TestGamedayKill9GuardReverts(t *testing.T) {
	t.Parallel()
	k := killMidManualFault(t)
	waitGuardDone(t, k.runDir)
	log, err := os.ReadFile(filepath.Join(k.runDir, "guard.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ended without saying done", `reverted  network.latency "slow-by-hand"`, "everything is reverted"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("guard.log lacks %q:\n%s", want, log)
		}
	}
	checkCleanedUp(t, k)
}

// TestGamedayKill9ThenRecover: without the guard, `llmchaos recover`
// reverts what a killed game day left applied, from its run directory.
func TestGamedayKill9ThenRecover(t *testing.T) {
	t.Parallel()
	k := killMidManualFault(t, "--no-guard")
	out, err := exec.Command(k.bin, "recover", "--run-dir", k.runDir).CombinedOutput()
	if err != nil {
		t.Fatalf("llmchaos recover: %v\n%s", err, out)
	}
	for _, want := range []string{`reverted  network.latency "slow-by-hand"`, "everything is reverted"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("recover output lacks %q:\n%s", want, out)
		}
	}
	checkCleanedUp(t, k)
}

// TestGamedayEndsOnSignal: Ctrl-C (SIGINT) ends a game day as its End
// button does, reverting its faults, and writes its record.
func TestGamedayEndsOnSignal(t *testing.T) {
	t.Parallel()
	g := startGameday(t)
	if code := g.api(t, "POST", "/api/faults", `{"type":"stream.chunk_delay","params":{"delay":"5ms"}}`, nil); code != http.StatusCreated {
		t.Fatalf("inject: %d\n%s", code, g.out)
	}
	if err := g.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit within 60s of SIGINT:\n%s", g.out)
	}
	if code := g.cmd.ProcessState.ExitCode(); code != exitcode.Aborted {
		t.Errorf("exit %d, want %d (aborted by the signal):\n%s", code, exitcode.Aborted, g.out)
	}
	if left, err := faults.Pending(g.runDir); err != nil || len(left) != 0 {
		t.Errorf("journal pending %+v %v", left, err)
	}
	for _, f := range []string{"run.json", "report.html", "junit.xml", "postmortem.md"} {
		if _, err := os.Stat(filepath.Join(g.runDir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if ln, err := net.Listen("tcp", strings.TrimPrefix(g.url, "http://")); err != nil {
		t.Errorf("the console's port is still taken: %v", err)
	} else {
		ln.Close()
	}
}

// TestGamedayRefusesRemoteListen: an address off the loopback interface
// needs --allow-remote.
func TestGamedayRefusesRemoteListen(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := execute(t.Context(), []string{"gameday", "--listen", "0.0.0.0:0"}, &out, &errb)
	if code != exitcode.Usage || !strings.Contains(errb.String(), "--allow-remote") {
		t.Errorf("exit %d, stderr %q: want a usage error naming --allow-remote", code, errb.String())
	}
}

// TestGamedayRefusesBadTokenHolders: a --token name the console cannot
// carry (a space, a slash, an HTML tag, more than 40 characters, empty) or
// one named twice is a usage error, exit 2, before anything starts: no
// run directory is made.
func TestGamedayRefusesBadTokenHolders(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		holders []string
		want    string
	}{
		{"a space", []string{"alice smith"}, `token holder "alice smith": use 1 to 40 letters`},
		{"a slash", []string{"ops/alice"}, `token holder "ops/alice": use 1 to 40 letters`},
		{"markup", []string{"<b>bob</b>"}, `token holder "<b>bob</b>": use 1 to 40 letters`},
		{"41 characters", []string{strings.Repeat("a", 41)}, `token holder "` + strings.Repeat("a", 41) + `": use 1 to 40 letters`},
		{"empty", []string{""}, `token holder "": use 1 to 40 letters`},
		{"named twice", []string{"alice", "bob", "alice"}, `token holder "alice" is named twice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := []string{"gameday", "--out", out}
			for _, h := range tt.holders {
				args = append(args, "--token", h)
			}
			var stdout, stderr bytes.Buffer
			code := execute(t.Context(), args, &stdout, &stderr)
			if code != exitcode.Usage || !strings.Contains(stderr.String(), "--token: "+tt.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr.String(), exitcode.Usage, "--token: "+tt.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the run directory was made (%v): the game day started", err)
			}
		})
	}
	// Names it can carry pass the check (the game day would then start).
	if err := gameday.CheckHolders([]string{"alice", "bob.s", "on_call-2"}); err != nil {
		t.Errorf("valid holders refused: %v", err)
	}
}
