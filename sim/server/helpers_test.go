package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
)

// testConfig is a constant-latency replica fast enough for unit tests.
func testConfig() sim.Config {
	c := sim.DefaultConfig()
	c.Latency = sim.LatencyConstant
	c.TTFT = 20 * time.Millisecond
	c.ITL = 2 * time.Millisecond
	return c
}

// running is a replica served on 127.0.0.1:0 by the real Serve loop.
type running struct {
	url  string
	srv  *server
	done chan error // receives Serve's result
	stop context.CancelFunc
}

// start serves opts in the background and stops it when the test ends.
func start(t *testing.T, opts Options) *running {
	t.Helper()
	s, err := newServer(opts)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	return startServer(t, s)
}

// startServer serves s, made by newServer and adjusted by the test.
func startServer(t testing.TB, s *server) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{url: "http://" + ln.Addr().String(), srv: s, done: make(chan error, 1), stop: cancel}
	go func() { r.done <- s.serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10 s of its context ending")
		}
	})
	return r
}

// post sends a JSON body and returns the response (the caller closes it).
func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

// event is one SSE data line and when it arrived.
type event struct {
	data string
	at   time.Time
}

// readEvents reads SSE events until the body ends; err is the read error
// that ended it (nil for a clean end).
func readEvents(body io.Reader) ([]event, error) {
	var evs []event
	br := bufio.NewReader(body)
	for {
		line, err := br.ReadString('\n')
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			evs = append(evs, event{data: strings.TrimSuffix(d, "\n"), at: time.Now()})
		}
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
	}
}

// openAIError decodes an OpenAI error body and checks its shape.
func openAIError(t *testing.T, resp *http.Response) (typ, code, msg string) {
	t.Helper()
	var body struct {
		Error *struct {
			Message *string `json:"message"`
			Type    *string `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&body); err != nil || body.Error == nil ||
		body.Error.Message == nil || body.Error.Type == nil || body.Error.Code == nil {
		t.Fatalf("status %d body %q is not {\"error\":{\"message\",\"type\",\"code\"}}", resp.StatusCode, raw)
	}
	return *body.Error.Type, *body.Error.Code, *body.Error.Message
}

// shrinkingMemory is a device whose free memory the test can take away, as
// a balloon in another process would.
type shrinkingMemory struct {
	sim.Memory
	total int64
	taken chan int64 // bytes another process took; read on Free
	held  int64
}

func (m *shrinkingMemory) Free() (int64, error) {
	select {
	case n := <-m.taken:
		m.held = n
	default:
	}
	free, err := m.Memory.Free()
	return max(free-m.held, 0), err
}
