package remotewrite

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/llmchaos/llmchaos/internal/promexpo"
)

// receiver is an httptest remote write endpoint that answers with the
// statuses given, in order (then 204), and keeps what it received.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	headers  []http.Header
	bodies   [][]TimeSeries
	errs     []error
	got      chan int // receives the count after each request
	srv      *httptest.Server
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{statuses: statuses, got: make(chan int, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, err := io.ReadAll(req.Body)
		var series []TimeSeries
		if err == nil {
			var pb []byte
			if pb, err = snappy.Decode(nil, raw); err == nil {
				series, err = decodeWriteRequest(pb)
			}
		}
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.bodies = append(r.bodies, series)
		r.errs = append(r.errs, err)
		status := http.StatusNoContent
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		n := len(r.bodies)
		r.mu.Unlock()
		w.WriteHeader(status)
		if status >= 400 {
			_, _ = io.WriteString(w, "nope\n")
		}
		r.got <- n
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// value returns the value of the series named name in request i.
func (r *receiver) value(t *testing.T, i int, name string) float64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs[i] != nil {
		t.Fatalf("request %d did not decode: %v", i, r.errs[i])
	}
	for _, ts := range r.bodies[i] {
		if ts.Labels[0].Name == "__name__" && ts.Labels[0].Value == name {
			return ts.Samples[0].Value
		}
	}
	t.Fatalf("request %d has no %s", i, name)
	return math.NaN()
}

func testGauge(t *testing.T) (*promexpo.Gauge, *promexpo.Registry) {
	reg := promexpo.NewRegistry(nil)
	g, err := reg.Gauge(promexpo.Opts{Name: "test_gauge", Help: "h"})
	if err != nil {
		t.Fatal(err)
	}
	return g, reg
}

func TestPushHeadersAndBody(t *testing.T) {
	rcv := newReceiver(t)
	g, reg := testGauge(t)
	g.Set(12.5)
	now := time.UnixMilli(1_700_000_000_123)
	w, err := New(Options{URL: rcv.srv.URL + "/api/v1/write", Gatherer: reg,
		ExternalLabels: map[string]string{"job": "llmchaos"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(t.Context()); err != nil {
		t.Fatalf("Push: %v", err)
	}
	h := rcv.headers[0]
	for k, want := range map[string]string{
		"Content-Encoding":                  "snappy",
		"Content-Type":                      "application/x-protobuf",
		"X-Prometheus-Remote-Write-Version": "0.1.0",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s: got %q, want %q", k, got, want)
		}
	}
	series := rcv.bodies[0]
	if len(series) != 1 {
		t.Fatalf("got %d series, want 1: %v", len(series), series)
	}
	want := TimeSeries{Labels: []Label{{"__name__", "test_gauge"}, {"job", "llmchaos"}},
		Samples: []Sample{{12.5, 1_700_000_000_123}}}
	if got := series[0]; len(got.Labels) != 2 || got.Labels[0] != want.Labels[0] || got.Labels[1] != want.Labels[1] ||
		len(got.Samples) != 1 || got.Samples[0] != want.Samples[0] {
		t.Errorf("got %v, want %v", got, want)
	}
	if st := w.Stats(); st.Pushes != 1 || st.Failed != 0 || st.Attempts != 1 || st.Series != 1 || st.Bytes == 0 {
		t.Errorf("stats: got %+v", st)
	}
}

func TestPushRetries(t *testing.T) {
	tests := []struct {
		name         string
		statuses     []int
		retries      int
		wantAttempts int
		wantStatus   int // of the final *HTTPError; 0: success
	}{
		{"ok at once", nil, 3, 1, 0},
		{"5xx then ok", []int{503, 500}, 3, 3, 0},
		{"429 then ok", []int{429}, 3, 2, 0},
		{"400 is final", []int{400}, 3, 1, 400},
		{"5xx past retries", []int{503, 503, 503, 503}, 2, 3, 503},
		{"no retries", []int{503}, -1, 1, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := newReceiver(t, tt.statuses...)
			_, reg := testGauge(t)
			w, err := New(Options{URL: rcv.srv.URL, Gatherer: reg, Retries: tt.retries, Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Push(t.Context())
			if got := rcv.requests(); got != tt.wantAttempts {
				t.Errorf("attempts: got %d, want %d", got, tt.wantAttempts)
			}
			if tt.wantStatus == 0 {
				if err != nil {
					t.Errorf("Push: %v", err)
				}
				return
			}
			he, ok := errors.AsType[*HTTPError](err)
			if !ok || he.Status != tt.wantStatus || he.Body != "nope" {
				t.Errorf("got error %v, want HTTP %d with the body", err, tt.wantStatus)
			}
			if st := w.Stats(); st.Failed != 1 {
				t.Errorf("stats failed: got %d, want 1", st.Failed)
			}
		})
	}
}

func TestPushUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/api/v1/write"
	_ = ln.Close() // nothing listens there now: connection refused
	_, reg := testGauge(t)
	w, err := New(Options{URL: url, Gatherer: reg, Retries: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Push(t.Context())
	if err == nil || !strings.Contains(err.Error(), "3 attempts") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("got %v, want a refused connection after 3 attempts", err)
	}
}

func TestRunFinalPush(t *testing.T) {
	rcv := newReceiver(t)
	g, reg := testGauge(t)
	g.Set(1)
	// An interval longer than the test: only the first and the final push.
	w, err := New(Options{URL: rcv.srv.URL, Gatherer: reg, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitRequests(t, rcv, 1)
	g.Set(42)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := rcv.requests(); got != 2 {
		t.Fatalf("requests: got %d, want 2 (first and final)", got)
	}
	if got := rcv.value(t, 0, "test_gauge"); got != 1 {
		t.Errorf("first push: got %v, want 1", got)
	}
	if got := rcv.value(t, 1, "test_gauge"); got != 42 {
		t.Errorf("final push: got %v, want 42", got)
	}
}

func TestRunPeriodic(t *testing.T) {
	rcv := newReceiver(t)
	_, reg := testGauge(t)
	w, err := New(Options{URL: rcv.srv.URL, Gatherer: reg, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitRequests(t, rcv, 4)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The receiver saw 4 requests; the last may have been cut short by
	// the cancel (then not counted), and the final push follows.
	if st := w.Stats(); st.Pushes < 4 || st.Failed != 0 {
		t.Errorf("stats: got %+v, want at least 4 pushes, none failed", st)
	}
}

func TestRunSurfacesFailures(t *testing.T) {
	// The first push is rejected, the final one is accepted.
	rcv := newReceiver(t, 400)
	_, reg := testGauge(t)
	seen := make(chan error, 10)
	w, err := New(Options{URL: rcv.srv.URL, Gatherer: reg, Interval: time.Hour,
		OnError: func(err error) { seen <- err }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-seen: // the first push failed and was reported
	case <-time.After(10 * time.Second):
		t.Fatal("OnError not called within 10 s")
	}
	cancel()
	err = <-done
	re, ok := errors.AsType[*RunError](err)
	if !ok || re.Pushes != 2 || re.Failed != 1 {
		t.Fatalf("got %v, want a RunError with 1 of 2 pushes failed", err)
	}
	if he, ok := errors.AsType[*HTTPError](err); !ok || he.Status != 400 {
		t.Errorf("RunError does not unwrap to the HTTP 400: %v", err)
	}
	if n := len(seen); n != 0 {
		t.Errorf("OnError calls: got %d more, want none (the final push succeeded)", n)
	}
}

func waitRequests(t *testing.T, rcv *receiver, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-rcv.got:
			if got >= n {
				return
			}
		case <-timeout:
			t.Fatalf("receiver got %d requests within 10 s, want %d", rcv.requests(), n)
		}
	}
}

func TestValidate(t *testing.T) {
	_, reg := testGauge(t)
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error; none: valid
	}{
		{"valid", Options{URL: "http://127.0.0.1:9090/api/v1/write", Gatherer: reg}, nil},
		{"everything wrong", Options{URL: "ftp://x", Interval: -time.Second, ExternalLabels: map[string]string{"__name__": "x"}},
			[]string{"want http:// or https://", "Gatherer is nil", "interval -1s is negative", `label name "__name__"`}},
		{"empty URL", Options{Gatherer: reg}, []string{"URL is empty"}},
		{"no host", Options{URL: "http:///api/v1/write", Gatherer: reg}, []string{"a host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, nerr := New(tt.opts); nerr == nil {
				t.Error("New accepted options that Validate rejects")
			}
		})
	}
}
