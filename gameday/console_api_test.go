package gameday

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/report"
)

// TestConsoleNeedsToken: every path answers 401 without a valid token;
// the console's URL with its token sets a cookie that opens the page and
// the API; a bearer token opens the API.
func TestConsoleNeedsToken(t *testing.T) {
	skipShort(t)
	g := startGame(t, testExperiment([]string{startSim(t)}, nil))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/", "/api/status", "/api/faults", "/api/stream", "/static/console.js", "/api/nothing"} {
		for _, auth := range []string{"", "Bearer wrong", "Basic Zm9vOmJhcg=="} {
			req, _ := http.NewRequest("GET", g.url+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with %q: %d, want 401", path, auth, res.StatusCode)
			}
		}
	}
	if res, err := noRedirect.Post(g.url+"/api/end", "application/json", nil); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /api/end without a token: %v %v, want 401", res.StatusCode, err)
	}
	res, err := noRedirect.Get(g.url + "/?token=wrong")
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the URL with a wrong token: %v %v, want 401", res.StatusCode, err)
	}
	// The console's URL: a cookie, then the page without the token.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err = browser.Get(g.url + "/?token=" + g.token(""))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.RawQuery != "" || !strings.Contains(string(page), `src="/static/console.js"`) {
		t.Errorf("the console's URL: %d at %s, want the page without the token in its URL", res.StatusCode, res.Request.URL)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("page CSP %q", csp)
	}
	for _, path := range []string{"/static/console.js", "/static/chart.js", "/static/console.css", "/api/status"} {
		res, err := browser.Get(g.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the cookie: %d", path, res.StatusCode)
		}
	}
	// A change made with the cookie must come from the console's page (its
	// header): a form of another page cannot send one.
	res, err = browser.Post(g.url+"/api/notes", "application/x-www-form-urlencoded", strings.NewReader(`{"text":"x"}`))
	if err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a form post with the cookie: %v %v, want 403", res.StatusCode, err)
	}
	// With the header, a console's request must still send JSON.
	req, _ := http.NewRequest("POST", g.url+"/api/notes", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(ConsoleHeader, "1")
	res, err = browser.Do(req)
	if err != nil || res.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a console's post of a form with the cookie: %v %v, want 415", res.StatusCode, err)
	}
	var st statusBody
	if code := g.call("GET", "/api/status", nil, &st); code != http.StatusOK || st.Who != DefaultHolder || st.Experiment != "console-test" {
		t.Errorf("status %d %+v, want the facilitator's", code, st)
	}
}

