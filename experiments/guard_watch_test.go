package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeGuardHelper writes a stand-in for `llmchaos recover --guard`: it
// waits for its stdin to close, as the guard does.
func fakeGuardHelper(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "llmchaos")
	if err := os.WriteFile(path, []byte("#!/bin/sh\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// guardEvents collects what a guard watch reports.
type guardEvents struct {
	mu    sync.Mutex
	kinds []string
	seen  chan string
}

func (e *guardEvents) report(kind, detail string) {
	e.mu.Lock()
	e.kinds = append(e.kinds, kind+": "+detail)
	e.mu.Unlock()
	e.seen <- kind
}

// TestGuardWatchRestartsADeadGuard: a guard killed while the run goes on
// is reported and replaced, so the run keeps its dead-man's switch.
func TestGuardWatchRestartsADeadGuard(t *testing.T) {
	t.Parallel()
	helper, dir := fakeGuardHelper(t), t.TempDir()
	g, err := startGuard(helper, dir)
	if err != nil {
		t.Fatal(err)
	}
	ev := &guardEvents{seen: make(chan string, 16)}
	w := watchGuard(g, helper, dir, ev.report)
	first := w.pid()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"guard_died", "guard_restarted"} {
		select {
		case got := <-ev.seen:
			if got != want {
				t.Fatalf("reported %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s reported within 10s of killing the guard", want)
		}
	}
	second := w.pid()
	if second == 0 || second == first || syscall.Kill(second, 0) != nil {
		t.Fatalf("guard pid %d after the restart (first %d), want a new, live guard", second, first)
	}
	if err := w.release(); err != nil {
		t.Errorf("release: %v", err)
	}
	if err := syscall.Kill(second, 0); err == nil {
		// released and waited for: only a zombie would answer, and Wait reaped it
		t.Errorf("the restarted guard %d still runs after release", second)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if !strings.Contains(strings.Join(ev.kinds, "\n"), "exited") {
		t.Errorf("events %q do not say the guard exited", ev.kinds)
	}
}

// TestGuardWatchGivesUpLoudly: a guard that cannot be restarted leaves a
// warning that the run goes on without it.
func TestGuardWatchGivesUpLoudly(t *testing.T) {
	t.Parallel()
	helper, dir := fakeGuardHelper(t), t.TempDir()
	g, err := startGuard(helper, dir)
	if err != nil {
		t.Fatal(err)
	}
	ev := &guardEvents{seen: make(chan string, 16)}
	w := watchGuard(g, filepath.Join(dir, "no-such-binary"), dir, ev.report)
	if err := syscall.Kill(w.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"guard_died", "guard_lost"} {
		select {
		case got := <-ev.seen:
			if got != want {
				t.Fatalf("reported %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s reported within 10s", want)
		}
	}
	if err := w.release(); err != nil {
		t.Errorf("release after giving up: %v", err)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if last := ev.kinds[len(ev.kinds)-1]; !strings.Contains(last, "WARNING") || !strings.Contains(last, "llmchaos recover --run-dir") {
		t.Errorf("give-up event %q, want a loud warning naming recover", last)
	}
}
