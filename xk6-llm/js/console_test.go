package js

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConsoleDebugOnlyWhenAsked: console.debug lines are left out unless
// the run shows them (k6 shows them with --verbose); the other levels
// always print, as k6's logger writes them on a terminal-less stderr.
func TestConsoleDebugOnlyWhenAsked(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `
export default function () {
  console.log('l', 1);
  console.debug('d', 2);
  console.info('i');
  console.warn('w');
  console.error('e', { a: 1 });
}
`})
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, debug := range []bool{false, true} {
		var out strings.Builder
		var mu sync.Mutex
		sh, err := NewShared(SharedOptions{Console: lockedWriter{&mu, &out}, ConsoleDebug: debug})
		if err != nil {
			t.Fatal(err)
		}
		vu, err := NewVU(context.Background(), 1, prog, sh)
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		if it := runDefault(context.Background(), t, vu); it.Err != nil {
			t.Fatal(it.Err)
		}
		sh.Close()
		mu.Lock()
		got := logTimes(t, out.String(), before, time.Now())
		mu.Unlock()
		want := "time=T level=info msg=\"l 1\" source=console\n"
		if debug {
			want += "time=T level=debug msg=\"d 2\" source=console\n"
		}
		want += "time=T level=info msg=i source=console\ntime=T level=warning msg=w source=console\n" +
			"time=T level=error msg=\"e {\\\"a\\\":1}\" source=console\n"
		if got != want {
			t.Errorf("debug shown %v: got\n%s\nwant\n%s", debug, got, want)
		}
	}
}

// logTimes replaces each line's time="..." with time=T after checking it
// is k6's (RFC 3339, to the second) and within [before, after].
func logTimes(t *testing.T, s string, before, after time.Time) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^time="([^"]*)" `)
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		ts, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			t.Errorf("time=%q: %v", m[1], err)
			continue
		}
		if ts.Before(before.Truncate(time.Second)) || ts.After(after) {
			t.Errorf("time=%q is outside the run, %s to %s", m[1], before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
		}
	}
	return re.ReplaceAllString(s, "time=T ")
}

