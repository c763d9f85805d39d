// Package benchserver is the fast SSE server that the load engine's CPU
// benchmarks stream from. It runs in a process of its own (the test binary
// re-executed), so that the server's CPU is not charged to the client being
// measured. A test binary that calls Start must define
//
//	func TestClientBenchServer(t *testing.T) { benchserver.Serve(t) }
//
// which is the server when re-executed and skips itself otherwise. The
// package is for benchmarks only.
package benchserver

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ServerEnv makes the re-executed test binary run TestClientBenchServer as
// the benchmark's SSE server.
const ServerEnv = "LLMCHAOS_CLIENT_BENCH_SERVER"

// URLEnv points the benchmarks at an already running bench server (one
// started by hand with ServerEnv, for profiling the client alone with perf
// or strace).
const URLEnv = "LLMCHAOS_BENCH_URL"

// Chunk is a vLLM-shaped token chunk (about 190 bytes on the wire).
const Chunk = `{"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`

// roleChunk opens each stream with the assistant role and no content. Every
// chunk of a stream carries the same id and model, as engines send them
// (the client's integrity check fails a stream whose id or model changes).
const roleChunk = `{"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`

// finishChunk ends each stream's choices with finish_reason "length".
const finishChunk = `{"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`

// usageChunk is the final usage chunk for a stream of completion tokens.
func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`, prompt, prompt+completion, completion)
}

// Serve is the body of TestClientBenchServer: unless ServerEnv is set it
// skips; otherwise it serves Handler on 127.0.0.1, prints its address
// ("LISTEN host:port") and serves until its standard input closes (the
// benchmark ended or died).
func Serve(t *testing.T) {
	if os.Getenv(ServerEnv) != "1" {
		t.Skip("helper process for the client and engine CPU benchmarks")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler()}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("LISTEN %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// Handler streams max_tokens chunks for each request, each its own flushed
// write, X-Bench-ITL apart (or the body's "bench_itl", for clients that
// send no custom header, like a script's llm.Client), then a finish chunk,
// a usage chunk and [DONE]. With "X-Bench-Step: 1" the streams of one ITL
// are synchronised as an inference engine's step synchronises them: every
// such stream writes its next token right after the same shared tick
// (StepHeader).
func Handler() http.Handler {
	role := []byte("data: " + roleChunk + "\n\n")
	steps := newSteppers()
	frame := []byte("data: " + Chunk + "\n\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			MaxTokens int    `json:"max_tokens"`
			BenchITL  string `json:"bench_itl"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		itl, _ := time.ParseDuration(cmp.Or(r.Header.Get("X-Bench-ITL"), body.BenchITL))
		tail := []byte("data: " + finishChunk + "\n\ndata: " + usageChunk(100, body.MaxTokens) + "\n\ndata: [DONE]\n\n")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		_, _ = w.Write(role)
		f.Flush()
		var tick <-chan time.Time
		stepped := itl > 0 && r.Header.Get(StepHeader) == "1"
		if itl > 0 && !stepped {
			t := time.NewTicker(itl)
			defer t.Stop()
			tick = t.C
		}
		for range body.MaxTokens {
			switch {
			case stepped:
				if !steps.wait(r.Context(), itl) {
					return
				}
			case tick != nil:
				select {
				case <-tick:
				case <-r.Context().Done():
					return
				}
			}
			if _, err := w.Write(frame); err != nil {
				return
			}
			f.Flush()
		}
		_, _ = w.Write(tail)
	})
}

// StepHeader, set to "1" on a request, makes its stream step-synchronised:
// its tokens come on a tick shared by every such stream of the same ITL, so
// that (as from vLLM, whose engine step yields one token for every running
// sequence) all of them arrive together. Without it each stream has its own
// ticker and the streams' tokens are spread out: the worst case for a
// client that batches its reads.
const StepHeader = "X-Bench-Step"

// steppers holds one stepper per ITL, started on first use.
type steppers struct {
	mu sync.Mutex
	m  map[time.Duration]*stepper
}

func newSteppers() *steppers { return &steppers{m: map[time.Duration]*stepper{}} }

