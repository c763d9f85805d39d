package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// writeGetScript writes a script that GETs __ENV.URL once per iteration.
func writeGetScript(t *testing.T, dir string) string {
	t.Helper()
	script := filepath.Join(dir, "get.js")
	src := "import http from 'k6/http';\nexport const options = { iterations: 3 };\nexport default function () { http.get(__ENV.URL); }\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

// readMaybeGzip reads a file, decompressing it when gz says it is gzip;
// a file that should be gzip and is not fails the test.
func readMaybeGzip(t *testing.T, path string, gz bool) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !gz {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not gzip: %v", path, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: the gzip stream is cut: %v", path, err)
	}
	return out
}

// TestK6OutputsCompressedAndTimeFormats runs `k6 run` with k6's output
// options and checks the files as k6 writes them: a .gz name gives a
// whole gzip stream (CSV and JSON alike) holding the same rows as the
// plain file; csv's timeFormat (in the --out argument, or
// K6_CSV_TIME_FORMAT under it) writes the timestamps in that format,
// each within the run; K6_OUT's comma-separated outputs all get written.
func TestK6OutputsCompressedAndTimeFormats(t *testing.T) {
	url, _ := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := writeGetScript(t, dir)
	p := func(name string) string { return filepath.Join(dir, name) }
	t.Setenv("K6_CSV_TIME_FORMAT", "unix_nano") // under the argument's timeFormat
	t.Setenv("K6_OUT", "json="+p("k6out.json.gz")+",csv="+p("k6out.csv"))
	start := time.Now()
	var out, errb bytes.Buffer
	code := executeK6(context.Background(), []string{"run", script, "-e", "URL=" + url, "--quiet",
		"--out", "csv=" + p("plain.csv"),
		"--out", "csv=" + p("zipped.csv.gz"),
		"--out", "csv=fileName=" + p("rfc.csv") + ",timeFormat=rfc3339_nano,saveInterval=2s",
		"--out", "csv=timeFormat=unix_milli,fileName=" + p("milli.csv"),
		"--out", "json=" + p("plain.json"),
		"--out", "json=" + p("zipped.json.gz"),
	}, &out, &errb)
	end := time.Now()
	if code != exitcode.OK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(p("k6out.csv")); err == nil {
		t.Errorf("K6_OUT was applied although --out was given (the flag wins, as k6)")
	}

	rows := func(name string, gz bool) [][]string {
		r, err := csv.NewReader(bytes.NewReader(readMaybeGzip(t, p(name), gz))).ReadAll()
		if err != nil || len(r) < 2 {
			t.Fatalf("%s: %d rows, %v", name, len(r), err)
		}
		return r
	}
	plain := rows("plain.csv", false)
	zipped := rows("zipped.csv.gz", true)
	if len(zipped) != len(plain) || strings.Join(zipped[0], ",") != k6CSVHeader {
		t.Errorf("zipped.csv.gz: %d rows, header %q; plain.csv has %d rows", len(zipped), zipped[0], len(plain))
	}
	for _, tc := range []struct {
		file  string
		parse func(string) (time.Time, error)
		slack time.Duration // the format's resolution
	}{
		{"plain.csv", func(s string) (time.Time, error) { // K6_CSV_TIME_FORMAT=unix_nano
			n, err := strconv.ParseInt(s, 10, 64)
			if len(s) < 19 {
				return time.Time{}, strconv.ErrSyntax
			}
			return time.Unix(0, n), err
		}, 0},
		{"rfc.csv", func(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }, 0},
		{"milli.csv", func(s string) (time.Time, error) {
			n, err := strconv.ParseInt(s, 10, 64)
			if len(s) != 13 {
				return time.Time{}, strconv.ErrSyntax
			}
			return time.UnixMilli(n), err
		}, time.Millisecond},
	} {
		for i, row := range rows(tc.file, false)[1:] {
			at, err := tc.parse(row[1])
			if err != nil || at.Before(start.Add(-tc.slack)) || at.After(end) {
				t.Errorf("%s row %d: timestamp %q (%v), want one in its format within the run [%v, %v]", tc.file, i+2, row[1], err, start, end)
			}
		}
	}

	points := func(name string, gz bool) int {
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(readMaybeGzip(t, p(name), gz)))
		for sc.Scan() {
			var line struct{ Type string }
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("%s: %v: %s", name, err, sc.Bytes())
			}
			if line.Type == "Point" {
				n++
			}
		}
		return n
	}
	if a, b := points("plain.json", false), points("zipped.json.gz", true); a != len(plain)-1 || b != a {
		t.Errorf("JSON points: plain %d, gzip %d, want both %d (the CSV rows)", a, b, len(plain)-1)
	}

	// With no --out, K6_OUT's outputs are all written.
	out.Reset()
	errb.Reset()
	if code := executeK6(context.Background(), []string{"run", script, "-e", "URL=" + url, "--quiet"}, &out, &errb); code != exitcode.OK {
		t.Fatalf("K6_OUT run: exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if n := points("k6out.json.gz", true); n != len(rows("k6out.csv", false))-1 || n == 0 {
		t.Errorf("K6_OUT: %d JSON points, CSV rows %d", n, len(rows("k6out.csv", false))-1)
	}
}

