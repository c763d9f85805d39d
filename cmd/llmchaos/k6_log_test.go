package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// logScript writes a script that logs on the console, throws in every
// iteration and, with -e URL, sends a k6/http request there first. Its
// options hold k6's cloud-only keys, which draw no warning, and rps, which
// does.
func logScript(t *testing.T) (dir, script string) {
	t.Helper()
	dir = t.TempDir()
	script = filepath.Join(dir, "log.js")
	if err := os.WriteFile(script, []byte(`import http from 'k6/http';
export const options = { iterations: 2, cloud: { projectID: 3 }, ext: { loadimpact: { name: 'x' } }, rps: 5 };
export default function () {
  if (__ENV.URL) { http.get(__ENV.URL); }
  console.log('hello', __ITER);
  console.warn('careful');
  throw new Error('boom ' + __ITER);
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, script
}

// jsonLogLines parses a --log-format=json log: one JSON object a line,
// each with k6's level, msg and an RFC 3339 time.
func jsonLogLines(t *testing.T, b []byte) []map[string]string {
	t.Helper()
	var lines []map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]string
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not a JSON object of strings: %v", sc.Text(), err)
		}
		if _, err := time.Parse(time.RFC3339, m["time"]); err != nil || m["level"] == "" {
			t.Errorf("line %q: want k6's level and an RFC 3339 time", sc.Text())
		}
		lines = append(lines, m)
	}
	return lines
}

// TestK6LogFormatAndOutput runs the docs CI's invocation of k6 (--log-format
// json, --log-output file=F, -w) through `llmchaos run`: the file holds the
// warning, the console lines (source=console) and each exception (its
// stack, source=stacktrace) as k6's JSON lines, and nothing of them is on
// stderr; level=error keeps the exceptions alone; --log-output=none
// silences the log; --console-output still takes the console lines.
func TestK6LogFormatAndOutput(t *testing.T) {
	dir, script := logScript(t)
	logFile := filepath.Join(dir, "k6.log")
	var out, errb bytes.Buffer
	args := []string{"run", script, "--log-format=json", "--log-output=file=" + logFile, "-w", "--no-summary", "--no-history"}
	if code := execute(context.Background(), args, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range jsonLogLines(t, b) {
		msg, _, _ := strings.Cut(m["msg"], "\n")
		got = append(got, m["level"]+"|"+m["source"]+"|"+msg)
		if m["source"] == "stacktrace" && !strings.Contains(m["msg"], "\n\tat default ("+script+":7:") {
			t.Errorf("exception line %q: want the stack with the throw's position", m["msg"])
		}
	}
	want := []string{"warning||options.rps is a k6 option llmchaos does not support: it is ignored",
		"info|console|hello 0", "warning|console|careful", "error|stacktrace|Error: boom 0",
		"info|console|hello 1", "warning|console|careful", "error|stacktrace|Error: boom 1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log file's lines (level|source|msg):\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{"hello", "boom", "rps", "cloud", "ext"} {
		if strings.Contains(errb.String(), s) {
			t.Errorf("stderr has %q with --log-output=file=...:\n%s", s, errb.String())
		}
	}

	// level=error: the exceptions alone, appended after the first run's.
	args = []string{"run", script, "--log-format=json", "--log-output=file=" + logFile + ",level=error", "--no-summary", "--no-history"}
	if code := execute(context.Background(), args, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	b, _ = os.ReadFile(logFile)
	lines := jsonLogLines(t, b)
	if len(lines) != len(want)+2 || lines[len(lines)-1]["source"] != "stacktrace" || lines[len(lines)-2]["source"] != "stacktrace" {
		t.Errorf("with level=error, want the 2 exception lines appended:\n%s", b)
	}

	errb.Reset()
	args = []string{"run", script, "--log-output=none", "--no-summary", "--no-history", "--quiet"}
	if code := execute(context.Background(), args, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	for _, s := range []string{"hello", "careful", "boom", "rps"} {
		if strings.Contains(errb.String(), s) {
			t.Errorf("stderr has %q with --log-output=none:\n%s", s, errb.String())
		}
	}

	// --console-output keeps the console lines, in k6's text form; the
	// log has the rest.
	con := filepath.Join(dir, "console.txt")
	errb.Reset()
	args = []string{"run", script, "--log-format=json", "--console-output", con, "--no-summary", "--no-history", "--quiet"}
	if code := execute(context.Background(), args, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	cb, _ := os.ReadFile(con)
	if !regexp.MustCompile(`(?m)^time="[^"]+" level=info msg="hello 0"$`).Match(cb) || strings.Contains(string(cb), "boom") {
		t.Errorf("console file: want the console lines alone, in k6's text form:\n%s", cb)
	}
	for _, m := range jsonLogLines(t, errb.Bytes()) {
		if m["source"] == "console" {
			t.Errorf("a console line is in the log with --console-output: %v", m)
		}
	}
	if !strings.Contains(errb.String(), `"source":"stacktrace"`) {
		t.Errorf("stderr: want the exceptions as JSON lines:\n%s", errb.String())
	}
}