// TestConsoleAndLogLinesAreK6s: console lines go to the console in k6's
// log format, with source=console on the terminal and without it in
// --console-output's file (ConsoleFile), in colours with the seconds
// counter when LogColor; --http-debug's dumps (paired by request_id),
// exec.test.fail's reason and an invalid metric value go to the log, as
// k6 logs them, never to the console file.
func TestConsoleAndLogLinesAreK6s(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", "Mon, 07 Dec 2026 11:00:00 GMT")
		_, _ = io.WriteString(w, "pong")
	}))
	t.Cleanup(srv.Close)
	dir := writeScripts(t, map[string]string{"script.js": `import http from 'k6/http';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
const c = new Counter('cc');
export default function () {
  console.log('plain');
  console.warn('two words', 3);
  http.get(__ENV.URL + '/ping');
  c.add(null);
  exec.test.fail('too slow');
}
`})
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	debugLines := "time=T level=info msg=\"Request:\\nGET /ping HTTP/1.1\\nHost: " + host +
		"\\nUser-Agent: " + httpUserAgent + "\\nAccept-Encoding: gzip\\n\\n\\n\" iter=0 method=GET name=\"" + srv.URL + "/ping\" request_id=ID source=http-debug url=\"" + srv.URL + "/ping\" vu=1\n" +
		"time=T level=info msg=\"Response:\\nHTTP/1.1 200 OK\\nContent-Length: 4\\n" +
		"Content-Type: text/plain; charset=utf-8\\nDate: Mon, 07 Dec 2026 11:00:00 GMT\\n\\n\\n\" iter=0 method=GET name=\"" + srv.URL + "/ping\" request_id=ID source=http-debug url=\"" + srv.URL + "/ping\" vu=1\n"
	failLines := "time=T level=warning msg=\"'null' is an invalid value for metric 'cc', a number or a boolean value is expected\"\n" +
		"time=T level=error msg=\"test marked as failed: too slow\"\n"
	for _, tt := range []struct {
		name              string
		file, color       bool
		console, logLines string
		logHas            string
	}{
		{name: "terminal", console: "time=T level=info msg=plain source=console\n" +
			"time=T level=warning msg=\"two words 3\" source=console\n" + debugLines + failLines},
		{name: "console-output file", file: true,
			console:  "time=T level=info msg=plain\ntime=T level=warning msg=\"two words 3\"\n",
			logLines: debugLines + failLines},
		{name: "console-output file, coloured", file: true, color: true,
			console: "\x1b[36mINFO\x1b[0m[0000] plain" + strings.Repeat(" ", 39) + " \n" +
				"\x1b[33mWARN\x1b[0m[0000] two words 3" + strings.Repeat(" ", 33) + " \n",
			logHas: "\x1b[31mERRO\x1b[0m[0000] test marked as failed: too slow" + strings.Repeat(" ", 13) + " \n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var console, logs strings.Builder
			opts := SharedOptions{Env: map[string]string{"URL": srv.URL}, Console: lockedWriter{&mu, &console},
				ConsoleFile: tt.file, LogColor: tt.color, HTTPDebug: "headers"}
			if tt.file {
				opts.Log = lockedWriter{&mu, &logs}
			}
			sh, err := NewShared(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sh.Close)
			vu, err := NewVU(context.Background(), 1, prog, sh)
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			if it := runDefault(context.Background(), t, vu); it.Err != nil {
				t.Fatal(it.Err)
			}
			after := time.Now()
			mu.Lock()
			defer mu.Unlock()
			ids := regexp.MustCompile(`request_id=([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}) `)
			both := console.String() + logs.String()
			if m := ids.FindAllStringSubmatch(both, -1); !tt.color && (len(m) != 2 || m[0][1] != m[1][1]) {
				t.Errorf("want one request_id (a UUID) on the request's and the response's line, got %v", m)
			}
			got := ids.ReplaceAllString(console.String(), "request_id=ID ")
			if !tt.color {
				got = logTimes(t, got, before, after)
			}
			if got != tt.console {
				t.Errorf("console: got\n%q\nwant\n%q", got, tt.console)
			}
			if gotLog := logTimes(t, ids.ReplaceAllString(logs.String(), "request_id=ID "), before, after); !tt.color && gotLog != tt.logLines {
				t.Errorf("log: got\n%q\nwant\n%q", gotLog, tt.logLines)
			}
			if !strings.Contains(logs.String(), tt.logHas) {
				t.Errorf("log: got\n%q\nwant a line %q", logs.String(), tt.logHas)
			}
		})
	}
}

// TestHTTPDebugFullSendsTheBodyItLogs: --http-debug=full logs a request's
// body and still sends it, and the dump leaves the request's timings and
// remote address to the real connection.
func TestHTTPDebugFullSendsTheBodyItLogs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var logs strings.Builder
	sh, err := NewShared(SharedOptions{Env: map[string]string{"URL": srv.URL}, Console: lockedWriter{&mu, &logs}, HTTPDebug: "full"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	prog, err := Load(filepath.Join(writeScripts(t, map[string]string{"script.js": `import http from 'k6/http';
export default function () {
  const res = http.post(__ENV.URL + '/echo', 'hello body');
  if (res.body !== 'hello body') throw new Error('echoed ' + JSON.stringify(res.body));
  if (res.remote_ip !== '127.0.0.1') throw new Error('remote_ip ' + res.remote_ip);
}
`}), "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	vu, err := NewVU(context.Background(), 1, prog, sh)
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Count(logs.String(), `\n\nhello body`); got != 2 {
		t.Errorf("the body is in %d of the request's and response's lines, want 2:\n%s", got, logs.String())
	}
}
