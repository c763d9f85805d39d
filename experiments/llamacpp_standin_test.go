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
//   - /metrics carries llamacpp:* series, not vllm:*.
//
// It speaks HTTP/1.1 on raw connections, as cpp-httplib does, so that the
// close after a stream is not softened by net/http's server.
type llamaServer struct {
	ln        net.Listener
	requests  atomic.Int64
	streams   atomic.Int64 // streamed answers finished
	processes atomic.Int64 // streams in progress
	wg        sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool // open connections, closed when the test ends
}

func newLlamaServer(t *testing.T) *llamaServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &llamaServer{ln: ln, conns: make(map[net.Conn]bool)}
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
			s.stream(c)
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
llamacpp:requests_deferred 0
`, 16*n, 8*n, 0.01*float64(s.processes.Load()), s.processes.Load())
}

// stream writes one streamed chat completion of 8 tokens, chunked, and
// returns (the caller closes the connection).
func (s *llamaServer) stream(c net.Conn) {
	seq := s.requests.Add(1)
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

// TestLlamaServerStandIn runs the catalog's llamacpp experiment, made
// short and without faults, against the stand-in: the monitor recognises
// llama.cpp and its series land in the report under the common names,
// usage comes from the finish chunk, and the merged chunks are a note, not
// a usage mismatch.
func TestLlamaServerStandIn(t *testing.T) {
	srv := newLlamaServer(t)
	spec, warns, err := Load(filepath.Join("catalog", "llamacpp.yaml"))
	if err != nil || len(warns) > 0 {
		t.Fatalf("catalog file: %v %v", err, warns)
	}
	spec.Target.LLM.URL = srv.URL() + "/v1"
	spec.Target.LLM.Model = "stand-in.gguf"
	spec.Workload.Rate, spec.Workload.Duration = 20, Duration(3*time.Second)
	spec.Faults, spec.StopConditions = nil, nil
	spec.Thresholds = nil
	spec.Recovery = Recovery{Window: Duration(time.Second), Hold: Duration(time.Second)}
	var out bytes.Buffer
	oc, err := Run(t.Context(), spec, Options{RunDir: t.TempDir(), Out: &out, Progress: -1, NoGuard: true,
		Observe: ObserveOptions{Scrape: true, ScrapeInterval: 200 * time.Millisecond}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	d := oc.Doc
	if strings.Contains(out.String(), "no series of a known engine") {
		t.Errorf("the monitor did not recognise llama.cpp:\n%s", out.String())
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
	if r.Lost != 0 || r.OK == 0 {
		t.Fatalf("requests %+v: want some ok and none lost", r)
	}
	// The client reuses the connection llama-server closes after a stream
	// (it advertised Keep-Alive): a request that catches the close fails
	// before any byte of its response as a reset or connect error. That
	// false error is issue 12's "False errors on a healthy server", fixed
	// in the client by a separate change; until then it is tolerated here,
	// and only those classes are.
	for class, n := range r.ErrorsByClass {
		if class != string(recording.ClassReset) && class != string(recording.ClassConnect) {
			t.Errorf("%d requests failed as %s, want only the keep-alive race's reset/connect", n, class)
		}
	}
	if r.Failed > 0 {
		t.Logf("keep-alive race: %d of %d requests failed (%v); see issue 12, false errors on keep-alive", r.Failed, r.Scheduled, r.ErrorsByClass)
	}
	c := d.Summary().Counts(recording.TagFilter{})
	if c.UsageReported != r.OK {
		t.Errorf("usage reported by %d of %d ok requests: usage in the finish chunk was missed", c.UsageReported, r.OK)
	}
	if c.UsageDiffers == 0 || c.UsageMismatch != 0 || d.Quality.UsageMismatchRate != 0 {
		t.Errorf("usage differs %d, mismatch %d (rate %v): want merged chunks noted, none a mismatch",
			c.UsageDiffers, c.UsageMismatch, d.Quality.UsageMismatchRate)
	}
	if got := d.Metrics.OutputTokens; got.Min != 8 || got.Max != 8 {
		t.Errorf("output tokens %+v, want 8 each (usage, not chunks)", got)
	}
}
