package script

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// countingServer answers every request with status and counts them.
func countingServer(t *testing.T, status int) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"no"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &n
}

// TestInspectSendsNothing: Inspect resolves the scenarios (with the
// environment and overrides), the thresholds and the llm.Client objects of
// the init code without sending a request.
func TestInspectSendsNothing(t *testing.T) {
	t.Parallel()
	url, n := countingServer(t, http.StatusOK)
	plan, err := Inspect(context.Background(), Config{
		Script:     filepath.Join(examples(t), "chat-arrival-rate.js"),
		Env:        map[string]string{"BASE_URL": url, "MODEL": "m", "RATE": "7", "DURATION": "4s"},
		Thresholds: []string{"tokens_per_second: p(90)>1", "ttft: p(50)<1s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 0 {
		t.Errorf("Inspect sent %d requests, want none", got)
	}
	sc, ok := plan.Scenarios["chat"]
	if !ok || sc.Executor != "constant-arrival-rate" || sc.Rate != 7 || sc.Duration.D() != 4*time.Second {
		t.Errorf("scenario chat = %+v, want constant-arrival-rate at 7 for 4s", sc)
	}
	if l, known := plan.Length(); l != 4*time.Second || !known {
		t.Errorf("Length() = %v, %v; want 4s, true", l, known)
	}
	if len(plan.Clients) != 1 || plan.Clients[0].BaseURL != url || plan.Clients[0].Model != "m" || plan.Clients[0].API != "chat" {
		t.Errorf("Clients = %+v, want the one client of the init code", plan.Clients)
	}
	var keys []string
	for _, th := range plan.Thresholds {
		keys = append(keys, th.String())
	}
	for _, want := range []string{"tokens_per_second: avg>1", "tokens_per_second: p(90)>1", "ttft: p(50)<1s"} {
		if !strings.Contains(strings.Join(keys, "\n"), want) {
			t.Errorf("thresholds %q lack %q", keys, want)
		}
	}
	var b strings.Builder
	if err := plan.Describe(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chat: constant-arrival-rate", "rate 7 per 1s", "duration 4s", "tokens_per_second (trend)", url} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Describe lacks %q:\n%s", want, b.String())
		}
	}

	_, err = Inspect(context.Background(), Config{Script: filepath.Join(examples(t), "chat-arrival-rate.js"), Thresholds: []string{"tokens_per_sec: avg>1"}})
	if te, ok := errors.AsType[*ThresholdError](err); !ok || !strings.Contains(te.Error(), "tokens_per_sec") {
		t.Errorf("an unknown metric in Config.Thresholds: got %v, want a *ThresholdError naming it", err)
	}
}

// TestRateOverride: a rate replaces the scenarios by a constant arrival
// rate for the duration, fractional rates included.
func TestRateOverride(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a 2 s load")
	}
	url, model := startSim(t)
	doc, err := Run(context.Background(), Config{
		Script:    filepath.Join(examples(t), "chat-arrival-rate.js"),
		Env:       map[string]string{"BASE_URL": url, "MODEL": model},
		Overrides: Overrides{Rate: 2.5, Duration: 2 * time.Second, VUs: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Summary().Counts(recording.TagFilter{}).OK; got != 5 {
		t.Errorf("2.5/s for 2 s: got %d ok requests, want 5", got)
	}
	if _, err := Inspect(context.Background(), Config{Script: filepath.Join(examples(t), "iteration-error.js"), Overrides: Overrides{Rate: 2}}); err == nil || !strings.Contains(err.Error(), "needs a duration") {
		t.Errorf("a rate without a duration: got %v, want an error saying it needs one", err)
	}
}

// TestLiveAbortOnFail: an abortOnFail threshold stops the run as soon as
// a live check sees it fail, with the stop condition in the report:
// on a custom metric (checks, judged over the run so far) and on an LLM
// metric (error_rate, over the live window).
func TestLiveAbortOnFail(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs loads of a few seconds")
	}
	url, _ := countingServer(t, http.StatusInternalServerError)
	for _, tt := range []struct{ script, metric string }{
		{"abort-on-checks.js", "checks"},
		{"abort-on-errors.js", "error_rate"},
	} {
		t.Run(tt.script, func(t *testing.T) {
			var obs *observe.Observers
			start := time.Now()
			doc, err := Run(context.Background(), Config{
				Script: filepath.Join("testdata", tt.script), Env: map[string]string{"BASE_URL": url},
				Observe: func([]js.ClientInfo) *observe.Options {
					return &observe.Options{MetricsListen: "127.0.0.1:0"}
				},
				Alongside: func(r *pipeline.Run) func(engine.RunStats, error) {
					obs = r.Observers
					return nil
				},
			})
			if obs != nil {
				t.Cleanup(func() { _ = obs.Close(context.Background()) })
			}
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the run took %v: it was not stopped (it is scheduled for 60 s)", took)
			}
			if doc.Verdict != report.VerdictAborted || doc.Abort == nil || doc.Abort.Cause != report.AbortStopCondition ||
				!strings.HasPrefix(doc.Abort.Name, tt.metric) {
				t.Errorf("verdict %s, abort %+v; want aborted by a stop condition on %s", doc.Verdict, doc.Abort, tt.metric)
			}
			// The live check's verdict reaches the live outputs before the
			// final evaluation does.
			if got := scrapeValue(t, obs, "llmchaos_threshold_ok", `metric="`+tt.metric+`"`); got != 0 {
				t.Errorf("llmchaos_threshold_ok{metric=%q} after the live check: %v, want 0", tt.metric, got)
			}
		})
	}
}

