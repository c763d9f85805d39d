package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// runLabel is the run label's form: the run's start in UTC.
var runLabel = regexp.MustCompile(`^\d{8}T\d{6}Z$`)

// liveScrapes scrapes metricsURL every 200 ms until it stops answering
// after done is closed (the command ended; --metrics-linger kept the
// endpoint up for one more scrape) and returns the last page read and
// whether a page with requests was read while the command still ran.
func liveScrapes(t *testing.T, metricsURL string, done <-chan struct{}) (last map[string]*dto.MetricFamily, duringRun bool) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	ended := false
	for {
		select {
		case <-done:
			ended = true
		case <-tick.C:
		case <-deadline:
			t.Fatal("the endpoint still answered 60 s after the start")
		}
		mfs, err := scrapeMetrics(metricsURL)
		if err != nil {
			select {
			case <-done:
				return last, duringRun
			default:
				continue
			}
		}
		last = mfs
		if !ended && sumOf(mfs, "llmchaos_requests_total", nil) > 0 {
			select {
			case <-done:
			default:
				duringRun = true
			}
		}
	}
}

// labelsOf returns a series' labels as a map.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// sumOf sums the values (a histogram's sample count) of name's series whose
// labels include want.
func sumOf(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var v float64
	for _, m := range mfs[name].GetMetric() {
		ls := labelsOf(m)
		match := true
		for k, w := range want {
			match = match && ls[k] == w
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v
}

// checkRunLabels checks that every llmchaos_* series carries the run label
// (one value), and experiment exactly when experiment is not "".
func checkRunLabels(t *testing.T, mfs map[string]*dto.MetricFamily, experiment string) {
	t.Helper()
	runs := map[string]bool{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "llmchaos_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			ls := labelsOf(m)
			runs[ls["run"]] = true
			if got, ok := ls["experiment"]; got != experiment || ok != (experiment != "") {
				t.Errorf("%s%v: experiment %q (set %v), want %q", name, ls, got, ok, experiment)
			}
		}
	}
	if len(runs) != 1 {
		t.Fatalf("run labels %v, want one", runs)
	}
	for r := range runs {
		if !runLabel.MatchString(r) {
			t.Errorf("run label %q, want the start time like 20060102T150405Z", r)
		}
	}
}

// TestLoadLiveSeriesLabels runs llmchaos load against two simulators, one
// answering every request with a 500, and scrapes --metrics-listen while
// it runs and once after (--metrics-linger): the series carry the run,
// the endpoint, the phase, the request class and the error class, and the
// scheduled, send lag, lost and threshold series add up.
func TestLoadLiveSeriesLabels(t *testing.T) {
	t.Parallel()
	const token = "admin-secret"
	good, bad := loadSim(t, 2*time.Millisecond, 5*time.Millisecond, token), loadSim(t, 2*time.Millisecond, 5*time.Millisecond, token)
	simAdmin(t, bad, token, "/admin/errors", `{"rate": 1, "kind": "500"}`)
	s := startCmd(t, loadArgs(good, "--target", bad, "--rate", "40", "--duration", "2s", "--class", "probe",
		"--metrics-listen", "127.0.0.1:0", "--no-preflight", "--no-scrape", "--threshold", "ttft: p(99)<10s")...)
	m := waitOutput(t, s.out, regexp.MustCompile(`live metrics at (http://127\.0\.0\.1:\d+/metrics)\n`), s.done)
	done := make(chan struct{})
	code := -1
	go func() { code = <-s.done; s.done <- code; close(done) }()
	mfs, duringRun := liveScrapes(t, m[1], done)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, s.err)
	}
	if !duringRun {
		t.Error("no scrape during the run saw requests")
	}
	checkRunLabels(t, mfs, "")

	for _, m := range mfs["llmchaos_requests_total"].GetMetric() {
		ls := labelsOf(m)
		if ls["endpoint"] != good && ls["endpoint"] != bad || ls["phase"] != "" || ls["class"] != "probe" {
			t.Errorf("llmchaos_requests_total%v: want endpoint %s or %s, phase \"\", class probe", ls, good, bad)
		}
	}
	ok := sumOf(mfs, "llmchaos_requests_total", map[string]string{"endpoint": good, "outcome": "ok", "error_class": ""})
	failed := sumOf(mfs, "llmchaos_requests_total", map[string]string{"endpoint": bad, "outcome": "failed", "error_class": "http_5xx"})
	all := sumOf(mfs, "llmchaos_requests_total", nil)
	if ok == 0 || failed == 0 || ok+failed != all {
		t.Errorf("requests: ok on %s %v, http_5xx on %s %v, all %v: want every request ok on the first and failed with error_class http_5xx on the second",
			good, ok, bad, failed, all)
	}
	if sched := sumOf(mfs, "llmchaos_requests_scheduled_total", nil); sched != all {
		t.Errorf("llmchaos_requests_scheduled_total %v, want %v (every scheduled request ended)", sched, all)
	}
	if sent := sumOf(mfs, "llmchaos_send_lag_seconds", map[string]string{"class": "probe"}); sent != all {
		t.Errorf("llmchaos_send_lag_seconds count %v, want %v (one per sent request)", sent, all)
	}
	if _, ok := mfs["llmchaos_requests_lost"]; !ok || sumOf(mfs, "llmchaos_requests_lost", nil) != 0 {
		t.Errorf("llmchaos_requests_lost: served %v, value %v; want 0", ok, sumOf(mfs, "llmchaos_requests_lost", nil))
	}
	if got := sumOf(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "ttft"}); got != 1 {
		t.Errorf("llmchaos_threshold_ok{metric=\"ttft\"} after the run: %v, want 1 (the threshold held)", got)
	}
}

