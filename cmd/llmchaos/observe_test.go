package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

func TestParseOuts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want outputs
		errs []string // fragments, one per error expected
	}{
		{"none", nil, outputs{}, nil},
		{"a bare path is the JSON report", []string{"run.json"}, outputs{JSON: "run.json"}, nil},
		{"json kind", []string{"json=out/run.json"}, outputs{JSON: "out/run.json"}, nil},
		{"both kinds", []string{"prometheus-rw=http://127.0.0.1:9090/api/v1/write", "run.json"},
			outputs{JSON: "run.json", RemoteWrite: "http://127.0.0.1:9090/api/v1/write"}, nil},
		{"an = in a path stays a path", []string{"rate=5.json"}, outputs{JSON: "rate=5.json"}, nil},
		{"unknown kind with a URL", []string{"influxdb=http://127.0.0.1:8086"}, outputs{}, []string{`unknown output kind "influxdb"`}},
		{"bad receiver URL", []string{"prometheus-rw=127.0.0.1:9090"}, outputs{}, []string{"want the receiver's URL"}},
		{"password not repeated", []string{"prometheus-rw=ftp://u:pw-secret@h/x"}, outputs{}, []string{"want the receiver's URL"}},
		{"two JSON reports", []string{"a.json", "json=b.json"}, outputs{JSON: "a.json"}, []string{"already written to a.json"}},
		{"two receivers", []string{"prometheus-rw=http://a/w", "prometheus-rw=http://b/w"}, outputs{RemoteWrite: "http://a/w"}, []string{"already goes to http://a/w"}},
		{"empty JSON path", []string{"json="}, outputs{}, []string{"path is empty"}},
		{"- is stdout", []string{"-"}, outputs{JSON: "-"}, nil},
		{"a report format", []string{"vllm=result.json", "run.json"}, outputs{JSON: "run.json",
			Reports: []report.Output{{Format: "vllm", Path: "result.json", Flag: "--out vllm"}}}, nil},
		{"a report format to stdout", []string{"vllm=-"}, outputs{Reports: []report.Output{{Format: "vllm", Path: "-", Flag: "--out vllm"}}}, nil},
		{"two of a format", []string{"vllm=a.json", "vllm=b.json"}, outputs{Reports: []report.Output{{Format: "vllm", Path: "a.json", Flag: "--out vllm"}}},
			[]string{"a vllm report is already asked for"}},
		{"empty format path", []string{"junit="}, outputs{}, []string{"the junit report's path is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseOuts(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseOuts(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if len(errs) != len(tt.errs) {
				t.Fatalf("parseOuts(%q) errors = %v, want %d", tt.in, errs, len(tt.errs))
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tt.errs[i]) || strings.Contains(e.Error(), "pw-secret") {
					t.Errorf("error %q, want it to say %q (and no password)", e, tt.errs[i])
				}
			}
		})
	}
}

func TestObserveFlagErrors(t *testing.T) {
	t.Parallel()
	base := []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s", "--workload", "chat"}
	missing := filepath.Join(t.TempDir(), "no", "r.html")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"every problem at once", []string{"--metrics-listen", "a:b:c", "--otlp-endpoint", "localhost:4318", "--scrape-interval", "0s",
			"--out", "prometheus-rw=nohost", "--html", missing},
			[]string{"--metrics-listen", "--otlp-endpoint", "--scrape-interval 0s must be positive", "--out prometheus-rw=nohost", "--html"}},
		{"monitor off and an interval", []string{"--no-scrape", "--scrape-interval", "1s"}, []string{"--no-scrape and --scrape-interval"}},
		{"empty listen address", []string{"--metrics-listen", ""}, []string{"--metrics-listen is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, append(slices.Clone(base), tt.args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errs)
				}
			}
		})
	}
}

