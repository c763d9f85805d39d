package faults

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startSleeper starts a real process that lives until it is killed; ignoreTerm
// makes it ignore SIGTERM (ignored signals survive exec).
// The returned channel is closed once the process is reaped; the wait error
// is then in *waitErr.
func startSleeper(t *testing.T, ignoreTerm bool) (cmd *exec.Cmd, done <-chan struct{}, waitErr *error) {
	t.Helper()
	script := "exec sleep 60"
	if ignoreTerm {
		script = `trap "" TERM; exec sleep 60`
	}
	cmd = exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	waitErr = new(error)
	go func() {
		*waitErr = cmd.Wait()
		close(ch)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch
	})
	return cmd, ch, waitErr
}

func alive(pid int) bool {
	_, ok, err := ProcessStartTime(pid)
	return err == nil && ok
}

func TestRevertProcess(t *testing.T) {
	tests := []struct {
		name       string
		ignoreTerm bool
		skewStart  uint64 // added to the recorded start time
		wantKilled bool
	}{
		{name: "terminates the named process", wantKilled: true},
		{name: "kills one that ignores SIGTERM", ignoreTerm: true, wantKilled: true},
		{name: "refuses a pid with another start time", skewStart: 1, wantKilled: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, done, waitErr := startSleeper(t, tt.ignoreTerm)
			if tt.ignoreTerm {
				// Let sh run the trap and exec sleep before the spec is taken.
				waitComm(t, cmd.Process.Pid, "sleep")
			}
			spec, err := ProcessRevertSpec(cmd.Process.Pid, "sleeper")
			if err != nil {
				t.Fatal(err)
			}
			if spec.Kind != KindProcess {
				t.Errorf("kind: got %q, want %q", spec.Kind, KindProcess)
			}
			var ps ProcessSpec
			if err := json.Unmarshal(spec.Data, &ps); err != nil {
				t.Fatal(err)
			}
			ps.StartTime += tt.skewStart
			data, _ := json.Marshal(ps)

			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := RevertProcess(ctx, data); err != nil {
				t.Fatalf("RevertProcess: %v", err)
			}
			select {
			case <-done:
				err := *waitErr
				if !tt.wantKilled {
					t.Fatalf("process exited (%v); want it left alone", err)
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("exit: got %v, want a signal", err)
				}
				ws := ee.Sys().(syscall.WaitStatus)
				want := syscall.SIGTERM
				if tt.ignoreTerm {
					want = syscall.SIGKILL
				}
				if got := ws.Signal(); got != want {
					t.Errorf("signal: got %v, want %v", got, want)
				}
			case <-time.After(300 * time.Millisecond):
				if tt.wantKilled {
					t.Fatal("process still running after RevertProcess returned")
				}
				if !alive(cmd.Process.Pid) {
					t.Error("process not alive")
				}
			}
			// Idempotent: the process is gone (or not ours), nothing to do.
			if err := RevertProcess(ctx, data); err != nil {
				t.Errorf("second RevertProcess: %v", err)
			}
		})
	}
}

func TestRevertProcessGone(t *testing.T) {
	cmd, done, _ := startSleeper(t, false)
	spec, err := ProcessRevertSpec(cmd.Process.Pid, "sleeper")
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	<-done
	if err := BuiltinReverters()[KindProcess](context.Background(), spec.Data); err != nil {
		t.Errorf("RevertProcess of a reaped process: %v", err)
	}
	if _, err := ProcessRevertSpec(cmd.Process.Pid, "x"); err == nil {
		t.Error("ProcessRevertSpec of a gone process: got nil, want error")
	}
}

// waitComm waits until /proc/PID/comm reads name (bounded).
func waitComm(t *testing.T, pid int, name string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if string(b) == name+"\n" {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("process %d never became %s", pid, name)
		case <-tick.C:
		}
	}
}
