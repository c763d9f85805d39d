package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// frozen reports whether pid is stopped, as /proc shows it.
func frozen(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0] == "T"
}

func TestHangFreezesTheServingProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a replica and waits on request timeouts; skipped under -short")
	}
	r, addr := startReplica(t, t.TempDir())
	pid := r.PID()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "replica.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(dir, "state.json")
	state, _ := json.Marshal([]replicastate.Replica{
		{Index: 0, PID: 999999, State: replicastate.StateExited},
		{Index: 1, PID: pid, State: replicastate.StateServing},
	})
	if err := os.WriteFile(stateFile, state, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    HangParams
	}{
		{name: "pid", p: HangParams{PID: pid}},
		{name: "pid file", p: HangParams{PIDFile: pidFile}},
		{name: "state file", p: HangParams{StateFile: stateFile, Replica: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHang("wedge", tt.p)
			if err != nil {
				t.Fatal(err)
			}
			log := &recLog{}
			undo, err := h.Inject(context.Background(), log)
			if err != nil {
				t.Fatal(err)
			}
			if got := log.kinds(); !slices.Equal(got, []string{replica.KindSignalCont}) {
				t.Errorf("revert specs = %v, want [%s] recorded before the freeze", got, replica.KindSignalCont)
			}
			if !frozen(t, pid) {
				t.Error("replica not stopped after Inject")
			}
			// The port still accepts; nothing answers: a wedged GPU.
			if code := testutil.HealthCode(addr, 300*time.Millisecond); code != 0 {
				t.Errorf("/health while frozen = %d, want no answer", code)
			}
			if err := undo(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := undo(context.Background()); err != nil {
				t.Errorf("second Undo: %v, want nil", err)
			}
			testutil.WaitFor(t, 5*time.Second, "/health 200 after Undo", func() bool { return testutil.HealthCode(addr, time.Second) == 200 })
		})
	}

	t.Run("revert spec alone", func(t *testing.T) {
		h, _ := NewHang("wedge", HangParams{PID: pid})
		log := &recLog{}
		if _, err := h.Inject(context.Background(), log); err != nil {
			t.Fatal(err)
		}
		if !frozen(t, pid) {
			t.Fatal("replica not stopped after Inject")
		}
		rev := replica.Reverters()[replica.KindSignalCont]
		if err := rev(context.Background(), log.spec(t, replica.KindSignalCont).Data); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 5*time.Second, "/health 200 after the revert", func() bool { return testutil.HealthCode(addr, time.Second) == 200 })
	})
}

func TestHangRefusals(t *testing.T) {
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.json")
	state, _ := json.Marshal([]replicastate.Replica{{Index: 0, PID: 4242, State: replicastate.StateRestarting}})
	if err := os.WriteFile(stateFile, state, 0o644); err != nil {
		t.Fatal(err)
	}
	badPID := filepath.Join(dir, "bad.pid")
	os.WriteFile(badPID, []byte("twelve\n"), 0o644)
	tests := []struct {
		name string
		p    HangParams
		want string
	}{
		{name: "llmchaos itself", p: HangParams{PID: os.Getpid()}, want: "own"},
		{name: "gone", p: HangParams{PID: 1 << 22}, want: "gone"},
		{name: "replica not running", p: HangParams{StateFile: stateFile}, want: "replica 0 is restarting, not running"},
		{name: "no such replica", p: HangParams{StateFile: stateFile, Replica: 3}, want: "no replica 3"},
		{name: "bad pid file", p: HangParams{PIDFile: badPID}, want: `holds "twelve"`},
		{name: "missing pid file", p: HangParams{PIDFile: filepath.Join(dir, "none")}, want: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHang("wedge", tt.p)
			if err != nil {
				t.Fatal(err)
			}
			log := &recLog{}
			_, err = h.Inject(context.Background(), log)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `fault "wedge" (gpu.hang)`) {
				t.Errorf("Inject error = %v, want one naming the fault and mentioning %q", err, tt.want)
			}
		})
	}
}

// pauseFake is a narrow stand-in for replica.pause that asserts every
// Inject is undone.
type pauseFake struct {
	mu               sync.Mutex
	injected, undone int
	err              error
}

func (p *pauseFake) Inject(context.Context, faults.RevertLog) (faults.Undo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	p.injected++
	return func(context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.undone++
		return nil
	}, nil
}

func TestHangVia(t *testing.T) {
	if _, err := NewHangVia("h", nil); err == nil {
		t.Error("NewHangVia(nil) succeeded, want an error")
	}
	p := &pauseFake{}
	h, err := NewHangVia("h", p)
	if err != nil {
		t.Fatal(err)
	}
	undo, err := h.Inject(context.Background(), &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.injected != 1 || p.undone != 1 {
		t.Errorf("pause injected %d, undone %d; want 1 and 1", p.injected, p.undone)
	}
	p.err = errors.New("no replica up")
	if _, err := h.Inject(context.Background(), &recLog{}); err == nil || !strings.Contains(err.Error(), `fault "h" (gpu.hang): no replica up`) {
		t.Errorf("Inject error = %v, want the pause's error under the fault's name", err)
	}
}