// TestK6OutputOptionErrorsStopBeforeLoad: a csv timeFormat or option k6
// does not have, in the argument or in K6_CSV_TIME_FORMAT, is exit 2
// naming it and the formats there are, before any request.
func TestK6OutputOptionErrorsStopBeforeLoad(t *testing.T) {
	url, n := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := writeGetScript(t, dir)
	for _, tc := range []struct {
		name string
		out  string
		env  string
		want string
	}{
		{"bad timeFormat", "csv=fileName=" + filepath.Join(dir, "a.csv") + ",timeFormat=iso", "", `time format "iso": want one of rfc3339, rfc3339_nano, unix, unix_micro, unix_milli, unix_nano`},
		{"bad env timeFormat", "csv=" + filepath.Join(dir, "b.csv"), "epoch", `K6_CSV_TIME_FORMAT: time format "epoch"`},
		{"unknown option", "csv=fileName=" + filepath.Join(dir, "c.csv") + ",compress=yes", "", `unknown option "compress"`},
		{"bad saveInterval", "csv=fileName=" + filepath.Join(dir, "d.csv") + ",saveInterval=soon", "", `saveInterval "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("K6_CSV_TIME_FORMAT", tc.env)
			var out, errb bytes.Buffer
			code := executeK6(context.Background(), []string{"run", script, "-e", "URL=" + url, "--quiet", "--out", tc.out}, &out, &errb)
			if code != exitcode.Usage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, errb.String(), exitcode.Usage, tc.want)
			}
		})
	}
	if got := n.Load(); got != 0 {
		t.Errorf("%d requests sent, want none", got)
	}
}

// TestK6TagsVariableTagsEverySample: K6_TAGS (k6's name:value pairs,
// comma-separated; name=value also taken) tags every sample, as --tag
// does, and --tag wins over it.
func TestK6TagsVariableTagsEverySample(t *testing.T) {
	url, _ := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := writeGetScript(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want map[string]string
		not  []string
	}{
		{"K6_TAGS", nil, map[string]string{"env": "staging", "team": "qa"}, nil},
		{"--tag wins", []string{"--tag", "owner=me"}, map[string]string{"owner": "me"}, []string{"env", "team"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("K6_TAGS", "env:staging, team=qa")
			jsonOut := filepath.Join(t.TempDir(), "out.json")
			var out, errb bytes.Buffer
			args := append([]string{"run", script, "-e", "URL=" + url, "--quiet", "--out", "json=" + jsonOut}, tc.args...)
			if code := executeK6(context.Background(), args, &out, &errb); code != exitcode.OK {
				t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
			}
			f, err := os.Open(jsonOut)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			points := 0
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var line struct {
					Type string
					Data struct{ Tags map[string]string }
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatal(err)
				}
				if line.Type != "Point" {
					continue
				}
				points++
				for k, v := range tc.want {
					if line.Data.Tags[k] != v {
						t.Fatalf("a point without %s=%s: %s", k, v, sc.Bytes())
					}
				}
				for _, k := range tc.not {
					if _, ok := line.Data.Tags[k]; ok {
						t.Fatalf("a point with %s although --tag was given: %s", k, sc.Bytes())
					}
				}
			}
			if points == 0 {
				t.Fatal("no points")
			}
		})
	}
}