// scrapeMetrics fetches and parses a text metrics page.
func scrapeMetrics(u string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// okRequests and ttftCount read the two series a live view watches move.
func okRequests(mfs map[string]*dto.MetricFamily) float64 {
	var v float64
	for _, m := range mfs["llmchaos_requests_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "outcome" && lp.GetValue() == "ok" {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

func ttftCount(mfs map[string]*dto.MetricFamily) uint64 {
	ms := mfs["llmchaos_ttft_seconds"].GetMetric()
	if len(ms) == 0 {
		return 0
	}
	return ms[0].GetHistogram().GetSampleCount()
}

// TestLoadLiveMetrics runs a load with --metrics-listen :0 and scrapes the
// printed endpoint while the load runs: requests and TTFT observations
// grow from one scrape to the next, and the endpoint is gone when the
// command has ended.
func TestLoadLiveMetrics(t *testing.T) {
	t.Parallel()
	simURL := loadSim(t, 5*time.Millisecond, 20*time.Millisecond, "")
	s := startCmd(t, loadArgs(simURL, "--rate", "25", "--duration", "2s", "--metrics-listen", ":0", "--progress", "0")...)
	m := waitOutput(t, s.out, regexp.MustCompile(`llmchaos load: live metrics at (http://127\.0\.0\.1:\d+/metrics)\n`), s.done)
	u := m[1]

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	type reading struct {
		ok   float64
		ttft uint64
	}
	var seen []reading // readings where both had grown since the previous one
	var last reading
	for len(seen) < 2 {
		select {
		case code := <-s.done:
			s.done <- code
			t.Fatalf("the load ended (exit %d) before its metrics were seen to move twice: %+v; stderr:\n%s", code, seen, s.err)
		case <-tick.C:
		}
		mfs, err := scrapeMetrics(u)
		if err != nil {
			t.Fatalf("scrape %s during the run: %v", u, err)
		}
		for _, name := range []string{"llmchaos_in_flight", "llmchaos_itl_seconds", "llmchaos_e2e_seconds", "llmchaos_tpot_seconds", "llmchaos_output_tokens_total"} {
			if mfs[name] == nil {
				t.Errorf("%s is not served", name)
			}
		}
		r := reading{okRequests(mfs), ttftCount(mfs)}
		if r.ok > last.ok && r.ttft > last.ttft {
			seen = append(seen, r)
		}
		last = r
	}
	var code int
	select {
	case code = <-s.done:
		s.done <- code
	case <-time.After(20 * time.Second):
		t.Fatal("the load did not end")
	}
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, s.err)
	}
	if resp, err := http.Get(u); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers after the load ended", u)
	}
}

