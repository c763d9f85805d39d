package experiments

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// llamaServer stands in for llama.cpp's llama-server where it differs from
// vLLM and the simulator:
//   - it advertises "Keep-Alive: timeout=5, max=100" on a streamed answer
//     and then closes the connection once the stream is done;
//   - it puts the usage into the chunk that carries finish_reason (no
//     separate usage chunk with empty choices);
//   - it merges two tokens into one chunk (a multi-byte character split
//     across tokens), so usage.completion_tokens is one more than the
//     content chunks in every third request;
//   - /metrics carries llamacpp:* series, not vllm:*;
//   - it takes a moment to close after a stream (closeDelay), long enough
//     for the client to send its next request on the dying connection:
//     the race of issue 12, every few requests rather than 1–2 %.
//
// Overloaded (standInOptions.stuckFrom), it accepts a share of the
// streamed requests and never answers them, as llama-server defers a
// request while every slot is busy; /metrics counts them deferred.
//
// It speaks HTTP/1.1 on raw connections, as cpp-httplib does, so that the
// close after a stream is not softened by net/http's server.
type llamaServer struct {
	ln        net.Listener
	opts      standInOptions
	requests  atomic.Int64
	streams   atomic.Int64 // streamed answers finished
	processes atomic.Int64 // streams in progress
	stuck     atomic.Int64 // requests accepted and never answered
	deferred  atomic.Int64 // of those, still waiting
	wg        sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool // open connections, closed when the test ends
}

// standInOptions shape the stand-in's behaviour.
type standInOptions struct {
	// closeDelay is how long the server waits after a stream before it
	// closes the connection.
	closeDelay time.Duration
	// stuckFrom, when not 0, overloads the server: from the stuckFrom-th
	// streamed request on, every stuckEvery-th is never answered.
	stuckFrom, stuckEvery int64
}

func newLlamaServer(t *testing.T, opts standInOptions) *llamaServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &llamaServer{ln: ln, opts: opts, conns: make(map[net.Conn]bool)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	// Idle keep-alive connections of the run's clients would hold their
	// goroutines until the clients' idle timeout: close them.
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *llamaServer) URL() string { return "http://" + s.ln.Addr().String() }

// serve answers requests on c until a streamed answer ends (then it closes
// c) or the client goes away.
func (s *llamaServer) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
		switch {
		case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/chat/completions"):
			seq := s.requests.Add(1)
			if o := s.opts; o.stuckFrom > 0 && seq >= o.stuckFrom && (seq-o.stuckFrom)%o.stuckEvery == 0 {
				s.stuck.Add(1)
				s.deferred.Add(1)
				_, _ = io.Copy(io.Discard, c) // until the client gives up
				s.deferred.Add(-1)
				return
			}
			s.stream(c, seq)
			time.Sleep(s.opts.closeDelay)
			return // llama-server closes here, despite the Keep-Alive header it sent
		case req.URL.Path == "/health":
			s.plain(c, "application/json", `{"status":"ok"}`)
		case req.URL.Path == "/v1/models":
			s.plain(c, "application/json", `{"object":"list","data":[{"id":"stand-in.gguf","object":"model","owned_by":"llamacpp"}]}`)
		case req.URL.Path == "/metrics":
			s.plain(c, "text/plain; version=0.0.4", s.metrics())
		default:
			_, _ = io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nKeep-Alive: timeout=5, max=100\r\n\r\n")
		}
	}
}

func (s *llamaServer) plain(c net.Conn, ctype, body string) {
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\nKeep-Alive: timeout=5, max=100\r\n\r\n%s",
		ctype, len(body), body)
}

func (s *llamaServer) metrics() string {
	n := s.streams.Load()
	return fmt.Sprintf(`# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total %d
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total %d
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio %g
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing %d
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred %d
`, 16*n, 8*n, 0.01*float64(s.processes.Load()), s.processes.Load(), s.deferred.Load())
}