// TestAlongsideAndObservers: what runs alongside a script sees its clock,
// recorder and live observers before any request, and is stopped once
// the last iteration ended with the count of LLM requests; the Tagger tags
// every result and sample before the recorder sees it; the observers are
// fed every result and custom sample, scrape the clients' servers, and
// their server series go into the report; the pre-flight hook sees the
// init code's clients before any request.
func TestAlongsideAndObservers(t *testing.T) {
	t.Parallel()
	url, model := startSim(t)
	var (
		preflightClients, observeClients []js.ClientInfo
		seen                             *pipeline.Run
		stats                            engine.RunStats
		stopErr                          error
		stopped                          int
		scrapedBefore                    bool
	)
	doc, err := Run(context.Background(), Config{
		Script: filepath.Join("testdata", "tagged.js"), Env: map[string]string{"BASE_URL": url, "MODEL": model},
		Preflight: func(_ context.Context, cs []js.ClientInfo, _ func(string)) error {
			preflightClients = cs
			return nil
		},
		Tagger: func(_ time.Duration, tags *recording.Tags) { tags.Phase = "fault" },
		Observe: func(cs []js.ClientInfo) *observe.Options {
			observeClients = cs
			return &observe.Options{MetricsListen: "127.0.0.1:0", ScrapeTargets: []string{cs[0].BaseURL}}
		},
		Alongside: func(r *pipeline.Run) func(engine.RunStats, error) {
			seen = r
			if r.Observers != nil {
				// The server series of the report need the monitor's
				// first scrape, which it starts at once.
				scrapedBefore = waitScraped(r.Observers)
			}
			return func(s engine.RunStats, err error) {
				stats, stopErr = s, err
				stopped++
			}
		},
	})
	if seen != nil && seen.Observers != nil {
		t.Cleanup(func() { _ = seen.Observers.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(preflightClients) != 1 || preflightClients[0].BaseURL != url {
		t.Errorf("Preflight saw %+v, want the one client of the init code", preflightClients)
	}
	if len(observeClients) != 1 || observeClients[0].BaseURL != url {
		t.Errorf("Observe saw %+v, want the one client of the init code", observeClients)
	}
	if seen == nil || seen.Recorder == nil || seen.Clock == nil || seen.Observers == nil || seen.Stop == nil {
		t.Fatalf("Alongside got %+v, want the run's clock, recorder, observers and stop", seen)
	}
	if stopped != 1 || stopErr != nil || stats.Scheduled != 6 || stats.Interrupted {
		t.Errorf("stop called %d times with %+v, %v; want once with 6 scheduled, not interrupted, no error", stopped, stats, stopErr)
	}
	sum := doc.Summary()
	if c := sum.Counts(recording.TagFilter{Phase: "fault"}); c.OK != 6 {
		t.Errorf("results tagged phase fault: %d ok, want 6", c.OK)
	}
	if s := sum.Custom("turns", recording.TagFilter{Phase: "fault"}); s == nil || s.Sum != 6 {
		t.Errorf("turns tagged phase fault: %+v, want a sum of 6", s)
	}
	if got := scrapeValue(t, seen.Observers, "llmchaos_turns_total", `phase="fault"`); got != 6 {
		t.Errorf("llmchaos_turns_total{phase=\"fault\"} on the live endpoint: %v, want 6", got)
	}
	if got := scrapeValue(t, seen.Observers, "llmchaos_requests_total", `phase="fault"`); got != 6 {
		t.Errorf("llmchaos_requests_total{phase=\"fault\"} on the live endpoint: %v, want 6", got)
	}
	if !scrapedBefore {
		t.Fatal("the server monitor never scraped the simulator")
	}
	if len(doc.Server) == 0 {
		t.Error("the report has no server series, though the monitor scraped the simulator")
	}

	// An error of Preflight, or live outputs that cannot start, end the
	// run before any request.
	srvURL, n := countingServer(t, http.StatusOK)
	stop := errors.New("refused")
	for name, cfg := range map[string]Config{
		"preflight": {Preflight: func(context.Context, []js.ClientInfo, func(string)) error { return stop }},
		"observe": {Observe: func([]js.ClientInfo) *observe.Options {
			return &observe.Options{MetricsListen: "127.0.0.1:0", RemoteWriteURL: "::not a url"}
		}},
	} {
		cfg.Script, cfg.Env = filepath.Join("testdata", "tagged.js"), map[string]string{"BASE_URL": srvURL, "MODEL": "m"}
		cfg.Alongside = func(*pipeline.Run) func(engine.RunStats, error) {
			t.Errorf("%s: Alongside started for a run that failed before its load", name)
			return nil
		}
		_, err := Run(context.Background(), cfg)
		if name == "preflight" && !errors.Is(err, stop) || name == "observe" && (err == nil || !strings.Contains(err.Error(), "live outputs")) {
			t.Errorf("%s: got %v, want its error", name, err)
		}
	}
	if got := n.Load(); got != 0 {
		t.Errorf("%d requests were sent after a refusal, want none", got)
	}
}

// waitScraped waits, for at most a minute, until obs's server monitor has
// samples, and says whether it has.
func waitScraped(obs *observe.Observers) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(obs.Samples()) == 0 {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// scrapeValue reads obs's live /metrics and returns the sum of the series
// name whose labels include label (-1: none).
func scrapeValue(t *testing.T, obs *observe.Observers, name, label string) float64 {
	t.Helper()
	if obs == nil {
		t.Fatal("no live observers")
	}
	resp, err := http.Get(obs.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for line := range strings.SplitSeq(string(body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, name+"{") || !strings.Contains(series, label) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return -1
	}
	return sum
}

// TestInspectKnowsWhenRampingScenariosEnd: a scenario with stages ends
// when they do, which an experiment plans its faults on; the rate and
// duration overrides replace the stages.
func TestInspectKnowsWhenRampingScenariosEnd(t *testing.T) {
	t.Parallel()
	url, n := countingServer(t, http.StatusOK)
	for _, tt := range []struct {
		script    string
		env       map[string]string
		overrides Overrides
		want      time.Duration
		executor  string
		describe  string
	}{
		{"ramping-vus.js", map[string]string{"STAGE": "2s"}, Overrides{}, 6 * time.Second, "ramping-vus", "stages [2s→10, 2s→10, 2s→0] (6s)"},
		{"ramping-arrival-rate.js", map[string]string{"STAGE": "1500ms"}, Overrides{}, 3 * time.Second, "ramping-arrival-rate", "stages [1.5s→30, 1.5s→30] (3s)"},
		{"ramping-vus.js", map[string]string{"STAGE": "2s"}, Overrides{Duration: 4 * time.Second}, 4 * time.Second, "constant-vus", "duration 4s"},
		{"ramping-vus.js", map[string]string{"STAGE": "2s"}, Overrides{Rate: 3, Duration: 5 * time.Second}, 5 * time.Second, "constant-arrival-rate", "rate 3 per 1s"},
	} {
		env := map[string]string{"BASE_URL": url, "MODEL": "m"}
		for k, v := range tt.env {
			env[k] = v
		}
		plan, err := Inspect(context.Background(), Config{Script: filepath.Join(examples(t), tt.script), Env: env, Overrides: tt.overrides})
		if err != nil {
			t.Fatalf("%s %+v: %v", tt.script, tt.overrides, err)
		}
		if l, known := plan.Length(); l != tt.want || !known {
			t.Errorf("%s %+v: Length() = %v, %v; want %v, true", tt.script, tt.overrides, l, known, tt.want)
		}
		if len(plan.Names) != 1 || plan.Scenarios[plan.Names[0]].Executor != tt.executor {
			t.Errorf("%s %+v: scenarios %+v, want one %s", tt.script, tt.overrides, plan.Scenarios, tt.executor)
		}
		var b strings.Builder
		if err := plan.Describe(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.describe) {
			t.Errorf("%s %+v: Describe lacks %q:\n%s", tt.script, tt.overrides, tt.describe, b.String())
		}
	}
	if got := n.Load(); got != 0 {
		t.Errorf("Inspect sent %d requests, want none", got)
	}
}

// TestTaggerKeepsScenarios: the Tagger tags every result and sample (an
// experiment's phase) and the scenario tag stays on them, LLM results,
// k6/http requests and the script's own metrics alike (the live endpoint,
// which has no scenario label, sees the phase).
func TestTaggerKeepsScenarios(t *testing.T) {
	t.Parallel()
	url, model := startSim(t)
	tools, n := countingServer(t, http.StatusOK)
	script := writeScript(t, `import http from 'k6/http';
import llm from 'k6/x/llm';
import { Counter } from 'k6/metrics';
const turns = new Counter('turns');
const client = new llm.Client({ baseURL: __ENV.BASE_URL, model: __ENV.MODEL });
export const options = { scenarios: {
  a: { executor: 'per-vu-iterations', vus: 1, iterations: 2 },
  b: { executor: 'shared-iterations', vus: 2, iterations: 3, tags: { class: 'b-class' } },
} };
export default function () {
  client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  http.get(__ENV.TOOL_URL + '/models');
  turns.add(1);
}
`)
	var obs *observe.Observers
	doc, err := Run(context.Background(), Config{
		Script: script, Env: map[string]string{"BASE_URL": url, "MODEL": model, "TOOL_URL": tools},
		Tagger: func(_ time.Duration, tags *recording.Tags) { tags.Phase = "fault" },
		Observe: func([]js.ClientInfo) *observe.Options {
			return &observe.Options{MetricsListen: "127.0.0.1:0"}
		},
		Alongside: func(r *pipeline.Run) func(engine.RunStats, error) {
			obs = r.Observers
			return nil
		},
	})
	if obs != nil {
		t.Cleanup(func() { _ = obs.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 5 {
		t.Errorf("the tool server got %d requests, want 5", n.Load())
	}
	sum := doc.Summary()
	for _, sc := range []struct {
		name  string
		class string
		want  int64
	}{{"a", "", 2}, {"b", "b-class", 3}} {
		f := recording.TagFilter{Phase: "fault", Scenario: sc.name, Class: sc.class}
		if c := sum.Counts(f); c.OK != sc.want {
			t.Errorf("LLM results %+v: %d ok, want %d", f, c.OK, sc.want)
		}
		for _, m := range []string{"turns", js.MetricHTTPReqs, js.MetricIterations} {
			if got := custom(doc, m, f).Sum; got != float64(sc.want) {
				t.Errorf("%s %+v: got %v, want %d", m, f, got, sc.want)
			}
		}
	}
	if got := scrapeValue(t, obs, "llmchaos_turns_total", `phase="fault"`); got != 5 {
		t.Errorf(`llmchaos_turns_total{phase="fault"} on the live endpoint: %v, want 5`, got)
	}
}

// TestAbortInSetupEndsWhatRunsAlongside: exec.test.abort() in setup() ends
// the run as aborted with its report, and what Alongside started is
// stopped before the report is built; an abort in the init code ends it
// before Alongside.
func TestAbortInSetupEndsWhatRunsAlongside(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, script string
		attached     bool
	}{
		{"setup", "import exec from 'k6/execution';\nexport function setup() { exec.test.abort('no target'); }\nexport default function () {}\n", true},
		{"init", "import exec from 'k6/execution';\nexec.test.abort('no target');\nexport default function () {}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var attached, ended, preflight bool
			var out strings.Builder
			doc, err := Run(context.Background(), Config{
				Script: writeScript(t, tt.script), Stdout: &out,
				Preflight: func(context.Context, []js.ClientInfo, func(string)) error { preflight = true; return nil },
				Alongside: func(r *pipeline.Run) func(engine.RunStats, error) {
					attached = true
					return func(engine.RunStats, error) { ended = r.Recorder != nil }
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if doc.Verdict != report.VerdictAborted || doc.Abort == nil || doc.Abort.Cause != report.AbortScript || doc.Abort.Detail != "no target" {
				t.Fatalf("got verdict %s, abort %+v; want aborted by the script", doc.Verdict, doc.Abort)
			}
			if attached != tt.attached || preflight != tt.attached || ended != tt.attached {
				t.Errorf("preflight %v, attached %v, ended %v; want all %v", preflight, attached, ended, tt.attached)
			}
			if !strings.Contains(out.String(), "ABORTED") {
				t.Errorf("the summary does not say the run was aborted:\n%s", out.String())
			}
		})
	}
}
