package script

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// stallServer holds every stream it is asked for open until the client
// goes away, as an engine stuck mid-answer does:
//
//	/http                  a 100-byte answer cut after its first bytes
//	/sse                   one event, then nothing
//	/v1/chat/completions   the role and one content chunk, then nothing
//	/ready                 "yes" once a stream is held, else "no"
type stallServer struct {
	URL     string
	stalled chan struct{} // a stream is held
	closed  chan struct{} // a held stream's client went away
	held    atomic.Int64
}

func startStallServer(t *testing.T) *stallServer {
	t.Helper()
	s := &stallServer{stalled: make(chan struct{}, 64), closed: make(chan struct{}, 64)}
	hold := func(w http.ResponseWriter, r *http.Request, head func()) {
		head()
		w.(http.Flusher).Flush()
		s.held.Add(1)
		s.stalled <- struct{}{}
		<-r.Context().Done()
		s.closed <- struct{}{}
	}
	chunk := func(delta string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/http", func(w http.ResponseWriter, r *http.Request) {
		hold(w, r, func() {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "the first bytes")
		})
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		hold(w, r, func() {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: first\n\n")
		})
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		hold(w, r, func() {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, chunk(`{"role":"assistant","content":""}`)+chunk(`{"content":"Once"}`))
		})
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if s.held.Load() > 0 {
			fmt.Fprint(w, "yes")
			return
		}
		fmt.Fprint(w, "no")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// cutScript's `stall` scenario opens one stream of the kind WHAT names and
// records before it and after it; the stream never ends, so whatever is
// recorded after it was recorded after the cut. Its `watch` scenario, when
// the route needs one, waits until the stream is held and then counts
// ready_seen (an abortOnFail threshold's trigger) or calls
// exec.test.abort().
const cutScript = `
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import http from 'k6/http';
import sse from 'k6/x/sse';
import llm from 'k6/x/llm';
import exec from 'k6/execution';
const before = new Counter('before');
const after = new Counter('after');
const ready = new Counter('ready_seen');
const client = new llm.Client({ baseURL: __ENV.URL + '/v1', model: 'm' });
export const options = JSON.parse(__ENV.OPTIONS);

export async function stall() {
  before.add(1);
  let r;
  switch (__ENV.WHAT) {
  case 'http': r = http.get(__ENV.URL + '/http'); break;
  case 'sse': r = sse.open(__ENV.URL + '/sse', (c) => c.on('event', () => check(1, { 'event seen': () => true }))); break;
  case 'llm': r = client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 }); break;
  case 'timer': r = await new Promise((resolve) => setTimeout(resolve, 600000)); break;
  }
  check(r, { 'after the stall': () => true });
  after.add(1);
}

export function watch() {
  while (http.get(__ENV.URL + '/ready').body !== 'yes') {
    sleep(0.02);
  }
  ready.add(1);
  if (__ENV.ROUTE === 'abort') {
    exec.test.abort('cut');
  }
  sleep(600);
}
`

// cutRoutes are the ways an iteration is cut, as options and what ends
// the run.
var cutRoutes = []struct {
	name    string
	options string
	cause   string // the abort's cause ("": the run ends normally)
	ctrlC   bool   // the caller's context ends once the stream is held
}{
	{"end of gracefulStop", `{"scenarios":{"stall":{"executor":"constant-vus","vus":1,"duration":"1500ms","gracefulStop":"300ms","exec":"stall"}}}`, "", false},
	{"end of gracefulRampDown", `{"scenarios":{"stall":{"executor":"ramping-vus","startVUs":1,"gracefulRampDown":"200ms","exec":"stall",
	  "stages":[{"duration":"1500ms","target":1},{"duration":"0s","target":0},{"duration":"1s","target":0}]}}}`, "", false},
	{"abortOnFail", `{"scenarios":{"stall":{"executor":"constant-vus","vus":1,"duration":"1m","exec":"stall"},
	  "watch":{"executor":"constant-vus","vus":1,"duration":"1m","exec":"watch"}},
	  "thresholds":{"ready_seen":[{"threshold":"count<1","abortOnFail":true}]}}`, report.AbortStopCondition, false},
	{"exec.test.abort()", `{"scenarios":{"stall":{"executor":"constant-vus","vus":1,"duration":"1m","exec":"stall"},
	  "watch":{"executor":"constant-vus","vus":1,"duration":"1m","exec":"watch"}}}`, report.AbortScript, false},
	{"Ctrl-C", `{"scenarios":{"stall":{"executor":"constant-vus","vus":1,"duration":"1m","exec":"stall"}}}`, report.AbortInterrupted, true},
}