// wait blocks until the next tick of the stepper for itl, started on first
// use; false if ctx ended first.
func (s *steppers) wait(ctx context.Context, itl time.Duration) bool {
	s.mu.Lock()
	st := s.m[itl]
	if st == nil {
		st = &stepper{next: make(chan struct{})}
		s.m[itl] = st
		go s.run(st, itl)
	}
	st.waiters++
	ch := st.next
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		st.waiters--
		s.mu.Unlock()
	}()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// run closes a fresh channel at every tick, a broadcast to every stream
// waiting for the step, until a tick finds nobody waiting: then the
// stepper is dropped (the next wait starts another), so that it does not
// tick on in a process whose streams have ended.
func (s *steppers) run(st *stepper, itl time.Duration) {
	t := time.NewTicker(itl)
	defer t.Stop()
	for range t.C {
		s.mu.Lock()
		idle := st.waiters == 0
		if idle {
			delete(s.m, itl)
		}
		close(st.next)
		st.next = make(chan struct{})
		s.mu.Unlock()
		if idle {
			return
		}
	}
}

// stepper is one ITL's shared tick; its fields are under steppers.mu.
type stepper struct {
	next    chan struct{} // closed at the next tick
	waiters int           // streams waiting for the next tick
}

// Start runs the server process (the test binary re-executed to run
// TestClientBenchServer) and returns its base URL; the process ends when
// the benchmark does. URLEnv, when set, is returned instead.
func Start(b *testing.B) string {
	url, _ := StartProcess(b)
	return url
}

// StartProcess is Start that also returns the server's process id (0 for
// a server given by URLEnv), for reading its CPU time (ProcessCPU).
func StartProcess(b *testing.B) (string, int) {
	b.Helper()
	if url := os.Getenv(URLEnv); url != "" {
		return url, 0
	}
	cmd, _, sc := StartChild(b, "TestClientBenchServer", ServerEnv+"=1")
	// Wait for the address line (the real signal that it listens); the
	// process ending first (EOF) means it failed.
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "LISTEN "); ok {
			go Drain(sc)
			return "http://" + addr + "/v1", cmd.Process.Pid
		}
	}
	b.Fatalf("bench server exited before listening: %v", sc.Err())
	return "", 0
}

// StartChild re-executes the test binary to run only the test named test,
// with env added to its environment: a helper process of a benchmark. It
// returns the process, its standard input (closing it tells the helper to
// end; the benchmark's cleanup closes it and waits) and its standard output
// line by line; its standard error is the benchmark's.
func StartChild(b testing.TB, test string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	return cmd, stdin, bufio.NewScanner(stdout)
}

// Drain reads sc to its end: a helper's output after the line the
// benchmark waited for, so that the helper never blocks on a full pipe.
func Drain(sc *bufio.Scanner) {
	for sc.Scan() {
	}
}

// ProcessCPU returns process pid's user + system CPU time so far, from
// /proc/PID/stat (0 when it cannot be read).
func ProcessCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis: state is field 3,
	// utime and stime fields 14 and 15, in clock ticks (USER_HZ, 100).
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * (time.Second / 100)
}

// Rusage is this process's CPU time and context switches so far.
type Rusage struct {
	User, Sys              time.Duration
	Voluntary, Involuntary int64 // context switches
}

// ReadRusage returns getrusage(RUSAGE_SELF).
func ReadRusage() Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Rusage{}
	}
	return Rusage{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano()), Voluntary: ru.Nvcsw, Involuntary: ru.Nivcsw}
}

// IOSyscalls returns this process's read-like and write-like system calls
// so far (/proc/self/io syscr and syscw: every read(2) and write(2) and
// their vector forms, EAGAIN ones included; not recvmsg, epoll, futex or
// others), or −1 when the kernel does not say.
func IOSyscalls() (reads, writes int64) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1, -1
	}
	reads, writes = -1, -1
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			fmt.Sscan(v, &reads)
		}
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			fmt.Sscan(v, &writes)
		}
	}
	return reads, writes
}

// CPUTime returns this process's user and system CPU time so far.
func CPUTime() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
