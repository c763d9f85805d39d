package benchserver

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestFloorCountsEveryEvent checks the floor client against the handler:
// every request's data events (role, tokens, finish, usage, [DONE]) are
// counted once, over reused connections, whether the events come in one
// write or split across reads.
func TestFloorCountsEveryEvent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the floor client uses epoll (Linux only)")
	}
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, c := range []struct {
		name   string
		header http.Header
	}{
		{"unpaced", nil},
		{"paced", http.Header{"X-Bench-ITL": {"1ms"}}},
		{"stepped", http.Header{"X-Bench-ITL": {"1ms"}, StepHeader: {"1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const streams, perReq, requests = 3, 20, 10
			events, err := Floor(srv.URL+"/v1", c.header, streams, perReq, requests)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(requests * (perReq + 4)); events != want {
				t.Fatalf("counted %d data events, want %d", events, want)
			}
		})
	}
}

// TestCountSyscallsSeesEveryCall: 1,000 getppid calls made right after the
// counter starts are all counted (none lost to perf attaching late).
func TestCountSyscallsSeesEveryCall(t *testing.T) {
	c := CountSyscalls(0)
	for range 1000 {
		syscall.Getppid()
	}
	n, err := c.Stop()
	if err != nil {
		t.Skipf("no system call counter here: %v", err)
	}
	if n < 1000 {
		t.Fatalf("counted %d system calls, want at least the 1,000 made", n)
	}
}

// TestStepperStopsWhenIdle: a stepper whose streams have ended stops
// ticking and is dropped; the next wait starts another.
func TestStepperStopsWhenIdle(t *testing.T) {
	s := newSteppers()
	for round := range 2 {
		if !s.wait(t.Context(), time.Millisecond) {
			t.Fatal("wait ended without a tick")
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			s.mu.Lock()
			n := len(s.m)
			s.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the stepper still ticks 5 s after its only stream was served", round)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
