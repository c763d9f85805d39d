package network

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
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/faults"
)

// The idle-cost benchmark's load: streams of benchTokens tokens, benchITL
// apart after benchTTFT, benchConc at a time, benchStreams per batch; each
// path gets benchRounds batches, the paths taking turns in a shuffled order
// so that the machine's other load weighs on all of them alike.
const (
	benchTTFT    = 2 * time.Millisecond
	benchITL     = 2 * time.Millisecond
	benchTokens  = 64
	benchConc    = 32
	benchStreams = 128
	benchRounds  = 6
)

// upstreamRoleBench makes the test binary the idle-cost benchmark's SSE
// server, and relayRoleBench its bare relay (TestProxyHelperProcess).
const (
	upstreamRoleBench = "benchupstream"
	relayRoleBench    = "benchrelay"
)

// benchUpstreamServe is the benchmark's SSE server: vLLM-shaped chunks,
// the role with the first token after benchTTFT, then one token every
// benchITL, each its own flushed write, keep-alive. Each token chunk's id
// carries the CLOCK_MONOTONIC time of its write ("id":"tNANOS"), which
// the benchmark's client, on the same machine's clock, subtracts from its
// time of reading it: the token's one-way delivery time. It prints
// "LISTEN addr" and serves until stdin closes.
func benchUpstreamServe() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The role chunk's id carries the time the request was read ("r" and
	// CLOCK_MONOTONIC nanoseconds), so that the client can leave the
	// server's own wait out of the TTFT.
	role := func(dst []byte, got int64) []byte {
		dst = append(dst, `data: {"id":"r`...)
		dst = strconv.AppendInt(dst, got, 10)
		return append(dst, `","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	end := []byte("data: " + `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n" +
		"data: " + `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":` + strconv.Itoa(benchTokens) + `,"total_tokens":` + strconv.Itoa(benchTokens+8) + `}}` + "\n\ndata: [DONE]\n\n")
	token := func(dst []byte) []byte {
		dst = append(dst, `data: {"id":"t`...)
		dst = strconv.AppendInt(dst, monoNanos(), 10)
		return append(dst, `","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got := monoNanos()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		t := time.NewTimer(benchTTFT)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		buf := make([]byte, 0, 512)
		_, _ = w.Write(token(role(buf, got)))
		fl.Flush()
		tick := time.NewTicker(benchITL)
		defer tick.Stop()
		for range benchTokens - 1 {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
			_, _ = w.Write(token(buf[:0]))
			fl.Flush()
		}
		_, _ = w.Write(end)
	})
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("LISTEN %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

// benchRelayServe is the idle-cost benchmark's bare relay: the least a
// process in the path can do, a read and a write per chunk in each
// direction with nothing else, in Go as the proxies are. What it adds to
// the direct path is the cost of the hop itself on this machine (a second
// socket, a process to wake); what a proxy adds beyond it is the proxy's own.
// It relays to upstream, prints "LISTEN addr" and serves until stdin closes.
func benchRelayServe(upstream string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	copyConn := func(dst, src net.Conn) {
		buf := make([]byte, linkReadSize)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			go copyConn(up, c)
			go copyConn(c, up)
		}
	}()
	fmt.Printf("LISTEN %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return ln.Close()
}

// benchPinning, on a machine with at least benchPinCPUs CPUs, gives the
// SSE server, the client (the benchmark's own process) and the process in
// the path CPUs of their own, two each, as a proxy on a host or a sidecar
// core of its own would have them: the hop is then measured without the
// three fighting for the same cores. Fewer CPUs: no pinning (nil).
const benchPinCPUs = 6

type benchPinning struct{ server, client, proxy unix.CPUSet }

func newBenchPinning() *benchPinning {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil || all.Count() < benchPinCPUs {
		return nil
	}
	cpus := cpusIn(all)
	var p benchPinning
	for i, set := range []*unix.CPUSet{&p.server, &p.client, &p.proxy} {
		set.Set(cpus[2*i])
		set.Set(cpus[2*i+1])
	}
	return &p
}

// pin sets every thread of process pid to set (threads made later inherit
// it from the thread that makes them); pid 0 is this process.
func pin(pid int, set unix.CPUSet) error {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	for range 2 { // a second pass takes threads made during the first
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, _ := strconv.Atoi(t.Name())
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pin thread %d of %s: %w", tid, dir, err)
			}
		}
	}
	return nil
}

// monoNanos reads CLOCK_MONOTONIC, which every process of the machine
// shares (Go's own monotonic readings count from the process's start).
func monoNanos() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// startChild starts cmd with a pipe on stdin (the child ends when it
// closes) and returns the address from its "LISTEN addr" line.
func startChild(b testing.TB, cmd *exec.Cmd) string {
	b.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return addr
		}
	}
	b.Fatalf("%s: no LISTEN line (%v)", cmd.Path, sc.Err())
	return ""
}

// procCPU returns the CPU time (user + system, all threads) of process pid.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th fields of the line, in clock ticks (100 Hz).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// buildToxiproxy builds Toxiproxy's server from its own module
// (testdata/toxiproxy) into dir; "" and the reason when it cannot. A
// server built beforehand, named by $LLMCHAOS_TOXIPROXY_BIN, is used as it
// is (for a machine without Go or the module proxy).
func buildToxiproxy(b *testing.B, dir string) (string, string) {
	b.Helper()
	if exe := os.Getenv("LLMCHAOS_TOXIPROXY_BIN"); exe != "" {
		if _, err := os.Stat(exe); err != nil {
			return "", "LLMCHAOS_TOXIPROXY_BIN: " + err.Error()
		}
		return exe, ""
	}
	exe := filepath.Join(dir, "toxiproxy-server")
	cmd := exec.Command("go", "build", "-o", exe, "github.com/Shopify/toxiproxy/v2/cmd/server")
	cmd.Dir = filepath.Join("testdata", "toxiproxy")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("go build: %v: %s", err, bytes.TrimSpace(out))
	}
	return exe, ""
}

// startToxiproxy runs Toxiproxy's server with one proxy to upstream and no
// toxic, and returns the proxy's address and the server's pid.
func startToxiproxy(b *testing.B, exe, upstream string) (string, int) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	api := ln.Addr().String()
	ln.Close() // Toxiproxy takes the port by number
	host, port, _ := net.SplitHostPort(api)
	cmd := exec.Command(exe, "-host", host, "-port", port)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=error")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"name":"bench","listen":"127.0.0.1:0","upstream":%q,"enabled":true}`, upstream)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+api+"/proxies", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var p struct {
				Listen string `json:"listen"`
			}
			derr := json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || derr != nil {
				b.Fatalf("toxiproxy: create proxy: %s %v", resp.Status, derr)
			}
			return p.Listen, cmd.Process.Pid
		}
		select {
		case <-ctx.Done():
			b.Fatalf("toxiproxy API at %s: %v", api, err)
		case <-time.After(20 * time.Millisecond): // the server is starting: poll its API
		}
	}
}

