package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
)

// Environment variables of the benchmark's server child process.
const (
	envBenchServe   = "LLMCHAOS_SIM_BENCH_SERVE"   // "1": TestMain serves instead of testing
	envBenchProfile = "LLMCHAOS_SIM_BENCH_PROFILE" // a file: the child writes a CPU profile there
)

func TestMain(m *testing.M) {
	if os.Getenv(envBenchServe) == "1" {
		os.Exit(benchServe())
	}
	os.Exit(m.Run())
}

// benchServe is the benchmark's server process: a constant-mode replica on
// 127.0.0.1:0 whose address goes to stdout. It stops on SIGTERM or when its
// stdin closes (the parent died).
func benchServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	if path := os.Getenv(envBenchProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	cfg := sim.DefaultConfig()
	cfg.Latency = sim.LatencyConstant
	cfg.TTFT = 50 * time.Millisecond
	cfg.ITL = 10 * time.Millisecond
	cfg.MaxNumSeqs = 2048
	cfg.MaxWaiting = 4096
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	if err := Serve(ctx, ln, Options{Config: cfg}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// procStat reads a process's CPU time (user + system) and resident memory.
func procStat(pid int) (cpu time.Duration, rss int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64) // field 14 of stat(5)
	stime, _ := strconv.ParseInt(fields[12], 10, 64) // field 15
	pages, _ := strconv.ParseInt(fields[21], 10, 64) // field 24, rss
	const clkTck = 100                               // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clkTck, pages * int64(os.Getpagesize()), nil
}

// leanStream sends one streaming chat request on a raw TCP connection and
// counts the token events of its chunked SSE body into tokens. It reports
// when its first token arrived on first (once).
func leanStream(addr string, maxTokens int, tokens *atomic.Int64, first func()) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	body := fmt.Sprintf(`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hello there"}],"max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)
	req := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 16<<10)
	status, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("status %q", status)
	}
	for { // headers
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
	}
	var pending []byte // SSE bytes not yet split into events
	events, firstSeen := 0, false
	for {
		sizeLine, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeLine)), 16, 64)
		if err != nil {
			return fmt.Errorf("chunk size %q: %w", sizeLine, err)
		}
		if size == 0 {
			return errors.New("body ended without [DONE]")
		}
		start := len(pending)
		pending = append(pending, make([]byte, size+2)...)
		if _, err := io.ReadFull(br, pending[start:]); err != nil {
			return err
		}
		pending = pending[:len(pending)-2] // the chunk's CRLF
		for {
			i := bytes.Index(pending, []byte("\n\n"))
			if i < 0 {
				break
			}
			ev := pending[:i]
			pending = pending[i+2:]
			if bytes.Equal(ev, []byte("data: [DONE]")) {
				return nil
			}
			events++
			if events > 1 { // the first is the role chunk
				tokens.Add(1)
				if !firstSeen {
					firstSeen = true
					first()
				}
			}
		}
		if len(pending) == 0 {
			pending = pending[:0:0]
		}
	}
}

// BenchmarkThroughput streams 1,000 concurrent constant-mode requests (ITL
// 10 ms) from a lean client to a server in a child process, and reports the
// tokens streamed per second, the server's CPU-seconds per million tokens and
// its resident memory per in-flight request. 1,000 streams at 10 ms make
// 100,000 tokens/s the ceiling.
func BenchmarkThroughput(b *testing.B) {
	const (
		streams   = 1000
		maxTokens = 600 // 6 s of streaming at 10 ms
		window    = 3 * time.Second
	)
	for range b.N {
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), envBenchServe+"=1")
		child.Stderr = os.Stderr
		stdin, err := child.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := child.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := child.Start(); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
		if err != nil || !ok {
			_ = child.Process.Kill()
			b.Fatalf("child did not report its address: %q %v", line, err)
		}
		pid := child.Process.Pid
		_, idleRSS, err := procStat(pid)
		if err != nil {
			b.Fatal(err)
		}

		var tokens atomic.Int64
		var started sync.WaitGroup
		started.Add(streams)
		errs := make(chan error, streams)
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				var once sync.Once
				err := leanStream(addr, maxTokens, &tokens, func() { once.Do(started.Done) })
				once.Do(started.Done)
				if err != nil {
					errs <- err
				}
			})
		}
		started.Wait() // every stream has its first token: steady state
		cpu0, _, _ := procStat(pid)
		tok0, t0 := tokens.Load(), time.Now()
		var peakRSS int64
		deadline := time.NewTimer(window)
		tick := time.NewTicker(250 * time.Millisecond)
	measure:
		for {
			select {
			case <-tick.C:
				if _, rss, err := procStat(pid); err == nil {
					peakRSS = max(peakRSS, rss)
				}
			case <-deadline.C:
				break measure
			}
		}
		tick.Stop()
		cpu1, _, _ := procStat(pid)
		tok1, t1 := tokens.Load(), time.Now()
		wg.Wait()
		close(errs)
		_ = stdin.Close()
		_ = child.Process.Signal(syscall.SIGTERM)
		_ = child.Wait()
		nErr := 0
		for err := range errs {
			if nErr == 0 {
				b.Errorf("stream failed: %v", err)
			}
			nErr++
		}
		if nErr > 0 {
			b.Fatalf("%d of %d streams failed", nErr, streams)
		}

		n := float64(tok1 - tok0)
		rate := n / t1.Sub(t0).Seconds()
		cpuPerM := (cpu1 - cpu0).Seconds() / (n / 1e6)
		perReq := float64(peakRSS-idleRSS) / streams
		b.ReportMetric(rate, "tokens/s")
		b.ReportMetric(cpuPerM, "server-cpu-s/Mtok")
		b.ReportMetric(perReq/1024, "server-KiB/req")
		b.Logf("%d streams, ITL 10ms: %.0f tokens/s streamed (ceiling 100000), server CPU %.2f s per million tokens (%.2f cores), server RSS %.1f MiB idle, %.1f MiB under load: %.1f KiB per in-flight request",
			streams, rate, cpuPerM, (cpu1-cpu0).Seconds()/t1.Sub(t0).Seconds(), float64(idleRSS)/(1<<20), float64(peakRSS)/(1<<20), perReq/1024)
	}
}

// BenchmarkConstantModeSchedule reports how late the simulator itself
// writes constant-mode tokens (TTFT 50 ms, ITL 10 ms) against each
// request's arrival + TTFT + k·ITL, from its own record of each stream,
// with 200 concurrent streams of 60 tokens and the reading client in the
// same process (TestConstantModeGroundTruth's setting): p50, p99 and max
// in ms. It is a figure of the machine as much as of the simulator.
func BenchmarkConstantModeSchedule(b *testing.B) {
	cfg := sim.DefaultConfig()
	cfg.Latency = sim.LatencyConstant
	for range b.N {
		late := constantModeLateness(b, cfg, 200, 60)
		slices.Sort(late)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		p50, p99, mx := late[len(late)/2], late[len(late)*99/100], late[len(late)-1]
		b.ReportMetric(ms(p50), "late-p50-ms")
		b.ReportMetric(ms(p99), "late-p99-ms")
		b.ReportMetric(ms(mx), "late-max-ms")
		b.ReportMetric(0, "ns/op")
		b.Logf("constant mode, 200 streams × 60 tokens: write lateness p50 %v, p99 %v, max %v (early: %v)", p50, p99, mx, late[0] < 0)
	}
}