// TestK6ThrowFlag: -w (k6's --throw) makes a k6/http request that gets no
// response throw, so the iteration fails with k6's stacktrace line; without
// it the request returns and k6's "Request Failed" warning is logged, with
// the error as Go's HTTP client words it.
func TestK6ThrowFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	_ = ln.Close() // nothing listens there now: no response
	_, script := logScript(t)
	for _, throw := range []bool{false, true} {
		var out, errb bytes.Buffer
		args := []string{"run", script, "-e", "URL=" + closed, "--log-format=json", "--no-summary", "--quiet"}
		if throw {
			args = append(args, "-w")
		}
		if code := executeK6(context.Background(), args, &out, &errb); code != exitcode.OK {
			t.Fatalf("exit %d:\n%s", code, errb.String())
		}
		var errs, failed []string
		consoles := 0
		for _, m := range jsonLogLines(t, errb.Bytes()) {
			if m["level"] == "error" && m["source"] == "stacktrace" {
				msg, _, _ := strings.Cut(m["msg"], "\n")
				errs = append(errs, msg)
			}
			if m["msg"] == "Request Failed" {
				if want := `Get "` + closed + `": dial tcp ` + ln.Addr().String() + `: connect: connection refused`; m["level"] != "warning" || m["error"] != want {
					t.Errorf("Request Failed line %v: want level warning and error %q", m, want)
				}
				failed = append(failed, m["error"])
			}
			if m["source"] == "console" {
				consoles++
			}
		}
		switch {
		case !throw && (strings.Join(errs, "|") != "Error: boom 0|Error: boom 1" || consoles != 4):
			t.Errorf("without -w: want the script's own 2 exceptions after 4 console lines, got %q, %d console lines", errs, consoles)
		case throw && (len(errs) != 2 || strings.Contains(strings.Join(errs, "|"), "boom") || consoles != 0):
			t.Errorf("with -w: want 2 exceptions thrown by http.get before any console line, got %q, %d console lines", errs, consoles)
		case !throw && len(failed) != 2, throw && len(failed) != 0:
			t.Errorf("throw=%v: %d Request Failed warnings, want %d (one a failed request that did not throw)", throw, len(failed), map[bool]int{false: 2}[throw])
		}
		t.Logf("throw=%v: %q", throw, errs)
	}
}