// benchPath is one way to the upstream and what went through it.
type benchPath struct {
	name string
	addr string
	pid  int // the proxy's process; 0 for direct
	hc   *http.Client

	ttft     []float64 // ms: send → first token read
	ttftNet  []float64 // ms: the TTFT less the server's wait (the request's way there and the first token's way back)
	itl      []float64 // ms: between the reads of consecutive tokens
	delivery []float64 // ms: a token's write by the server → its read by the client
	tokens   int64
	cpu      time.Duration
	failed   int
	// rounds are each counted batch's own p99s, in the order of the
	// rounds, so that each can be set against the same round's other
	// paths (the machine's load moves between rounds, and moves a p99
	// pooled over all of them by more than a proxy adds).
	rounds []roundP99
}

// roundP99 is one batch's p99 TTFT, TTFT less the server's wait, and ITL, ms.
type roundP99 struct{ ttft, ttftNet, itl float64 }

// batch streams benchStreams requests through p, benchConc at a time, on
// kept-alive connections, reading each event as it comes.
func (p *benchPath) batch(b *testing.B) {
	var cpu0 time.Duration
	if p.pid != 0 {
		var err error
		if cpu0, err = procCPU(p.pid); err != nil {
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	ttft0, itl0 := len(p.ttft), len(p.itl)
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":%d,"stream":true}`, benchTokens)
	for range benchConc {
		wg.Go(func() {
			var ttft, ttftNet, itl, delivery []float64
			failed := 0
			for next.Add(1) <= benchStreams {
				t, tn, i, d, ok := p.stream(body)
				if !ok {
					failed++
					continue
				}
				ttft, ttftNet, itl, delivery = append(ttft, t), append(ttftNet, tn), append(itl, i...), append(delivery, d...)
			}
			mu.Lock()
			p.ttft, p.itl, p.delivery = append(p.ttft, ttft...), append(p.itl, itl...), append(p.delivery, delivery...)
			p.ttftNet = append(p.ttftNet, ttftNet...)
			p.tokens += int64(len(delivery))
			p.failed += failed
			mu.Unlock()
		})
	}
	wg.Wait()
	p.rounds = append(p.rounds, roundP99{percentile(p.ttft[ttft0:], .99), percentile(p.ttftNet[ttft0:], .99), percentile(p.itl[itl0:], .99)})
	if p.pid != 0 {
		cpu1, err := procCPU(p.pid)
		if err != nil {
			b.Fatal(err)
		}
		p.cpu += cpu1 - cpu0
	}
}

// stream sends one request and reads its events; ok is false when it did
// not end with every token and [DONE]. ttftNet is the TTFT less the
// server's wait between reading the request and writing the first token:
// what the way there and back adds, without the server's timer.
func (p *benchPath) stream(body string) (ttft, ttftNet float64, itl, delivery []float64, ok bool) {
	start := monoNanos()
	resp, err := p.hc.Post("http://"+p.addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, 0, nil, nil, false
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 4096)
	var last, got int64
	done := false
	for {
		line, err := br.ReadSlice('\n')
		now := monoNanos()
		if i := bytes.Index(line, []byte(`"id":"r`)); i >= 0 && got == 0 {
			rest := line[i+len(`"id":"r`):]
			var perr error
			if got, perr = strconv.ParseInt(string(rest[:bytes.IndexByte(rest, '"')]), 10, 64); perr != nil {
				return 0, 0, nil, nil, false
			}
		}
		if i := bytes.Index(line, []byte(`"id":"t`)); i >= 0 {
			rest := line[i+len(`"id":"t`):]
			sent, perr := strconv.ParseInt(string(rest[:bytes.IndexByte(rest, '"')]), 10, 64)
			if perr != nil || got == 0 {
				return 0, 0, nil, nil, false
			}
			delivery = append(delivery, float64(now-sent)/1e6)
			if last == 0 {
				ttft = float64(now-start) / 1e6
				ttftNet = float64((got-start)+(now-sent)) / 1e6
			} else {
				itl = append(itl, float64(now-last)/1e6)
			}
			last = now
		}
		done = done || bytes.HasPrefix(line, []byte("data: [DONE]"))
		if err != nil {
			break
		}
	}
	return ttft, ttftNet, itl, delivery, done && len(delivery) == benchTokens
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkProxyIdleCost measures what a fault proxy without a toxic adds
// to a streaming load, side by side with Toxiproxy (built from its own
// module under testdata, never imported by llmchaos) without a toxic, on
// the same traffic: TTFT and ITL (p50, p99) through each minus directly;
// the tokens' delivery time (the server's write to the client's read, on
// the machine's shared monotonic clock), which leaves the server's own
// timer jitter out; and each proxy's CPU per million tokens. The proxies
// and the SSE server run as processes of their own. Targets: added p99
// TTFT and ITL under 0.2 ms; CPU per token no more than Toxiproxy's.
func BenchmarkProxyIdleCost(b *testing.B) {
	pins := newBenchPinning()
	pinTo := func(pid int, set func(*benchPinning) unix.CPUSet) {
		if pins != nil {
			if err := pin(pid, set(pins)); err != nil {
				b.Fatal(err)
			}
		}
	}
	upCmd := exec.Command(os.Args[0], "-test.run=^TestProxyHelperProcess$")
	upCmd.Env = append(os.Environ(), roleEnv+"="+upstreamRoleBench)
	upstream := startChild(b, upCmd)
	pinTo(upCmd.Process.Pid, func(p *benchPinning) unix.CPUSet { return p.server })
	pinTo(0, func(p *benchPinning) unix.CPUSet { return p.client })
	proxyCPUs := func(p *benchPinning) unix.CPUSet { return p.proxy }

	relayCmd := exec.Command(os.Args[0], "-test.run=^TestProxyHelperProcess$")
	relayCmd.Env = append(os.Environ(), roleEnv+"="+relayRoleBench, upstreamEnv+"="+upstream)
	relay := startChild(b, relayCmd)
	pinTo(relayCmd.Process.Pid, proxyCPUs)

	paths := []*benchPath{{name: "direct", addr: upstream}, {name: "bare relay", addr: relay, pid: relayCmd.Process.Pid}}
	for _, mode := range []Mode{ModeHTTP, ModeTCP} {
		pp, err := StartProxyProcess(context.Background(), faults.NopLog{}, ProcessConfig{
			Proxy:   Config{Upstream: upstream, Mode: mode},
			Control: filepath.Join(b.TempDir(), "p.sock"),
		}, ProcessOptions{Command: helperCommand(), Env: helperEnv()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = pp.Stop(context.Background()) })
		pinTo(pp.PID(), proxyCPUs)
		paths = append(paths, &benchPath{name: "llmchaos " + string(mode), addr: pp.Addr(), pid: pp.PID()})
	}
	if exe, why := buildToxiproxy(b, b.TempDir()); exe != "" {
		addr, pid := startToxiproxy(b, exe, upstream)
		pinTo(pid, proxyCPUs)
		paths = append(paths, &benchPath{name: "toxiproxy", addr: addr, pid: pid})
	} else {
		b.Logf("Toxiproxy left out: %s", why)
	}

	for _, p := range paths {
		tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: benchConc, DisableCompression: true}
		b.Cleanup(tr.CloseIdleConnections)
		p.hc = &http.Client{Transport: tr}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for _, p := range paths {
			p.batch(b) // warm the connections and the proxies up; not counted
			p.ttft, p.itl, p.delivery, p.tokens, p.cpu, p.failed, p.rounds = nil, nil, nil, 0, 0, 0, nil
		}
		for range benchRounds {
			order := slices.Clone(paths)
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, p := range order {
				p.batch(b)
			}
		}
	}

	direct := paths[0]
	b.Logf("%d streams of %d tokens a path (TTFT %v, ITL %v, %d at a time), paths in turn",
		benchRounds*benchStreams, benchTokens, benchTTFT, benchITL, benchConc)
	if pins != nil {
		b.Logf("pinned: server on CPUs %s, client %s, relay and proxies %s", cpuList(pins.server), cpuList(pins.client), cpuList(pins.proxy))
	} else {
		b.Logf("not pinned: client, server and proxies share %d CPUs (pinning needs %d)", runtime.NumCPU(), benchPinCPUs)
	}
	b.Logf("TTFT, net (the TTFT less the server's wait: the request's way there and the first token's")
	b.Logf("way back), ITL and delivery (a token's way back), p50 and p99 pooled over the rounds, in ms,")
	b.Logf("the rows after direct adding to it; the proxy's CPU in seconds per million tokens")
	b.Logf("%-13s %7s %7s %7s %7s %7s %7s %7s %7s %8s", "path", "TTFT50", "TTFT99", "net50", "net99", "ITL50", "ITL99", "dlv50", "dlv99", "CPU/Mtok")
	var toxCPU float64
	for _, p := range paths {
		if p.name == "toxiproxy" && p.tokens > 0 {
			toxCPU = p.cpu.Seconds() / float64(p.tokens) * 1e6
		}
	}
	type fig struct{ ttft50, ttft99, net50, net99, itl50, itl99, del50, del99 float64 }
	figs := func(p *benchPath) fig {
		return fig{percentile(p.ttft, .5), percentile(p.ttft, .99), percentile(p.ttftNet, .5), percentile(p.ttftNet, .99),
			percentile(p.itl, .5), percentile(p.itl, .99), percentile(p.delivery, .5), percentile(p.delivery, .99)}
	}
	d := figs(direct)
	b.Logf("%-13s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %8s", direct.name,
		d.ttft50, d.ttft99, d.net50, d.net99, d.itl50, d.itl99, d.del50, d.del99, "-")
	if direct.failed > 0 {
		b.Errorf("direct: %d streams failed", direct.failed)
	}
	for _, p := range paths[1:] {
		f := figs(p)
		cpu := p.cpu.Seconds() / float64(max(p.tokens, 1)) * 1e6
		b.Logf("%-13s %+7.3f %+7.3f %+7.3f %+7.3f %+7.3f %+7.3f %+7.3f %+7.3f %8.2f", p.name, f.ttft50-d.ttft50, f.ttft99-d.ttft99,
			f.net50-d.net50, f.net99-d.net99, f.itl50-d.itl50, f.itl99-d.itl99, f.del50-d.del50, f.del99-d.del99, cpu)
		key := strings.ReplaceAll(p.name, " ", "_")
		b.ReportMetric(f.ttft99-d.ttft99, "ms_added_ttft_p99_"+key)
		b.ReportMetric(f.net99-d.net99, "ms_added_ttft_net_p99_"+key)
		b.ReportMetric(f.itl99-d.itl99, "ms_added_itl_p99_"+key)
		b.ReportMetric(f.del99-d.del99, "ms_added_delivery_p99_"+key)
		b.ReportMetric(cpu, "cpu_s/Mtok_"+key)
		if toxCPU > 0 && p.name != "toxiproxy" {
			b.ReportMetric(cpu/toxCPU, "cpu_vs_toxiproxy_"+key)
		}
		if p.failed > 0 {
			b.Errorf("%s: %d streams failed", p.name, p.failed)
		}
	}
	benchRoundFigures(b, paths)
}

// cpusIn returns the numbers of the CPUs in set, in order.
func cpusIn(set unix.CPUSet) []int {
	var cpus []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// cpuList writes set as a list of CPU numbers ("4,5").
func cpuList(set unix.CPUSet) string {
	var l []string
	for _, c := range cpusIn(set) {
		l = append(l, strconv.Itoa(c))
	}
	return strings.Join(l, ",")
}

// benchRoundFigures prints, for each proxy, what it added to the p99 TTFT
// and ITL of the direct path in the same round (median over the rounds,
// and their range, which shows how far the machine's load moves such a
// figure), and the same for each llmchaos proxy against Toxiproxy.
func benchRoundFigures(b *testing.B, paths []*benchPath) {
	var tox *benchPath
	for _, p := range paths {
		if p.name == "toxiproxy" {
			tox = p
		}
	}
	b.Logf("p99 added, round by round (%d rounds): median [lowest, highest], ms", benchRounds)
	b.Logf("%-27s %-20s %-20s %s", "path", "TTFT p99", "net p99", "ITL p99")
	row := func(name string, p, base *benchPath) {
		var dt, dn, di []float64
		for i := range min(len(p.rounds), len(base.rounds)) {
			dt = append(dt, p.rounds[i].ttft-base.rounds[i].ttft)
			dn = append(dn, p.rounds[i].ttftNet-base.rounds[i].ttftNet)
			di = append(di, p.rounds[i].itl-base.rounds[i].itl)
		}
		if len(dt) == 0 {
			return
		}
		span := func(xs []float64) string {
			return fmt.Sprintf("%+.2f [%+.2f, %+.2f]", percentile(xs, .5), slices.Min(xs), slices.Max(xs))
		}
		b.Logf("%-27s %-20s %-20s %s", name, span(dt), span(dn), span(di))
	}
	direct, relay := paths[0], paths[1]
	for _, p := range paths[1:] {
		row(p.name+" vs direct", p, direct)
	}
	for _, p := range paths[2:] {
		row(p.name+" vs bare relay", p, relay)
	}
	if tox == nil {
		return
	}
	for _, p := range paths[2:] {
		if p != tox {
			row(p.name+" vs toxiproxy", p, tox)
		}
	}
}

// TestBenchPinSetsEveryThread: pin, which the idle-cost benchmark uses on
// 6 CPUs or more, sets every thread of a running Go process (the bare
// relay, whose runtime has several) to the CPUs given.
func TestBenchPinSetsEveryThread(t *testing.T) {
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	cpus := cpusIn(all)
	if len(cpus) < 2 {
		t.Skipf("this process may run on %d CPU: pinning to one could not show", len(cpus))
	}
	one.Set(cpus[0])
	up := startTCPServer(t, echo)
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyHelperProcess$")
	cmd.Env = append(os.Environ(), roleEnv+"="+relayRoleBench, upstreamEnv+"="+up.addr())
	startChild(t, cmd)
	if err := pin(cmd.Process.Pid, one); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 2 {
		t.Fatalf("the relay has %d threads; want a Go runtime's several", len(tasks))
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			t.Fatal(err)
		}
		if got != one {
			t.Errorf("thread %d: CPUs %s, want %s", tid, cpuList(got), cpuList(one))
		}
	}
}
