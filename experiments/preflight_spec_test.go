package experiments

import (
	"context"
	"errors"
	"fmt"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/pipeline/load"
)

// TestWorkloadPreflightDecodes: preflight takes true or false, an explicit
// false is kept (not replaced by the default), and leaving it out runs the
// check.
func TestWorkloadPreflightDecodes(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: p}\n" +
		"target: {llm: {url: \"http://127.0.0.1:1/v1\", model: m}}\n"
	const faultsYAML = "faults:\n  - {name: errs, type: http.error, at: 5s, duration: 5s}\n"
	tests := []struct {
		name    string
		value   string // the workload's preflight key, "" for none
		off     bool
		wantErr string
	}{
		{name: "left out", off: false},
		{name: "true", value: "true", off: false},
		{name: "false", value: "false", off: true},
		{name: "not a bool", value: "0", wantErr: "workload.preflight: got"},
		{name: "a string", value: "\"no\"", wantErr: "want true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := "workload: {rate: 5, duration: 20s, input_tokens: 16"
			if tt.value != "" {
				w += ", preflight: " + tt.value
			}
			src := head + w + "}\n" + faultsYAML
			exp, _, err := spec.Parse("p.yaml", []byte(src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := exp.Workload.PreflightOff(); got != tt.off {
				t.Errorf("PreflightOff() = %v, want %v", got, tt.off)
			}
		})
	}
}

// TestRunWorkloadPreflightFalse: an endpoint that does not serve the model
// stops the run before any fault with a *load.PreflightError; with
// workload.preflight: false the run goes on.
func TestRunWorkloadPreflightFalse(t *testing.T) {
	t.Parallel()
	skipShort(t)
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served-model","object":"model"}]}`)
		case "/v1/chat/completions":
			chats.Add(1)
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"object":"error","message":"The model does not exist.","type":"NotFoundError","param":null,"code":404}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	off := false
	for _, tt := range []struct {
		name      string
		preflight *bool
		refused   bool
	}{
		{"default", nil, true},
		{"preflight false", &off, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			idle := newFakeFault(t, "idle", nil)
			exp := testSpec(srv.URL, 600*time.Millisecond, httpErrorFault("idle", 200*time.Millisecond, 100*time.Millisecond))
			exp.Workload.Preflight = tt.preflight
			_, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), hooks: fakeBuilds(map[string]faults.Fault{"idle": idle})})
			_, refused := errors.AsType[*load.PreflightError](err)
			if refused != tt.refused {
				t.Fatalf("Run: err = %v, want a pre-flight refusal %v", err, tt.refused)
			}
			if injected, _ := idle.counts(); refused && injected != 0 {
				t.Errorf("fault injected %d times after a failed pre-flight check, want 0", injected)
			}
			if !refused && err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}