// apiWithoutMetrics serves a minimal OpenAI-compatible streaming chat API
// (four content chunks, usage, [DONE]) and nothing else: a target without
// /metrics, as a gateway in front of a model server is. (A reverse proxy
// in front of the simulator would do too, were it not that Go's
// ReverseProxy loses about one stream in twenty of the simulator's
// hijacked connections: "use of closed network connection".)
func apiWithoutMetrics(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		event := func(data string) {
			fmt.Fprintf(w, "data: %s\n\n", data)
			flusher.Flush()
		}
		const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llmchaos-sim","choices":[`
		event(head + `{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`)
		for i := range 4 {
			finish := "null"
			if i == 3 {
				finish = `"length"`
			}
			event(head + `{"index":0,"delta":{"content":"tok "},"finish_reason":` + finish + `}]}`)
		}
		event(head + `],"usage":{"prompt_tokens":16,"completion_tokens":4,"total_tokens":20}}`)
		event("[DONE]")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestLoadHTMLWithServerSeries: the monitor scrapes the simulator during
// the load, the JSON report carries the server series under vLLM's names,
// and --html draws them beside the latency plots. It runs serially: its
// scrapes every 200 ms must answer within the interval, which tests beside
// it on a loaded machine made them miss (a warning, a failure).
func TestLoadHTMLWithServerSeries(t *testing.T) {
	simURL := loadSim(t, 5*time.Millisecond, 20*time.Millisecond, "")
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	code, stdout, stderr := run(t, loadArgs(simURL, "--rate", "20", "--duration", "1500ms", "--scrape-interval", "200ms",
		"--out", "json="+jsonPath, "--html", htmlPath, "--progress", "0")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("warnings for a target that serves /metrics:\n%s", stderr)
	}
	d, err := report.Read(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]report.SeriesRecord{}
	for _, s := range d.Server {
		got[s.Name] = s
		if s.Endpoint != "" {
			t.Errorf("%s: endpoint %q, want none with one target", s.Name, s.Endpoint)
		}
		if last := s.Points[len(s.Points)-1][0]; last > d.DurationS {
			t.Errorf("%s has a point at %v s, after the run's end at %v s", s.Name, last, d.DurationS)
		}
	}
	for _, name := range []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:num_preemptions_total"} {
		// 1.5 s at 200 ms: about 8 scrapes; a loaded machine may delay some.
		if s, ok := got[name]; !ok || len(s.Points) < 4 {
			t.Errorf("server series %s = %+v, want at least 4 points", name, s)
		}
	}
	if _, ok := got["up"]; ok {
		t.Error("an up series, though every scrape succeeded")
	}
	if got["vllm:kv_cache_usage_perc"].Unit != "ratio" {
		t.Errorf("kv cache usage unit %q, want ratio", got["vllm:kv_cache_usage_perc"].Unit)
	}
	if d.Config["server_monitor"] != true || d.Config["scrape_interval"] != "200ms" {
		t.Errorf("config server_monitor %v, scrape_interval %v", d.Config["server_monitor"], d.Config["scrape_interval"])
	}

	page := string(readFile(t, htmlPath))
	for _, want := range []string{`id="plot-ttft"`, `id="plot-server-kv`, "Server KV cache usage", "Server requests running and waiting", "<svg", "verdict"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report has no %q", want)
		}
	}
}

// TestLoadTargetWithoutMetrics: a target without /metrics gets one
// warning, however often its scrape fails, and the run goes on; its up
// series shows the failures. --no-scrape turns the monitor off.
func TestLoadTargetWithoutMetrics(t *testing.T) {
	t.Parallel()
	target := apiWithoutMetrics(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name     string
		args     []string
		warnings int
	}{
		{"monitor on", []string{"--scrape-interval", "100ms"}, 1},
		{"monitor off", []string{"--no-scrape"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			args := append(loadArgs(target, "--rate", "20", "--duration", "1s", "--out", out, "--progress", "0"), tt.args...)
			code, stdout, stderr := run(t, args...)
			if code != exitcode.OK {
				t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
			}
			if got := strings.Count(stderr, "warning: server monitor"); got != tt.warnings {
				t.Errorf("%d server monitor warnings, want %d:\n%s", got, tt.warnings, stderr)
			}
			if tt.warnings > 0 && !strings.Contains(stderr, "HTTP 404") {
				t.Errorf("the warning does not say why:\n%s", stderr)
			}
			d, err := report.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if d.Requests.OK != 20 {
				t.Errorf("requests %+v, want 20 ok: the run goes on", d.Requests)
			}
			switch {
			case tt.warnings == 0 && len(d.Server) != 0:
				t.Errorf("server series %+v with the monitor off", d.Server)
			case tt.warnings > 0:
				if len(d.Server) != 1 || d.Server[0].Name != "up" || len(d.Server[0].Points) < 3 {
					t.Fatalf("server series %+v, want one up series of several points", d.Server)
				}
				for _, p := range d.Server[0].Points {
					if p[1] != 0 {
						t.Errorf("up = %v at %v s, want 0 for a target without /metrics", p[1], p[0])
					}
				}
			}
		})
	}
}