// TestCutIterationsRecordNothingAfterTheCut cuts an iteration that holds
// an open stream (k6/http, k6/x/sse, k6/x/llm, a timer) in each way a run
// cuts one, and checks that the cut ends the stream and that nothing the
// iteration would have done after it is recorded: no check, no custom
// metric, no iteration, no request sample of the cut stream, and the LLM
// request recorded once, not as ok.
func TestCutIterationsRecordNothingAfterTheCut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs loads of a few seconds")
	}
	for _, route := range cutRoutes {
		for _, what := range []string{"http", "sse", "llm", "timer"} {
			t.Run(route.name+"/"+what, func(t *testing.T) {
				t.Parallel()
				s := startStallServer(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if route.ctrlC {
					go func() {
						select {
						case <-s.stalled:
							cancel()
						case <-ctx.Done():
						}
					}()
				}
				// The watch scenario waits for a held stream; a timer holds
				// none, so the test holds one once the stall iteration has
				// begun (held earlier, the watch could cut the run before
				// the stall scenario's first sample: seen under -race).
				var held atomic.Bool
				holdOne := func() {
					go func() {
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/sse", nil)
						if resp, err := http.DefaultClient.Do(req); err == nil {
							resp.Body.Close()
						}
					}()
				}
				var began atomic.Bool
				tagger := func(_ time.Duration, tags *recording.Tags) {
					if tags.Scenario == "stall" && what == "timer" && route.cause != "" && !route.ctrlC && held.CompareAndSwap(false, true) {
						holdOne()
					}
					// The stall scenario's first sample is its before.
					if tags.Scenario == "stall" && what == "timer" && route.ctrlC && began.CompareAndSwap(false, true) {
						// Nothing to observe from outside: the cut lands
						// before or while the iteration waits on its
						// timer, and nothing may come after.
						time.AfterFunc(200*time.Millisecond, cancel)
					}
				}
				var out strings.Builder
				doc, err := Run(ctx, Config{Script: writeScript(t, cutScript), Stdout: &out, Stderr: &out, Tagger: tagger,
					Env: map[string]string{"URL": s.URL, "WHAT": what, "OPTIONS": route.options, "ROUTE": map[bool]string{true: "abort"}[route.cause == report.AbortScript]}})
				if err != nil {
					t.Fatalf("run: %v\n%s", err, out.String())
				}
				switch {
				case route.cause == "" && doc.Verdict == report.VerdictAborted:
					t.Errorf("got an abort %+v, want the run to end at its schedule's end", doc.Abort)
				case route.cause != "" && (doc.Abort == nil || doc.Abort.Cause != route.cause):
					t.Errorf("got verdict %s, abort %+v, want aborted by %s", doc.Verdict, doc.Abort, route.cause)
				}
				stall := recording.TagFilter{Scenario: "stall"}
				if got := custom(doc, "before", stall).Sum; got < 1 {
					t.Fatalf("before: got %v, want the stalled iteration to have begun\n%s", got, out.String())
				}
				for _, name := range []string{"after", js.MetricIterations, js.MetricIterationDuration, js.MetricIterationsFailed} {
					if got := custom(doc, name, stall).Count; got != 0 {
						t.Errorf("%s: got %d samples from the cut iteration, want none\n%s", name, got, out.String())
					}
				}
				// The SSE stream's one event is checked before the cut.
				afterCheck := recording.TagFilter{Scenario: "stall", Extra: recording.ExtraTags(map[string]string{"check": "after the stall"})}
				if got := custom(doc, js.MetricChecks, afterCheck).Count; got != 0 {
					t.Errorf("checks: got %d samples of the check after the stall, want none\n%s", got, out.String())
				}
				if got := custom(doc, js.MetricIterationsInterrupted, stall).Sum; got < 1 {
					t.Errorf("iterations_interrupted: got %v, want the cut iteration counted", got)
				}
				if what == "http" || what == "sse" {
					if got := custom(doc, js.MetricHTTPReqs, stall).Count; got != 0 {
						t.Errorf("http_reqs: got %d samples of the cut stream, want none", got)
					}
				}
				if what == "llm" {
					c := doc.Summary().Counts(stall)
					if c.Scheduled() != 1 || c.OK != 0 {
						t.Errorf("llm request: got %d scheduled, %d ok: want the cut stream recorded once, not as ok", c.Scheduled(), c.OK)
					}
				}
				if what != "timer" {
					select { // the cut ended the stream
					case <-s.closed:
					case <-time.After(10 * time.Second):
						t.Errorf("the server's stream was not closed within 10 s of the run's end")
					}
				}
			})
		}
	}
}