// labelsExperiment is a short experiment whose fault makes every request
// fail with a 503 for a second.
const labelsExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: live-labels}
target:
  sim: {replicas: 1, startup_time: 200ms}
workload: {rate: 20, duration: 4s, input_tokens: 16, output_tokens: 4}
faults:
  - {name: unavailable, type: http.error, at: 1500ms, duration: 1s, params: {status: 503, probability: 1}}
recovery: {window: 500ms, hold: 500ms}
thresholds:
  requests_lost: ["count==0"]
`

// TestRunLiveSeriesLabels runs a short experiment with --metrics-listen
// and scrapes it until the endpoint goes: the series carry the
// experiment's name, the run, the endpoint and every phase, and the
// fault's 503s are error_class http_5xx in phase fault.
func TestRunLiveSeriesLabels(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "live-labels.yaml")
	if err := os.WriteFile(file, []byte(labelsExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", file, "--out", filepath.Join(dir, "run"), "--progress", "0",
		"--metrics-listen", "127.0.0.1:0", "--no-scrape")
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
	var output strings.Builder // written by the reader until readDone
	urlCh, readDone := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			output.WriteString(sc.Text() + "\n")
			if _, u, ok := strings.Cut(sc.Text(), "live metrics at "); ok {
				select {
				case urlCh <- strings.TrimSpace(u):
				default:
				}
			}
		}
	}()
	var metricsURL string
	select {
	case metricsURL = <-urlCh:
	case <-readDone:
		_ = cmd.Wait()
		t.Fatalf("run ended before printing its live metrics URL:\n%s%s", output.String(), stderr.String())
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		<-readDone
		waitErr = cmd.Wait()
		close(done)
	}()
	mfs, duringRun := liveScrapes(t, metricsURL, done)
	if ee, ok := errors.AsType[*exec.ExitError](waitErr); ok {
		t.Fatalf("exit code %d, want %d:\n%s%s", ee.ExitCode(), exitcode.OK, output.String(), stderr.String())
	} else if waitErr != nil {
		t.Fatal(waitErr)
	}
	if !duringRun {
		t.Error("no scrape during the run saw requests")
	}
	checkRunLabels(t, mfs, "live-labels")

	phases, endpoints := map[string]bool{}, map[string]bool{}
	for _, m := range mfs["llmchaos_requests_total"].GetMetric() {
		ls := labelsOf(m)
		phases[ls["phase"]] = true
		endpoints[ls["endpoint"]] = true
		if _, ok := ls["class"]; !ok {
			t.Errorf("llmchaos_requests_total%v has no class label", ls)
		}
	}
	for _, p := range []string{"baseline", "fault"} {
		if !phases[p] {
			t.Errorf("phases %v: no %s", phases, p)
		}
	}
	if !phases["recovery"] && !phases["after"] {
		t.Errorf("phases %v: neither recovery nor after", phases)
	}
	if len(endpoints) != 1 || endpoints[""] {
		t.Errorf("endpoints %v, want the one replica's URL", endpoints)
	}
	if got := sumOf(mfs, "llmchaos_requests_total", map[string]string{"phase": "fault", "outcome": "failed", "error_class": "http_5xx"}); got == 0 {
		t.Errorf("no request failed with error_class http_5xx in phase fault:\n%s", output.String())
	}
	if got := sumOf(mfs, "llmchaos_requests_total", map[string]string{"phase": "baseline", "outcome": "ok", "error_class": ""}); got == 0 {
		t.Errorf("no request ok in phase baseline")
	}
	if sched, all := sumOf(mfs, "llmchaos_requests_scheduled_total", nil), sumOf(mfs, "llmchaos_requests_total", nil); sched != all || all == 0 {
		t.Errorf("llmchaos_requests_scheduled_total %v, requests %v: want equal and more than 0", sched, all)
	}
	if got := sumOf(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "requests_lost"}); got != 1 {
		t.Errorf("llmchaos_threshold_ok{metric=\"requests_lost\"} after the run: %v, want 1", got)
	}
	if got := sumOf(mfs, "llmchaos_fault_active", map[string]string{"fault": "unavailable", "type": "http.error"}); got != 0 {
		t.Errorf("llmchaos_fault_active{fault=\"unavailable\"} after the run: %v, want 0", got)
	}
}