// TestConsoleAPIInjectRevert drives a game day through the API alone:
// a latency fault injected through the proxy in front of the simulator
// delays what goes through it, until it is reverted; the blast radius
// refuses a fault beyond it; bad faults are refused with their problems;
// notes and load changes are recorded; the end writes run.json, the
// reports and the post-mortem with who did what.
func TestConsoleAPIInjectRevert(t *testing.T) {
	skipShort(t)
	exp := testExperiment([]string{startSim(t), startSim(t)}, &spec.BlastRadius{MaxConcurrentFaults: 2, MinAvailable: 1})
	g := startGame(t, exp, "alice", "bob")

	var types struct{ Types []FaultType }
	if code := g.callAs("bob", "GET", "/api/faults", nil, &types); code != http.StatusOK || len(types.Types) != len(spec.FaultTypeList()) {
		t.Fatalf("GET /api/faults: %d, %d types", code, len(types.Types))
	}
	i := slices.IndexFunc(types.Types, func(ft FaultType) bool { return ft.Name == "network.latency" })
	if i < 0 || types.Types[i].Target != "proxy" || !slices.ContainsFunc(types.Types[i].Params, func(p Param) bool { return p.Name == "latency" && p.Type == "duration" }) {
		t.Errorf("network.latency in the catalogue: %+v", types.Types[i])
	}
	var st statusBody
	g.call("GET", "/api/status", nil, &st)
	if len(st.Targets.Endpoints) != 2 || st.Targets.Endpoints[0].Proxy == "" || st.Targets.MinAvailable != 1 {
		t.Fatalf("targets %+v, want 2 endpoints behind proxies, min_available 1", st.Targets)
	}
	proxy := "http://" + st.Targets.Endpoints[0].Proxy
	timed := func() time.Duration {
		start := time.Now()
		res, err := http.Get(proxy + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return time.Since(start)
	}
	if d := timed(); d > 250*time.Millisecond {
		t.Fatalf("the proxy takes %v before any fault", d)
	}

	// Refusals and problems first.
	var errBody errorBody
	if code := g.callAs("alice", "POST", "/api/faults", map[string]any{"type": "network.latency", "params": map[string]any{"latency": "400ms"}}, &errBody); code != http.StatusConflict ||
		!strings.Contains(errBody.Refused, "min_available (1)") {
		t.Errorf("a fault on every endpoint with min_available 1: %d %+v, want 409", code, errBody)
	}
	errBody = errorBody{}
	if code := g.callAs("alice", "POST", "/api/faults", map[string]any{"type": "network.latency", "params": map[string]any{"latency": "soon"}, "target": map[string]any{"endpoints": []int{0}}}, &errBody); code != http.StatusBadRequest ||
		len(errBody.Problems) == 0 || errBody.Problems[0].Path != "fault.params.latency" {
		t.Errorf("a bad latency: %d %+v, want 400 naming fault.params.latency", code, errBody)
	}
	if code := g.callAs("alice", "POST", "/api/faults", map[string]any{"type": "network.latency", "colour": "red"}, nil); code != http.StatusBadRequest {
		t.Errorf("an unknown key: %d, want 400", code)
	}

	var inj struct{ Fault experiments.ActiveFault }
	if code := g.callAs("alice", "POST", "/api/faults", map[string]any{
		"name": "slow-0", "type": "network.latency", "params": map[string]any{"latency": "400ms"}, "target": map[string]any{"endpoints": []int{0}},
	}, &inj); code != http.StatusCreated {
		t.Fatalf("inject: %d\n%s", code, g.out)
	}
	if inj.Fault.Name != "slow-0" || inj.Fault.By != "alice" || !strings.Contains(inj.Fault.Target, st.Targets.Endpoints[0].Proxy) {
		t.Errorf("injected %+v", inj.Fault)
	}
	if d := timed(); d < 400*time.Millisecond {
		t.Errorf("through the proxy with 400ms latency: %v", d)
	}
	var act struct{ Faults []experiments.ActiveFault }
	if g.call("GET", "/api/active", nil, &act); len(act.Faults) != 1 || act.Faults[0].Name != "slow-0" {
		t.Errorf("active %+v", act.Faults)
	}
	// A second fault on the same endpoint keeps within the blast radius
	// (one endpoint untouched), a third is beyond max_concurrent_faults.
	if code := g.callAs("bob", "POST", "/api/faults", map[string]any{"type": "stream.stall", "params": map[string]any{"probability": 0.1, "stall": "100ms"},
		"target": map[string]any{"endpoints": []int{0}}, "duration": "1s"}, &inj); code != http.StatusCreated || inj.Fault.DurationS != 1 || math.Abs(inj.Fault.RevertAtS-inj.Fault.InjectedAtS-1) > 1e-6 {
		t.Errorf("second fault: %d %+v", code, inj.Fault)
	}
	errBody = errorBody{}
	if code := g.callAs("bob", "POST", "/api/faults", map[string]any{"type": "http.ttfb", "params": map[string]any{"delay": "10ms"}, "target": map[string]any{"endpoints": []int{0}}}, &errBody); code != http.StatusConflict ||
		!strings.Contains(errBody.Refused, "max_concurrent_faults (2)") {
		t.Errorf("a third fault: %d %+v, want 409 for max_concurrent_faults", code, errBody)
	}
	g.waitFor(10*time.Second, "the 1s fault reverted on its own", func() bool {
		g.call("GET", "/api/active", nil, &act)
		return len(act.Faults) == 1
	})
	var note struct{ Note noteOf }
	if code := g.callAs("bob", "POST", "/api/notes", map[string]any{"text": "endpoint 0 is slow; hypothesis: the proxy"}, &note); code != http.StatusCreated || note.Note.By != "bob" {
		t.Errorf("note: %d %+v", code, note)
	}
	if code := g.callAs("bob", "POST", "/api/notes", map[string]any{"text": "  "}, nil); code != http.StatusBadRequest {
		t.Errorf("an empty note: %d, want 400", code)
	}
	var ld experiments.LoadState
	if code := g.callAs("alice", "POST", "/api/load", map[string]any{"rate": 30}, &ld); code != http.StatusOK || ld.Rate != 30 {
		t.Errorf("load: %d %+v", code, ld)
	}
	if code := g.callAs("alice", "POST", "/api/load", map[string]any{"preset": "agent"}, &ld); code != http.StatusOK || ld.Preset != "agent" {
		t.Errorf("preset: %d %+v", code, ld)
	}
	if code := g.callAs("alice", "POST", "/api/load", map[string]any{"users": 3}, &errBody); code != http.StatusConflict {
		t.Errorf("users for an open loop: %d, want 409", code)
	}
	var tl experiments.Timeline
	if code := g.callAs("alice", "POST", "/api/timeline/skip", nil, &tl); code != http.StatusOK || tl.Steps[0].State != experiments.StepSkipped {
		t.Errorf("skip: %d %+v", code, tl)
	}
	if code := g.callAs("bob", "DELETE", "/api/active/slow-0", nil, nil); code != http.StatusOK {
		t.Fatalf("revert: %d", code)
	}
	if code := g.callAs("bob", "DELETE", "/api/active/slow-0", nil, nil); code != http.StatusNotFound {
		t.Errorf("revert again: %d, want 404", code)
	}
	if d := timed(); d > 250*time.Millisecond {
		t.Errorf("the proxy takes %v after the revert", d)
	}
	g.end("alice")
	if g.err != nil {
		t.Fatalf("Run: %v\n%s", g.err, g.out)
	}
	if code := g.call("POST", "/api/faults", map[string]any{"type": "network.latency"}, nil); code != 0 {
		t.Errorf("the console still answers after the end: %d", code)
	}

	doc, err := report.Read(filepath.Join(g.dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var slow *report.FaultRecord
	for i, f := range doc.Faults {
		if f.Name == "slow-0" {
			slow = &doc.Faults[i]
		}
	}
	if slow == nil || slow.By != "alice" || slow.InjectedAtS == nil || slow.RevertedAtS == nil || !slow.RevertOK || !strings.Contains(slow.Target, "endpoint-0") {
		t.Errorf("run.json's slow-0: %+v", slow)
	}
	want := []string{"fault/injected/slow-0/alice", "gameday/refused//alice", "fault/injected/stall-", "gameday/refused//bob", "gameday/note//bob",
		"gameday/load//alice", "gameday/timeline_skip/planned-errors/alice", "fault/reverted/slow-0/bob", "gameday/end//alice"}
	var got []string
	for _, e := range doc.Events {
		got = append(got, e.Source+"/"+e.Kind+"/"+e.Target+"/"+e.By)
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("run.json's events lack %s: %q", w, got)
		}
	}
	if doc.Requests.Lost != 0 || doc.Verdict != report.VerdictPass {
		t.Errorf("verdict %s, lost %d", doc.Verdict, doc.Requests.Lost)
	}
	for _, f := range []string{ReportFile, JUnitFile, PostmortemFile} {
		b, err := os.ReadFile(filepath.Join(g.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == PostmortemFile {
			for _, w := range []string{"| alice | injected slow-0 |", "**N1**", "bob: endpoint 0 is slow", "- **Participants:** alice, bob", "| slow-0 | network.latency |"} {
				if !strings.Contains(string(b), w) {
					t.Errorf("post-mortem lacks %q:\n%s", w, b)
				}
			}
		}
		if f == ReportFile && !strings.Contains(string(b), ">N1<") {
			t.Errorf("report.html lacks the note's marker")
		}
	}
	if pend, err := faults.Pending(g.dir); err != nil || len(pend) != 0 {
		t.Errorf("journal pending: %+v %v", pend, err)
	}
}

// TestConsoleStream: the live stream starts with the history so far,
// then sends one frame per second of run clock, in order, with the
// state; a fault injected shows in the state and in the events.
func TestConsoleStream(t *testing.T) {
	skipShort(t)
	g := startGame(t, testExperiment([]string{startSim(t)}, nil))
	req, _ := http.NewRequest("GET", g.url+"/api/stream", nil)
	req.Header.Set("Authorization", "Bearer "+g.token(""))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	evs := readSSE(res.Body)
	next := func() sseEvent {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("stream ended")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return sseEvent{}
	}
	first := next()
	var h hello
	if err := json.Unmarshal(first.data, &h); err != nil || first.name != "hello" {
		t.Fatalf("first event %s: %v", first.name, err)
	}
	for i, f := range h.Frames {
		if f.T != i {
			t.Fatalf("hello frame %d has t %d", i, f.T)
		}
	}
	var eb errorBody
	code := g.call("POST", "/api/faults", map[string]any{"name": "errs", "type": "http.error", "params": map[string]any{"status": 500}}, &eb)
	if code != http.StatusCreated {
		t.Fatalf("inject: %d %+v", code, eb)
	}
	last := len(h.Frames) - 1
	var sawFault, sawFailed, sawServer bool
	for n := 0; n < 4 || !(sawFault && sawFailed); n++ {
		if n > 12 {
			t.Fatalf("after %d ticks: fault in state %v, failed requests %v", n, sawFault, sawFailed)
		}
		ev := next()
		var tk tick
		if err := json.Unmarshal(ev.data, &tk); err != nil || ev.name != "tick" || tk.Frame == nil {
			t.Fatalf("event %s %s: %v", ev.name, ev.data, err)
		}
		if tk.Frame.T != last+1 {
			t.Errorf("frame %d after %d", tk.Frame.T, last)
		}
		last = tk.Frame.T
		sawFailed = sawFailed || tk.Frame.Errors["http_5xx"] > 0
		sawServer = sawServer || len(tk.Server) > 0
		for _, a := range tk.Active {
			sawFault = sawFault || a.Name == "errs"
		}
	}
	if !sawServer {
		t.Error("no server sample in the ticks (the monitor scrapes every 500ms)")
	}
	g.end("")
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("the stream ended without an ended event")
			}
			if ev.name != "ended" {
				continue
			}
			var e Ended
			if err := json.Unmarshal(ev.data, &e); err != nil || e.RunDir != g.dir || len(e.Files) != 4 {
				t.Errorf("ended %s: %v", ev.data, err)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("no ended event within 10s of the end")
		}
	}
}

func TestCheckListen(t *testing.T) {
	tests := []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:0", false, true},
		{"[::1]:8080", false, true},
		{"localhost:9000", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"192.168.1.4:80", false, false},
		{"0.0.0.0:8080", true, true},
		{"nohostport", true, false},
	}
	for _, tt := range tests {
		err := CheckListen(tt.addr, tt.remote)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListen(%q, %v) = %v, want ok %v", tt.addr, tt.remote, err, tt.ok)
		}
	}
}

func TestNewTokens(t *testing.T) {
	ts, err := NewTokens(nil)
	if err != nil || len(ts) != 1 || ts[0].Holder != DefaultHolder || len(ts[0].Secret) < 20 {
		t.Fatalf("NewTokens(nil) = %+v, %v", ts, err)
	}
	ts, err = NewTokens([]string{"alice", "bob"})
	if err != nil || len(ts) != 2 || ts[0].Secret == ts[1].Secret {
		t.Fatalf("two tokens %+v, %v", ts, err)
	}
	for _, bad := range [][]string{{"al ice"}, {"a", "a"}, {""}, {strings.Repeat("x", 41)}} {
		if _, err := NewTokens(bad); err == nil {
			t.Errorf("NewTokens(%q) accepted", bad)
		}
	}
}
