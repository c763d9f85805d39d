package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// clientBenchServerEnv makes the test binary run TestClientBenchServer as
// the benchmark's SSE server.
const clientBenchServerEnv = "LLMCHAOS_CLIENT_BENCH_SERVER"

// clientBenchURLEnv points the benchmark at an already running bench
// server (one started by hand with clientBenchServerEnv, for profiling the
// client alone with perf or strace).
const clientBenchURLEnv = "LLMCHAOS_BENCH_URL"

// clientBenchTokensEnv overrides the tokens streamed per benchmark case.
const clientBenchTokensEnv = "LLMCHAOS_BENCH_TOKENS"

// clientBenchChunk is a vLLM-shaped token chunk (about 190 bytes on the wire).
const clientBenchChunk = `{"id":"chatcmpl-bench0123456789","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`

// TestClientBenchServer is not a test of its own: it is the fast SSE server
// that BenchmarkClientCPUPerMillionTokens runs in a separate process (the
// test binary re-executed with clientBenchServerEnv set), so that the
// server's CPU is not charged to the client. It streams max_tokens chunks,
// each its own flushed write, X-Bench-ITL apart, prints its address and
// serves until its standard input closes (the benchmark ended or died).
func TestClientBenchServer(t *testing.T) {
	if os.Getenv(clientBenchServerEnv) != "1" {
		t.Skip("helper process for BenchmarkClientCPUPerMillionTokens")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: clientBenchHandler()}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("LISTEN %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

func clientBenchHandler() http.Handler {
	role := []byte("data: " + roleChunk + "\n\n")
	frame := []byte("data: " + clientBenchChunk + "\n\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		itl, _ := time.ParseDuration(r.Header.Get("X-Bench-ITL"))
		tail := []byte("data: " + finishChunk("length") + "\n\ndata: " + usageChunk(100, body.MaxTokens) + "\n\ndata: [DONE]\n\n")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		_, _ = w.Write(role)
		f.Flush()
		var tick <-chan time.Time
		if itl > 0 {
			t := time.NewTicker(itl)
			defer t.Stop()
			tick = t.C
		}
		for range body.MaxTokens {
			if tick != nil {
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

// startClientBenchServer runs the SSE server process and returns its base URL.
func startClientBenchServer(b *testing.B) string {
	b.Helper()
	if url := os.Getenv(clientBenchURLEnv); url != "" {
		return url
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientBenchServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), clientBenchServerEnv+"=1")
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
	// Wait for the address line (the real signal that it listens); the
	// process ending first (EOF) means it failed.
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "LISTEN "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return "http://" + addr + "/v1"
		}
	}
	b.Fatalf("bench server exited before listening: %v", sc.Err())
	return ""
}

// clientCPUTime returns this process's user and system CPU time so far.
func clientCPUTime() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// clientBenchStreamer runs one streamed request and returns its token chunks.
type clientBenchStreamer func(ctx context.Context, url string, req *Request) (chunks int, err error)

// BenchmarkClientCPUPerMillionTokens measures the load process's CPU per
// streamed token: a server in another process streams each token as its
// own flushed chunk to many concurrent streams, and the client process's
// getrusage (user + system) is read before and after. Cases: "paced" gives
// each stream a 2 ms ITL so that every token arrives as its own read, as
// from a real model server; "burst" streams back to back (zero ITL), where
// the kernel may coalesce chunks. "baseline" is a plain net/http +
// bufio.Scanner + encoding/json client on the same streams, for scale.
// Target: <= 3 CPU-seconds per million tokens.
func BenchmarkClientCPUPerMillionTokens(b *testing.B) {
	url := startClientBenchServer(b)
	total := 400_000
	if v, err := strconv.Atoi(os.Getenv(clientBenchTokensEnv)); err == nil && v > 0 {
		total = v
	}
	const perReq = 1000
	cases := []struct {
		name    string
		itl     time.Duration
		streams int
	}{
		{"paced/itl=2ms/streams=200", 2 * time.Millisecond, 200},
		{"burst/itl=0/streams=64", 0, 64},
	}
	for _, cc := range cases {
		for _, impl := range []string{"llm", "baseline"} {
			b.Run(cc.name+"/"+impl, func(b *testing.B) {
				var stream clientBenchStreamer
				var reads func() int64
				header := http.Header{"X-Bench-ITL": {cc.itl.String()}}
				if impl == "llm" {
					c, err := NewClient(ClientOptions{Concurrency: cc.streams, Headers: header, Getenv: func(string) string { return "" }})
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					stream = func(ctx context.Context, url string, req *Request) (int, error) {
						var res Result
						c.Do(ctx, url, req, &res)
						if res.Outcome != OutcomeOK {
							return res.ContentChunks, fmt.Errorf("%v %s: %s", res.Outcome, res.Class, res.Err)
						}
						return res.ContentChunks, nil
					}
					reads = c.statReads.Load
				} else {
					stream = baselineStreamer(cc.streams, header)
				}
				runClientBench(b, url, stream, reads, cc.streams, perReq, total)
			})
		}
	}
}

func runClientBench(b *testing.B, url string, stream clientBenchStreamer, reads func() int64, streams, perReq, total int) {
	req := &Request{Chat: true, Model: "bench-model", Messages: []Message{{Role: "user", Content: "go"}}, MaxTokens: perReq, Stream: true}
	// Warm up connections and pools.
	if _, err := stream(context.Background(), url, req); err != nil {
		b.Fatal(err)
	}
	requests := max(total/perReq, streams)
	var tokens, readsTotal int64
	var cpuUser, cpuSys, wall time.Duration
	var mallocs uint64
	var ms runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		var r0 int64
		if reads != nil {
			r0 = reads()
		}
		u0, s0 := clientCPUTime()
		t0 := time.Now()

		var next, got atomic.Int64
		var wg sync.WaitGroup
		var errOnce sync.Once
		var firstErr error
		for range streams {
			wg.Go(func() {
				for next.Add(1) <= int64(requests) {
					n, err := stream(context.Background(), url, req)
					got.Add(int64(n))
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
				}
			})
		}
		wg.Wait()

		wall += time.Since(t0)
		u1, s1 := clientCPUTime()
		cpuUser += u1 - u0
		cpuSys += s1 - s0
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - m0
		if reads != nil {
			readsTotal += reads() - r0
		}
		tokens += got.Load()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
	}
	mtok := float64(tokens) / 1e6
	b.ReportMetric((cpuUser+cpuSys).Seconds()/mtok, "cpu-s/Mtok")
	b.ReportMetric(cpuUser.Seconds()/mtok, "user-s/Mtok")
	b.ReportMetric(cpuSys.Seconds()/mtok, "sys-s/Mtok")
	b.ReportMetric(float64(tokens)/wall.Seconds(), "tok/s")
	b.ReportMetric(float64(mallocs)/float64(tokens), "allocs/tok")
	if reads != nil {
		b.ReportMetric(float64(tokens)/float64(readsTotal), "tok/read")
	}
	b.Logf("%d tokens in %v over %d streams: CPU user %v + sys %v = %.2f CPU-s per million tokens",
		tokens, wall.Round(time.Millisecond), streams, cpuUser.Round(time.Millisecond), cpuSys.Round(time.Millisecond), (cpuUser+cpuSys).Seconds()/mtok)
}

// baselineStreamer is the plain client the target is measured against:
// net/http with a pool sized to the streams, bufio.Scanner over the body
// and encoding/json for each chunk, recording a time per chunk.
func baselineStreamer(streams int, header http.Header) clientBenchStreamer {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
	return func(ctx context.Context, url string, req *Request) (int, error) {
		body, err := encodeRequest(req)
		if err != nil {
			return 0, err
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		hreq.Header = header.Clone()
		hreq.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(hreq)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var chunks int
		var times []time.Time
		for sc.Scan() {
			line := sc.Bytes()
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				continue
			}
			if string(data) == "[DONE]" {
				break
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &c); err != nil {
				return chunks, err
			}
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				chunks++
				times = append(times, time.Now())
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if len(times) != chunks { // keeps the timestamps live, as a real client would
			return chunks, fmt.Errorf("kept %d timestamps for %d chunks", len(times), chunks)
		}
		return chunks, sc.Err()
	}
}