// stream writes one streamed chat completion of 8 tokens, chunked, and
// returns (the caller closes the connection).
func (s *llamaServer) stream(c net.Conn, seq int64) {
	s.processes.Add(1)
	defer s.processes.Add(-1)
	_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\n"+
		"Transfer-Encoding: chunked\r\n\r\n")
	cw := httputil.NewChunkedWriter(c)
	event := func(json string) {
		_, _ = fmt.Fprintf(cw, "data: %s\n\n", json)
	}
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"stand-in.gguf","choices":[{"index":0,`
	pieces := []string{"The", " caf", "é", " is", " open", " to", "day", "."}
	if seq%3 == 0 { // "é" came as two tokens, sent as one chunk
		pieces = []string{"The", " caf", "é", " is", " open", " to", "day."}
	}
	event(head + `"delta":{"role":"assistant","content":null},"finish_reason":null}]}`)
	for _, p := range pieces {
		time.Sleep(time.Millisecond)
		event(head + fmt.Sprintf(`"delta":{"content":%q},"finish_reason":null}]}`, p))
	}
	event(head + `"delta":{},"finish_reason":"stop"}],"usage":{"completion_tokens":8,"prompt_tokens":16,"total_tokens":24},` +
		`"timings":{"prompt_n":16,"predicted_n":8}}`)
	event("[DONE]")
	_ = cw.Close()
	_, _ = io.WriteString(c, "\r\n")
	s.streams.Add(1)
}

// runStandIn runs the catalog's llamacpp experiment against srv, made
// short (3 s at 20 req/s, 1 s of grace) and without faults. Its
// thresholds are the catalog's, less those that need a fault: the
// recovery times go, and the fault phase's e2e bound applies to the whole
// run. The steady state and the stop condition stay as written.
func runStandIn(t *testing.T, srv *llamaServer) (*Outcome, string) {
	t.Helper()
	exp, warns, err := spec.Load(filepath.Join("catalog", "llamacpp.yaml"))
	if err != nil || len(warns) > 0 {
		t.Fatalf("catalog file: %v %v", err, warns)
	}
	exp.Target.LLM.URL = srv.URL() + "/v1"
	exp.Target.LLM.Model = "stand-in.gguf"
	exp.Workload.Rate, exp.Workload.Duration = spec.PerSecondRate(20), spec.Duration(3*time.Second)
	exp.Workload.Grace = spec.Duration(time.Second)
	exp.Faults = nil
	ths := spec.Thresholds{}
	for k, es := range exp.Thresholds {
		switch {
		case strings.HasPrefix(k, "recovery_time"):
		case strings.Contains(k, "fault:"):
			k = k[:strings.Index(k, "{")]
			ths[k] = append(ths[k], es...)
		default:
			ths[k] = append(ths[k], es...)
		}
	}
	for _, k := range []string{"error_rate", "ttft{phase:baseline}", "e2e", "requests_lost"} {
		if len(ths[k]) == 0 {
			t.Fatalf("the catalog's thresholds %v have no %s: this test checks the wrong ones", exp.Thresholds, k)
		}
	}
	exp.Thresholds = ths
	exp.Recovery = spec.Recovery{Window: spec.Duration(time.Second), Hold: spec.Duration(time.Second)}
	var out bytes.Buffer
	oc, err := runSpec(t.Context(), exp, Options{RunDir: t.TempDir(), Out: &out, Progress: -1, NoGuard: true,
		Observe: ObserveOptions{Scrape: true, ScrapeInterval: 200 * time.Millisecond}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return oc, out.String()
}

// TestLlamaServerStandIn runs the catalog's llamacpp experiment against
// the healthy stand-in: the monitor recognises llama.cpp and its series
// land in the report under the common names, usage comes from the finish
// chunk, the merged chunks are a note, not a usage mismatch, and the
// keep-alive race costs reconnects, never an error, so the catalog's
// thresholds pass (issue 12's "Done when", healthy half).
func TestLlamaServerStandIn(t *testing.T) {
	t.Parallel()
	srv := newLlamaServer(t, standInOptions{closeDelay: 20 * time.Millisecond})
	oc, out := runStandIn(t, srv)
	d := oc.Doc
	if strings.Contains(out, "no series of a known engine") {
		t.Errorf("the monitor did not recognise llama.cpp:\n%s", out)
	}
	names := map[string]bool{}
	for _, s := range d.Server {
		if s.Name == "up" {
			continue
		}
		names[s.Name] = true
		if s.Engine != scrape.EngineLlamaCpp {
			t.Errorf("server series %s: engine %q, want %q", s.Name, s.Engine, scrape.EngineLlamaCpp)
		}
	}
	for _, n := range []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total"} {
		if !names[n] {
			t.Errorf("no server series %s (have %v)", n, names)
		}
	}
	r := d.Requests
	if r.Lost != 0 || r.OK == 0 || r.Failed != 0 || len(r.ErrorsByClass) != 0 {
		t.Errorf("requests %+v: want all ok, none failed or lost (the keep-alive race is not an error)", r)
	}
	// The server closed every connection after its stream, 20 ms late:
	// the client sent some requests on a dying connection and sent them
	// again on a fresh one.
	t.Logf("%d requests, %d reconnects", r.Scheduled, r.Reconnects)
	if r.Reconnects == 0 {
		t.Errorf("reconnects 0 of %d requests: the stand-in's close after each stream never caught a reused connection", r.Scheduled)
	}
	if d.Verdict != report.VerdictPass {
		t.Errorf("verdict %s, want %s:\n%s", d.Verdict, report.VerdictPass, out)
	}
	for _, th := range d.Thresholds {
		if !th.OK {
			t.Errorf("threshold %s: %s failed (value %v) on the healthy stand-in", th.Key(), th.Expr, th.Value)
		}
	}
	c := d.Summary().Counts(recording.TagFilter{})
	if c.UsageReported != r.OK {
		t.Errorf("usage reported by %d of %d ok requests: usage in the finish chunk was missed", c.UsageReported, r.OK)
	}
	if c.UsageDiffers == 0 || c.UsageMismatch != 0 || d.Quality.UsageMismatchRate != 0 {
		t.Errorf("usage differs %d, mismatch %d (rate %v): want merged chunks noted, none a mismatch",
			c.UsageDiffers, c.UsageMismatch, d.Quality.UsageMismatchRate)
	}
	if got := d.Metrics["output_tokens"]; got.Min != 8 || got.Max != 8 {
		t.Errorf("output tokens %+v, want 8 each (usage, not chunks)", got)
	}
}

// TestLlamaServerStandInOverloaded runs the same experiment against an
// overloaded stand-in that, from the 10th request on, accepts one request
// in four and never answers it: the run fails, and for the right reason:
// error_rate is the failing threshold, every failed request is one the
// server left unanswered, of class timeout (unfinished at the end of the
// grace), and the server's deferred requests show in the monitor's
// waiting series (issue 12's "Done when", overloaded half).
func TestLlamaServerStandInOverloaded(t *testing.T) {
	t.Parallel()
	srv := newLlamaServer(t, standInOptions{closeDelay: 20 * time.Millisecond, stuckFrom: 10, stuckEvery: 4})
	oc, out := runStandIn(t, srv)
	d := oc.Doc
	if d.Verdict != report.VerdictFail {
		t.Fatalf("verdict %s, want %s:\n%s", d.Verdict, report.VerdictFail, out)
	}
	var failed []string
	for _, th := range d.Thresholds {
		if !th.OK {
			failed = append(failed, th.Key()+": "+th.Expr)
		}
	}
	if len(failed) != 1 || failed[0] != "error_rate: rate<0.01" {
		t.Errorf("failed thresholds %q, want error_rate: rate<0.01 alone", failed)
	}
	r := d.Requests
	stuck := srv.stuck.Load()
	if stuck < 5 {
		t.Fatalf("the stand-in left %d requests unanswered, want about 12", stuck)
	}
	if r.Failed != stuck || r.ErrorsByClass[string(recording.ClassTimeout)] != stuck || len(r.ErrorsByClass) != 1 {
		t.Errorf("failed %d, errors by class %v; want the %d unanswered requests, all of class timeout", r.Failed, r.ErrorsByClass, stuck)
	}
	t.Logf("%d requests, %d unanswered, errors %v", r.Scheduled, stuck, r.ErrorsByClass)
	// The steady state after the load may fail too: for the same reason.
	if ss := d.SteadyState; ss != nil {
		for _, p := range append(ss.Before, ss.After...) {
			if !p.OK && p.Probe != "error_rate: rate<0.01" {
				t.Errorf("steady-state probe %q failed (%s): want only error_rate to fail", p.Probe, p.Detail)
			}
		}
	}
	if r.Lost != 0 {
		t.Errorf("%d requests lost, want 0: an unanswered request is a failure, not lost", r.Lost)
	}
	waiting := 0.0
	for _, s := range d.Server {
		if s.Name == "vllm:num_requests_waiting" {
			for _, p := range s.Points {
				waiting = max(waiting, p[1])
			}
		}
	}
	if waiting == 0 {
		t.Errorf("the monitor never saw a deferred request (vllm:num_requests_waiting, from llamacpp:requests_deferred)")
	}
}
