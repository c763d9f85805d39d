package kube_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// TestPodLogsAreReadAndFollowed: GetLogs asks for the log of the named
// container (kwok's nodes serve none, so an in-test server answers as the
// API server does: the log as text, followed as the container writes it);
// DoRaw reads the whole log, Stream delivers each line as it is written,
// and a pod the server does not know is NotFound.
func TestPodLogsAreReadAndFollowed(t *testing.T) {
	second := make(chan struct{})
	follow := make(chan string, 2) // the follow parameter of each log request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/api/v1/namespaces/ns/pods/p/log" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"pods \"x\" not found"}`)
			return
		}
		if q.Get("container") != "load" {
			t.Errorf("log request %s: want container=load", r.URL)
		}
		follow <- q.Get("follow")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "line 1\n")
		if q.Get("follow") != "true" {
			_, _ = io.WriteString(w, "line 2\n")
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-second:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "line 2\n")
	}))
	defer srv.Close()
	cl, err := kube.NewClientset(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pods := cl.CoreV1().Pods("ns")

	b, err := pods.GetLogs("p", &corev1.PodLogOptions{Container: "load"}).DoRaw(t.Context())
	if got, want := string(b), "line 1\nline 2\n"; err != nil || got != want {
		t.Errorf("DoRaw: %q, %v; want %q", got, err, want)
	}
	if f := <-follow; f != "" {
		t.Errorf("DoRaw: follow=%s, want none", f)
	}

	rc, err := pods.GetLogs("p", &corev1.PodLogOptions{Container: "load", Follow: true}).Stream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if f := <-follow; f != "true" {
		t.Errorf("Stream: follow=%q, want true", f)
	}
	lines := bufio.NewReader(rc)
	// The first line comes before the server writes the second: followed,
	// not read at the end.
	if l, err := lines.ReadString('\n'); l != "line 1\n" || err != nil {
		t.Fatalf("Stream: first line %q, %v", l, err)
	}
	close(second)
	if l, err := lines.ReadString('\n'); l != "line 2\n" || err != nil {
		t.Fatalf("Stream: second line %q, %v", l, err)
	}
	if rest, err := io.ReadAll(lines); len(rest) != 0 || err != nil {
		t.Errorf("Stream: after the log %q, %v; want its end", rest, err)
	}

	_, err = cl.CoreV1().Pods("ns").GetLogs("x", &corev1.PodLogOptions{Container: "load"}).DoRaw(t.Context())
	if !apierrors.IsNotFound(err) {
		t.Errorf("DoRaw of a missing pod: %v, want NotFound", err)
	}
}