// otlpCollector is an in-test OTLP/HTTP receiver.
type otlpCollector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("path %s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		c.resource = rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestLoadOTLPSpans: --otlp-endpoint exports one llm.request span per
// request, all of them by the time the command ends.
func TestLoadOTLPSpans(t *testing.T) {
	t.Parallel()
	simURL := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	const n = 12
	code, stdout, stderr := run(t, loadArgs(simURL, "--rate", "40", "--requests", fmt.Sprint(n), "--otlp-endpoint", srv.URL, "--progress", "0", "--no-scrape")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != n {
		t.Fatalf("%d spans at the collector, want one per request, %d", len(col.spans), n)
	}
	ids := map[string]bool{}
	for _, s := range col.spans {
		attrs := map[string]string{}
		for _, kv := range s.GetAttributes() {
			attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		if s.GetName() != "llm.request" || attrs["llmchaos.outcome"] != "ok" || len(s.GetEvents()) != 2 {
			t.Errorf("span %q, outcome %q, %d events: want llm.request, ok, first_token and end", s.GetName(), attrs["llmchaos.outcome"], len(s.GetEvents()))
		}
		ids[attrs["llmchaos.request_id"]] = true
	}
	if len(ids) != n || ids[""] {
		t.Errorf("%d distinct request ids over %d spans, want %d", len(ids), len(col.spans), n)
	}
	var seed string
	for _, kv := range col.resource {
		if kv.GetKey() == "llmchaos.seed" {
			seed = kv.GetValue().GetStringValue()
		}
	}
	if seed != "3" {
		t.Errorf("resource llmchaos.seed = %q, want the run's seed 3", seed)
	}
}

// rwReceiver is an in-test Prometheus remote write (v1) receiver: it
// decodes each push (snappy, then the WriteRequest protobuf) and keeps the
// last one as "name{label=value,...}" → value.
type rwReceiver struct {
	mu     sync.Mutex
	pushes int
	last   map[string]float64
	errs   []error
}

func (c *rwReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err == nil && (r.Header.Get("Content-Encoding") != "snappy" || r.Header.Get("X-Prometheus-Remote-Write-Version") != "0.1.0") {
		err = fmt.Errorf("headers %v", r.Header)
	}
	var series map[string]float64
	if err == nil {
		var pb []byte
		if pb, err = snappy.Decode(nil, raw); err == nil {
			series, err = decodeWriteRequest(pb)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs = append(c.errs, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.pushes++
	c.last = series
	w.WriteHeader(http.StatusNoContent)
}

// decodeWriteRequest reads a remote write v1 WriteRequest: repeated
// TimeSeries (1) of Labels (1: name 1, value 2) and Samples (2: value 1
// double, timestamp 2).
func decodeWriteRequest(b []byte) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachField(b, func(num protowire.Number, ts []byte) error {
		if num != 1 {
			return nil
		}
		var name string
		var labels []string
		var value float64
		err := eachField(ts, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				var k, val string
				if err := eachField(v, func(num protowire.Number, s []byte) error {
					if num == 1 {
						k = string(s)
					} else {
						val = string(s)
					}
					return nil
				}); err != nil {
					return err
				}
				if k == "__name__" {
					name = val
				} else {
					labels = append(labels, k+"="+val)
				}
			case 2:
				if len(v) < 9 || v[0] != 0x09 { // field 1, fixed64
					return fmt.Errorf("sample %x", v)
				}
				bits, _ := protowire.ConsumeFixed64(v[1:])
				value = math.Float64frombits(bits)
			}
			return nil
		})
		if err != nil {
			return err
		}
		sort.Strings(labels)
		out[name+"{"+strings.Join(labels, ",")+"}"] = value
		return nil
	})
	return out, err
}

// eachField calls f with each length-delimited field of b; fields of
// other wire types are skipped.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := f(num, v); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// TestLoadRemoteWrite: --out prometheus-rw=URL pushes the live series, and
// the last push, made as the command ends, carries every request and the
// thresholds' verdicts. The same Observers are tested against a real
// Prometheus in telemetry/observe, which can reach the Prometheus test
// helper (an internal package of telemetry/).
func TestLoadRemoteWrite(t *testing.T) {
	t.Parallel()
	simURL := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	recv := &rwReceiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, stdout, stderr := run(t, loadArgs(simURL, "--rate", "40", "--requests", "10", "--progress", "0", "--no-scrape",
		"--out", "prometheus-rw="+srv.URL+"/api/v1/write", "--out", jsonPath,
		"--threshold", "ttft: p(99)<10s", "--threshold", "e2e: max<1ms")...)
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d (e2e: max<1ms fails); stderr:\n%s\nstdout:\n%s", code, exitcode.Thresholds, stderr, stdout)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("warnings:\n%s", stderr)
	}
	if _, err := os.Stat(jsonPath); err != nil {
		t.Errorf("the bare --out path is still the JSON report: %v", err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.errs) > 0 || recv.pushes < 2 {
		t.Fatalf("%d pushes, errors %v: want the first one and the last", recv.pushes, recv.errs)
	}
	for key, want := range map[string]float64{
		`llmchaos_requests_total{job=llmchaos,outcome=ok}`: 10,
		`llmchaos_ttft_seconds_count{job=llmchaos}`:        10,
		`llmchaos_in_flight{job=llmchaos}`:                 0,
		`llmchaos_threshold_ok{job=llmchaos,metric=ttft}`:  1,
		`llmchaos_threshold_ok{job=llmchaos,metric=e2e}`:   0,
	} {
		if got, ok := sumSeries(recv.last, key); !ok || got != want {
			t.Errorf("last push: %s = %v (present %v), want %v", key, got, ok, want)
		}
	}
}

// sumSeries adds up the series of last whose name is key's and whose labels
// include every label key names (`name{a=b,c=d}`), so that a check of a
// total holds whatever other labels (run, endpoint, phase) split it.
func sumSeries(last map[string]float64, key string) (float64, bool) {
	name, want, _ := strings.Cut(strings.TrimSuffix(key, "}"), "{")
	var sum float64
	found := false
	for k, v := range last {
		n, labels, _ := strings.Cut(strings.TrimSuffix(k, "}"), "{")
		if n != name {
			continue
		}
		have := strings.Split(labels, ",")
		all := true
		for _, l := range strings.Split(want, ",") {
			if l != "" && !slices.Contains(have, l) {
				all = false
				break
			}
		}
		if all {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// TestLoadLiveThresholdGauge: an abortOnFail threshold (runners and config
// files can set it) is published by the live check while the run goes on,
// not only at the end.
func TestLoadLiveThresholdGauge(t *testing.T) {
	t.Parallel()
	simURL := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	f := defaultLoadFlags()
	fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
	addLoadFlags(fs, &f)
	if err := fs.Parse(loadArgs(simURL, "--rate", "20", "--duration", "2s", "--metrics-listen", ":0", "--progress", "0", "--no-scrape")[1:]); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(fs)
	if err != nil {
		t.Fatal(err)
	}
	ths, err := assertions.Parse("ttft: p(99)<10s")
	if err != nil {
		t.Fatal(err)
	}
	ths[0].AbortOnFail = true
	cfg.Thresholds = ths
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- exitCode(runLoad(context.Background(), cfg, &stdout, &stderr)) }()
	u := waitOutput(t, &stdout, regexp.MustCompile(`live metrics at (\S+)\n`), done)[1]

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		mfs, err := scrapeMetrics(u)
		if err != nil {
			t.Fatalf("scrape during the run: %v", err)
		}
		if ms := mfs["llmchaos_threshold_ok"].GetMetric(); len(ms) == 1 && ms[0].GetGauge().GetValue() == 1 &&
			ms[0].GetLabel()[0].GetValue() == "ttft" {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before the live check published llmchaos_threshold_ok{metric=\"ttft\"}", code)
		case <-tick.C:
		}
	}
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Errorf("exit %d; stderr:\n%s", code, &stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
}
