package script

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/benchserver"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// benchSim is the simulator configuration of a benchmark's simulator
// process: constant latencies, so that both load paths see the same.
type benchSim struct {
	TTFT, ITL              time.Duration
	MaxNumSeqs, MaxWaiting int
}

// benchSimEnv makes the test binary run TestRunnerBenchSimProcess.
const benchSimEnv = "LLMCHAOS_RUNNER_BENCH_SIM"

// TestRunnerBenchSimProcess is not a test of its own: it is the simulator
// process of the script benchmarks (sim/server, as `llmchaos sim` runs
// it), so that its CPU and memory are not the measured process's. It
// prints its address and serves until its standard input closes.
func TestRunnerBenchSimProcess(t *testing.T) {
	spec := os.Getenv(benchSimEnv)
	if spec == "" {
		t.Skip("helper process for the script benchmarks")
	}
	var o benchSim
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, o.TTFT, o.ITL
	if o.MaxNumSeqs > 0 {
		cfg.MaxNumSeqs = o.MaxNumSeqs
	}
	if o.MaxWaiting > 0 {
		cfg.MaxWaiting = o.MaxWaiting
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, server.Options{Config: cfg}) }()
	fmt.Printf("LISTEN %s %s\n", ln.Addr(), cfg.Model)
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestClientBenchServer is not a test of its own: it is the SSE server
// process of the CPU benchmark (see benchserver).
func TestClientBenchServer(t *testing.T) { benchserver.Serve(t) }

// startBenchSim starts the simulator process and returns its base URL and
// model; it stops when the benchmark ends.
func startBenchSim(b *testing.B, o benchSim) (url, model string) {
	b.Helper()
	spec, err := json.Marshal(o)
	if err != nil {
		b.Fatal(err)
	}
	_, _, sc := benchserver.StartChild(b, "TestRunnerBenchSimProcess", benchSimEnv+"="+string(spec))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "LISTEN "); ok {
			addr, model, _ := strings.Cut(rest, " ")
			go benchserver.Drain(sc)
			return "http://" + addr + "/v1", model
		}
	}
	b.Fatalf("simulator process exited before listening: %v", sc.Err())
	return "", ""
}

// benchEngine builds the load engine as `llmchaos load` does.
func benchEngine(b *testing.B, url, model string, arrival workload.ArrivalConfig, w workload.Config, pool int, header http.Header) (*engine.Engine, *recording.Recorder) {
	b.Helper()
	wl, err := workload.New(w.WithDefaults(), rand.New(rand.NewPCG(1, engine.SeedStreamWorkloadSetup)))
	if err != nil {
		b.Fatal(err)
	}
	cl, err := client.New(client.Options{Clock: recording.NewRunClock(), Concurrency: pool, Seed: 1, Headers: header})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	rec := recording.NewRecorder(recording.Options{})
	eng, err := engine.New(engine.Config{Targets: []string{url}, Model: model, Arrival: arrival.WithDefaults(), Workload: wl,
		Client: cl, Recorder: rec, Seed: 1, Grace: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return eng, rec
}

// runBenchScript runs src as a script with env, and alongside as
// Config.Alongside; it fails the benchmark when the run returns an error.
func runBenchScript(b *testing.B, ctx context.Context, src string, env map[string]string, alongside pipeline.Alongside) *report.Document {
	b.Helper()
	path := filepath.Join(b.TempDir(), "script.js")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	doc, err := Run(ctx, Config{Script: path, Env: env, Stdout: io.Discard, Stderr: &out, Alongside: alongside, NoSummary: true})
	if err != nil {
		b.Fatalf("run: %v\n%s", err, out.String())
	}
	return doc
}

// raiseFileLimit lifts RLIMIT_NOFILE to at least n, so that n connections
// can be open at once (the child processes inherit it).
func raiseFileLimit(b *testing.B, n uint64) {
	b.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = n
	lim.Max = max(lim.Max, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Skipf("cannot raise the open-file limit to %d: %v", n, err)
	}
}

// procStatus returns a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(b *testing.B, field string) float64 {
	b.Helper()
	v, err := readProcStatus(field)
	if err != nil {
		b.Skip(err)
	}
	return v
}

// readProcStatus is procStatus for any goroutine.
func readProcStatus(field string) (float64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status %s: %w", field, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// relDiff is (got − ref) / ref in percent.
func relDiff(got, ref int64) float64 {
	if ref == 0 {
		return 0
	}
	return 100 * float64(got-ref) / float64(ref)
}
