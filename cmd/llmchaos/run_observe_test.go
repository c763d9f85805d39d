package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// observedExperiment runs 5 s of load on one simulated replica with a
// proxy fault from 1.5 s to 3 s.
const observedExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: observed}
target:
  sim: {replicas: 1, startup_time: 200ms}
workload: {rate: 10, duration: 5s, input_tokens: 32, output_tokens: 8}
faults:
  - {name: slow-chunks, type: stream.chunk_delay, at: 1500ms, duration: 1500ms, params: {delay: 2ms}}
`

// faultActive scrapes metricsURL for llmchaos_fault_active of fault name.
func faultActive(c *http.Client, metricsURL, name string) (v float64, ok bool) {
	resp, err := c.Get(metricsURL)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "llmchaos_fault_active{") && strings.Contains(line, `fault="`+name+`"`) {
			_, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			return v, err == nil
		}
	}
	return 0, false
}

func TestRunLiveMetricsShowTheFaultWindow(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "observed.yaml")
	if err := os.WriteFile(file, []byte(observedExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", file, "--out", runDir, "--progress", "0",
		"--metrics-listen", "127.0.0.1:0", "--scrape-interval", "500ms")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// The run's output says where the metrics are and when the fault is
	// injected and reverted; the test scrapes in between and after.
	var (
		mu       sync.Mutex
		output   strings.Builder
		state    = "before" // before → injected → reverted
		urlCh    = make(chan string, 1)
		readDone = make(chan struct{})
	)
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			output.WriteString(line + "\n")
			switch {
			case strings.Contains(line, "injected slow-chunks"):
				state = "injected"
			case strings.Contains(line, "reverted slow-chunks"):
				state = "reverted"
			}
			mu.Unlock()
			if _, u, ok := strings.Cut(line, "live metrics at "); ok {
				select {
				case urlCh <- strings.TrimSpace(u):
				default:
				}
			}
		}
	}()
	snapshot := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		return state, output.String()
	}

	var metricsURL string
	select {
	case metricsURL = <-urlCh:
	case <-readDone:
		_ = cmd.Wait()
		_, out := snapshot()
		t.Fatalf("run ended before printing its live metrics URL:\n%s%s", out, stderr.String())
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var sawOn, sawOff bool
poll:
	for {
		select {
		case <-readDone:
			break poll
		case <-tick.C:
		}
		before, _ := snapshot()
		v, ok := faultActive(hc, metricsURL, "slow-chunks")
		after, _ := snapshot()
		if !ok {
			continue
		}
		switch {
		case before == "injected" && after == "injected" && v == 1:
			sawOn = true
		case before == "reverted" && v == 0:
			sawOff = true
		case before == "reverted" && after == "reverted" && v != 0:
			t.Errorf("llmchaos_fault_active{fault=\"slow-chunks\"} = %v after the revert was printed, want 0", v)
		}
	}
	err = cmd.Wait()
	_, out := snapshot()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("exit code %d, want %d:\n%s%s", ee.ExitCode(), exitcode.OK, out, stderr.String())
	} else if err != nil {
		t.Fatal(err)
	}
	if !sawOn || !sawOff {
		t.Errorf("llmchaos_fault_active{fault=\"slow-chunks\"}: seen 1 during the fault %v, 0 after it %v; want both\n%s", sawOn, sawOff, out)
	}

	doc, err := report.Read(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatalf("run.json: %v\n%s", err, out)
	}
	names := map[string]int{}
	for _, s := range doc.Server {
		names[s.Name] += len(s.Points)
	}
	for _, want := range []string{"vllm:num_requests_running", "vllm:kv_cache_usage_perc"} {
		if names[want] < 3 {
			t.Errorf("run.json server series %s: %d points, want at least 3 over 5 s at 500ms; series: %v", want, names[want], names)
		}
	}
}

func TestRunObserveFlagErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "observed.yaml")
	if err := os.WriteFile(file, []byte(observedExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"remote write not a URL", []string{"--remote-write", "ftp://x"}, "--remote-write ftp://x: want the receiver's URL"},
		{"remote write password kept out", []string{"--remote-write", "ftp://u:secret@x"}, "--remote-write ftp://u:xxxxx@x"},
		{"scrape off and an interval", []string{"--no-scrape", "--scrape-interval", "1s"}, "--no-scrape and --scrape-interval are both set"},
		{"bad listen address", []string{"--metrics-listen", "nowhere"}, "--metrics-listen"},
		{"bad otlp endpoint", []string{"--otlp-endpoint", "::"}, "--otlp-endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"run", file, "--dry-run"}, tt.args...), &out, &errb)
			if code != exitcode.Usage {
				t.Fatalf("exit code: got %d, want %d (stderr %q)", code, exitcode.Usage, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr: got %q, want it to contain %q", errb.String(), tt.want)
			}
			if strings.Contains(errb.String(), "secret") {
				t.Errorf("stderr shows a password: %q", errb.String())
			}
		})
	}
}
