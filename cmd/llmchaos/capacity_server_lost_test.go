package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/capacity"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

// TestCapacityAgainstAServerThatDies: the endpoint goes away (its port
// closed) after answering the pre-flight check and a few of the first
// step's requests, as a server killed mid-search does. llmchaos capacity
// exits non-zero, says the server stopped answering, and reports no knee:
// its capacity file holds status server_lost and no knee, and a run whose
// rate is a share of it refuses it instead of using a knee nobody
// measured.
func TestCapacityAgainstAServerThatDies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a search against a simulator for seconds; skipped under -short")
	}
	cfg := simconfig.Default()
	cfg.Latency, cfg.TTFT, cfg.ITL = simconfig.LatencyConstant, 20*time.Millisecond, 5*time.Millisecond
	sim, err := url.Parse(servertest.Start(t, server.Options{Config: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint the search measures: the simulator behind a proxy that
	// closes its port once it has answered `answered` completions.
	const answered = 6
	proxy := httputil.NewSingleHostReverseProxy(sim)
	proxy.FlushInterval = -1 // stream chunks as they come
	var (
		done     atomic.Int64
		stopOnce sync.Once
		front    *httptest.Server
	)
	front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/completions") && done.Add(1) == answered {
			stopOnce.Do(func() { go front.Close() }) // Close waits for this handler
		}
	}))
	t.Cleanup(func() { stopOnce.Do(front.Close) })

	dir := t.TempDir()
	file := filepath.Join(dir, "capacity.json")
	code, out, errs := run(t, "capacity", "--target", front.URL+"/v1", "--model", cfg.Model, "--input-tokens", "16", "--max-tokens", "4",
		"--ignore-eos", "--arrival", "constant", "--slo", "ttft: p(90)<1s", "--slo", "error_rate: rate<0.1", "--seed", "5",
		"--start", "4", "--max", "8", "--step-requests", "20", "--min-step", "1s", "--max-step", "1s", "--ramp-step", "500ms",
		"--warmup", "300ms", "--settle", "100ms", "--grace", "2s", "--max-client-cpu", "0", "--out", file)
	if code == exitcode.OK {
		t.Fatalf("exit 0 against a server that died; stdout:\n%s\nstderr:\n%s", out, errs)
	}
	if !strings.Contains(out, "knee: none (the server stopped answering)") || !strings.Contains(errs, "the search stopped without a knee") ||
		!regexp.MustCompile(`llmchaos: the server answered none of step \d+'s`).MatchString(errs) {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	r, err := capacity.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != capacity.StatusServerLost || r.Knee.Load != 0 {
		t.Errorf("capacity file: status %s knee %+v, want server_lost and no knee", r.Status, r.Knee)
	}
	exp := filepath.Join(dir, "share.yaml")
	doc := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: e}\ntarget: {llm: {url: \"" + front.URL + "/v1\", model: m}}\n" +
		"workload: {rate: 80%, capacity: capacity.json, arrival: constant, duration: 30s, input_tokens: 16, output_tokens: 6}\n"
	if err := os.WriteFile(exp, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "run", "--dry-run", exp); code != exitcode.Usage || !strings.Contains(errs, "has no knee") {
		t.Errorf("run with 80%% of the lost search: exit %d, stderr %q; want %d and no knee", code, errs, exitcode.Usage)
	}
}
