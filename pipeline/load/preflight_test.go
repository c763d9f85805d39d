package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
)

// vllmLike serves what vLLM serves under /v1: the model list (when
// models is not nil) and streamed chat completions of the model "m"; a
// request for another model gets the body vLLM answers with, under
// status notFound (404 today, 400 in older versions). Anything else is
// a 404. completions counts the chat requests.
func vllmLike(t *testing.T, models []string, notFound int, completions *atomic.Int64) string {
	t.Helper()
	mux := http.NewServeMux()
	if models != nil {
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			var ids []string
			for _, m := range models {
				ids = append(ids, fmt.Sprintf(`{"id":%q,"object":"model"}`, m))
			}
			fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(ids, ","))
		})
	}
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		completions.Add(1)
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"model":"m"`) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(notFound)
			fmt.Fprint(w, `{"object":"error","message":"The model `+"`wrong`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t\"},\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestPreflight(t *testing.T) {
	noKey := client.Options{Getenv: func(string) string { return "" }}
	tests := []struct {
		name      string
		models    []string // nil: no /v1/models
		notFound  int
		path      string // appended to the server's URL
		model     string
		wantErr   []string // substrings of the error; none: no error
		wantCalls int64    // chat requests the check sent
	}{
		{name: "model listed: no request sent", models: []string{"m"}, path: "/v1", model: "m", wantCalls: 0},
		{name: "no model list: one request succeeds", path: "/v1", model: "m", wantCalls: 1},
		{name: "base URL without /v1", models: []string{"m"}, path: "", model: "m",
			wantErr: []string{"http 404", "base URL usually ends in /v1"}, wantCalls: 0},
		{name: "wrong model, vLLM's 404", models: []string{"m"}, notFound: 404, path: "/v1", model: "wrong",
			wantErr: []string{"http 404: The model `wrong` does not exist.", `it serves m`}, wantCalls: 1},
		{name: "wrong model, older vLLM's 400, no model list", notFound: 400, path: "/v1", model: "wrong",
			wantErr: []string{"http 400: The model `wrong` does not exist."}, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			url := vllmLike(t, tt.models, tt.notFound, &calls) + tt.path
			warns, err := Preflight(context.Background(), PreflightConfig{Targets: []string{url}, Model: tt.model, Chat: true, Client: noKey})
			if len(warns) != 0 {
				t.Errorf("warnings %q, want none", warns)
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("sent %d requests, want %d", got, tt.wantCalls)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if _, ok := errors.AsType[*PreflightError](err); !ok {
				t.Fatalf("got %v (%T), want a *PreflightError", err, err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestPreflightAuth: a refused key stops the load, with the server's
// message; a server that fails for a reason that may pass (503) is a
// warning only.
func TestPreflightAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided"}}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"warming up"}}`)
	}))
	t.Cleanup(srv.Close)
	check := func(key string) ([]string, error) {
		opts := client.Options{Getenv: func(string) string { return key }}
		return Preflight(context.Background(), PreflightConfig{Targets: []string{srv.URL + "/v1"}, Model: "m", Chat: true, Client: opts})
	}
	_, err := check("bad")
	if err == nil || !strings.Contains(err.Error(), "Incorrect API key provided") || !strings.Contains(err.Error(), "--api-key-env") {
		t.Errorf("bad key: got %v, want the server's message and the flag to check", err)
	}
	warns, err := check("good")
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "warming up") {
		t.Errorf("503: got %q, %v; want one warning with the server's message and no error", warns, err)
	}
	// A literal key (a script's llm.Client apiKey) is used over the environment.
	opts := client.Options{APIKey: "good", Getenv: func(string) string { return "bad" }}
	warns, err = Preflight(context.Background(), PreflightConfig{Targets: []string{srv.URL + "/v1"}, Model: "m", Chat: true, Client: opts})
	if err != nil || len(warns) != 1 {
		t.Errorf("literal key: got %q, %v; want the key accepted (one 503 warning)", warns, err)
	}
}

// TestRunPreflight: Run stops a load whose model the server does not
// serve before its first request, unless NoPreflight is set.
func TestRunPreflight(t *testing.T) {
	var calls atomic.Int64
	cfg := testConfig(vllmLike(t, []string{"m"}, 404, &calls) + "/v1")
	cfg.Model = "wrong"
	_, err := Run(context.Background(), cfg)
	se, ok := errors.AsType[*StageError](err)
	if !ok || se.Stage != StagePreflight {
		t.Fatalf("got %v, want a preflight StageError", err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d requests sent, want the check's 1 only", calls.Load())
	}
	cfg.NoPreflight = true
	l, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1+int64(l.Stats.Scheduled) || l.Stats.Scheduled != 10 {
		t.Errorf("%d requests sent with %d scheduled, want the 10 of the load after the check's 1", got, l.Stats.Scheduled)
	}
}

// TestRunIgnoreEOSIsNoTruncation: with ignore_eos, finish_reason length
// is what the run asked for: the truncation rate stays 0; without it,
// every such request counts as truncated.
func TestRunIgnoreEOSIsNoTruncation(t *testing.T) {
	for _, tt := range []struct {
		ignoreEOS bool
		want      float64
	}{{false, 1}, {true, 0}} {
		var calls atomic.Int64
		cfg := testConfig(vllmLike(t, []string{"m"}, 404, &calls) + "/v1")
		cfg.Workload.IgnoreEOS = tt.ignoreEOS
		l, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := l.Document(report.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.Quality.TruncationRate; got != tt.want || doc.Requests.OK != 10 {
			t.Errorf("ignore_eos %v: truncation rate %v over %d ok, want %v over 10", tt.ignoreEOS, got, doc.Requests.OK, tt.want)
		}
	}
}