// TestK6LogFlagsRefuseBadValues: a --log-output or --log-format k6 does not
// have, and k6's loki output, are exit 2 before any load, naming the flag.
func TestK6LogFlagsRefuseBadValues(t *testing.T) {
	_, script := logScript(t)
	for _, c := range []struct{ flag, want string }{
		{"--log-output=bogus", `--log-output "bogus": want stderr, stdout, none or file=PATH[,level=NAME]`},
		{"--log-output=loki=http://127.0.0.1:3100", "k6's Loki log output is not supported"},
		{"--log-output=file=x.log,colour=1", `unknown key "colour"`},
		{"--log-output=file=x.log,level=loud", `unknown log level "loud"`},
		{"--log-format=xml", `--log-format "xml": want text, json or raw`},
	} {
		var out, errb bytes.Buffer
		code := executeK6(context.Background(), []string{"run", script, c.flag}, &out, &errb)
		if code != exitcode.Usage || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "hello") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.flag, code, errb.String(), c.want)
		}
	}
}

// TestK6LogEnvironment: K6_LOG_FORMAT and K6_LOG_OUTPUT stand for the
// flags, as k6 reads them.
func TestK6LogEnvironment(t *testing.T) {
	dir, script := logScript(t)
	logFile := filepath.Join(dir, "env.log")
	t.Setenv("K6_LOG_FORMAT", "raw")
	t.Setenv("K6_LOG_OUTPUT", "file="+logFile)
	var out, errb bytes.Buffer
	if code := executeK6(context.Background(), []string{"run", script, "--no-summary"}, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	b, _ := os.ReadFile(logFile)
	if !strings.Contains(string(b), "\nhello 0\ncareful\nError: boom 0\n\tat default (") {
		t.Errorf("log file: want the raw messages:\n%s", b)
	}
}

// TestK6LogCarriesPreflightWarnings: the pre-flight check's warning and the
// server monitor's (an llm.Client's server answers 503 to everything) are
// k6 log lines with --log-format, like the run's other warnings, and
// llmchaos lines without it.
func TestK6LogCarriesPreflightWarnings(t *testing.T) {
	// The iteration waits (GET /wait) until the monitor scrapes a second
	// time: it warns of its first failed scrape before it scrapes again.
	var mu sync.Mutex
	var scrapes int
	var twice chan struct{} // a run's: closed at its second scrape
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := twice
		mu.Unlock()
		switch r.URL.Path {
		case "/wait":
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				http.Error(w, "no second scrape", http.StatusGatewayTimeout)
				return
			case <-r.Context().Done():
			}
			return
		case "/metrics":
			mu.Lock()
			if scrapes++; scrapes == 2 {
				close(ch)
			}
			mu.Unlock()
		}
		http.Error(w, "warming up", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	script := filepath.Join(t.TempDir(), "preflight.js")
	if err := os.WriteFile(script, []byte(`import http from 'k6/http';
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.BASE_URL, model: 'm' });
export const options = { iterations: 1 };
export default function () { http.get(__ENV.WAIT); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	warnings := []string{"pre-flight check of " + srv.URL + "/v1 did not succeed", "server monitor: " + srv.URL + "/v1: "}
	for _, format := range []string{"json", ""} {
		mu.Lock()
		scrapes, twice = 0, make(chan struct{})
		mu.Unlock()
		var out, errb bytes.Buffer
		args := []string{"run", script, "-e", "BASE_URL=" + srv.URL + "/v1", "-e", "WAIT=" + srv.URL + "/wait",
			"--scrape-interval", "100ms", "--no-summary", "--no-history", "--quiet"}
		if format != "" {
			args = append(args, "--log-format="+format)
		}
		if code := execute(context.Background(), args, &out, &errb); code != exitcode.OK {
			t.Fatalf("exit %d:\n%s", code, errb.String())
		}
		for _, w := range warnings {
			if format == "" {
				if !strings.Contains(errb.String(), "llmchaos run: warning: "+w) {
					t.Errorf("without --log-format: want the llmchaos warning line %q...:\n%s", w, errb.String())
				}
				continue
			}
			found := false
			for _, m := range jsonLogLines(t, errb.Bytes()) {
				found = found || m["level"] == "warning" && strings.HasPrefix(m["msg"], w)
			}
			if !found {
				t.Errorf("--log-format=json: want the warning %q... as a JSON log line:\n%s", w, errb.String())
			}
		}
	}
}
