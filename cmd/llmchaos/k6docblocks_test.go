package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// k6DocsEnv names a checkout of grafana/k6-docs (its root, its
// docs/sources/k6 folder or one version's folder under it). The docs carry
// no licence, so llmchaos keeps none of their text: the test reads the
// code blocks from there at run time; make k6-docs K6_DOCS=DIR runs it.
const k6DocsEnv = "LLMCHAOS_K6_DOCS"

// k6DocsBinEnv, when set, names the llmchaos binary the blocks run through
// in place of this tree's (to compare a branch's build); k6DocsOnlyEnv
// keeps the blocks whose file:line contains its value.
const (
	k6DocsBinEnv  = "LLMCHAOS_K6_DOCS_BIN"
	k6DocsOnlyEnv = "LLMCHAOS_K6_DOCS_ONLY"
)

// k6DocsVersionDir is the folder of the docs of the current k6 version
// under what LLMCHAOS_K6_DOCS names: next/ (the unreleased docs, which
// k6's own docs CI runs), else the newest vX.Y.x folder.
func k6DocsVersionDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv(k6DocsEnv)
	if root == "" {
		t.Skipf("%s is not set: it names a checkout of grafana/k6-docs (no licence, not kept here); "+
			"make k6-docs K6_DOCS=DIR runs this test", k6DocsEnv)
	}
	if fi, err := os.Stat(filepath.Join(root, "docs", "sources", "k6")); err == nil && fi.IsDir() {
		root = filepath.Join(root, "docs", "sources", "k6")
	}
	if _, err := os.Stat(filepath.Join(root, "_index.md")); err != nil {
		t.Fatalf("%s=%s is not a checkout of grafana/k6-docs (no docs/sources/k6/_index.md): %v", k6DocsEnv, os.Getenv(k6DocsEnv), err)
	}
	if fi, err := os.Stat(filepath.Join(root, "next")); err == nil && fi.IsDir() {
		return filepath.Join(root, "next")
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var best string
	var bestV [2]int
	for _, e := range entries {
		m := regexp.MustCompile(`^v(\d+)\.(\d+)\.x$`).FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		if v := [2]int{major, minor}; best == "" || v[0] > bestV[0] || v[0] == bestV[0] && v[1] > bestV[1] {
			best, bestV = e.Name(), v
		}
	}
	if best != "" {
		return filepath.Join(root, best)
	}
	if strings.HasPrefix(filepath.Base(root), "v") || filepath.Base(root) == "next" {
		return root // a version's folder itself
	}
	t.Fatalf("%s=%s holds neither next/ nor a vX.Y.x folder", k6DocsEnv, os.Getenv(k6DocsEnv))
	return ""
}

// k6DocBlock is one fenced code block of k6's docs.
type k6DocBlock struct {
	file string // the .md file, relative to the version's folder
	line int    // the line of its opening fence
	lang string
	src  string
	// mdk6 are the options of the <!-- md-k6:... --> comment before it,
	// the marks k6's docs CI (scripts/md-k6.py) reads: skip (it does not
	// run the block), nofail (error logs allowed; this test allows them
	// anyway), nothresholds (run
	// with --no-thresholds), fixedscenarios (never given -d), env.K=V
	// (an environment variable), arg.X (a k6 run argument).
	mdk6 []string
	// skipAll: the file is marked md-k6:skipall.
	skipAll bool
}

func (b k6DocBlock) name() string { return b.file + ":" + strconv.Itoa(b.line) }

// k6DocsFence opens or closes a fenced block: its indentation, fence and
// info string.
var k6DocsFence = regexp.MustCompile("^([ \t]*)(```+|~~~+)[ \t]*([A-Za-z0-9_+-]*)")

// k6DocsMark is the md-k6 comment k6's docs put before a block.
var k6DocsMark = regexp.MustCompile(`^\s*<!--\s*md-k6:\s*(\S+?)\s*-->\s*$`)

// k6DocsParam is Hugo's {{< param "NAME" >}} in a block (the jslib
// versions), filled from the front matter of docs/sources/k6/_index.md as
// k6's docs CI fills it.
var k6DocsParam = regexp.MustCompile(`\{\{\s*<\s*param\s+"([A-Z0-9_]+)"\s*>\s*\}\}`)

// docParams reads the ALL_CAPS keys of an _index.md front matter.
func docParams(indexMD string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(indexMD)
	if err != nil {
		return out
	}
	key := regexp.MustCompile(`^\s*([A-Z0-9_]+)\s*:\s*(\S.*?)\s*$`)
	for _, l := range strings.Split(string(b), "\n") {
		if m := key.FindStringSubmatch(l); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// k6DocBlocks reads every fenced block of every .md file under dir.
func k6DocBlocks(t *testing.T, dir string, params map[string]string) []k6DocBlock {
	t.Helper()
	var out []k6DocBlock
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, parseDocBlocks(filepath.ToSlash(rel), string(b), params)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// parseDocBlocks splits one markdown file into its fenced blocks, each
// without the indentation of its fence, with the md-k6 marks before it.
func parseDocBlocks(file, text string, params map[string]string) []k6DocBlock {
	lines := strings.Split(text, "\n")
	skipAll := regexp.MustCompile(`<!--\s*md-k6:skipall\s*-->`).MatchString(text)
	var out []k6DocBlock
	for i := 0; i < len(lines); i++ {
		m := k6DocsFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence, lang := m[1], m[2], strings.ToLower(m[3])
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			c := k6DocsFence.FindStringSubmatch(lines[j])
			if c != nil && c[3] == "" && strings.HasPrefix(c[2], fence[:3]) && len(c[2]) >= len(fence) &&
				strings.TrimSpace(lines[j]) == c[2] {
				break
			}
			body = append(body, strings.TrimPrefix(lines[j], indent))
		}
		// The md-k6 mark: the nearest comment above, past blank lines and
		// other comments (an eslint one may sit between).
		var mdk6 []string
		for k := i - 1; k >= 0; k-- {
			l := strings.TrimSpace(lines[k])
			if l == "" {
				continue
			}
			if mm := k6DocsMark.FindStringSubmatch(l); mm != nil {
				for _, o := range strings.Split(mm[1], ",") {
					mdk6 = append(mdk6, strings.TrimSpace(o))
				}
				break
			}
			if strings.HasPrefix(l, "<!--") && strings.HasSuffix(l, "-->") {
				continue
			}
			break
		}
		src := strings.Join(body, "\n")
		src = k6DocsParam.ReplaceAllStringFunc(src, func(p string) string {
			if v, ok := params[k6DocsParam.FindStringSubmatch(p)[1]]; ok {
				return v
			}
			return p
		})
		out = append(out, k6DocBlock{file: file, line: i + 1, lang: lang, src: src, mdk6: mdk6, skipAll: skipAll})
		i = j
	}
	return out
}

// k6DocsScriptLangs are the info strings of the blocks that are scripts.
var k6DocsScriptLangs = []string{"javascript", "js", "typescript", "ts"}

// k6DocsDefault and k6DocsExec: a script k6 runs has a default export,
// or scenarios whose exec names a function it exports; a block of
// options alone is a part of a script (k6 gives exit 104 for it:
// "function 'default' not found in exports", internal/cmd/config.go).
var (
	k6DocsDefault = regexp.MustCompile(`(?m)^\s*export\s+default\b`)
	k6DocsExec    = regexp.MustCompile(`\bexec\s*:\s*['"]([A-Za-z_$][A-Za-z0-9_$]*)['"]`)
)

// k6DocsComplete reports whether the block is a whole script.
func k6DocsComplete(src string) bool {
	if k6DocsDefault.MatchString(src) {
		return true
	}
	m := k6DocsExec.FindStringSubmatch(src)
	return m != nil && regexp.MustCompile(`(?m)^\s*export\s+(async\s+)?(function\s*\*?\s*|(const|let|var)\s+)`+
		regexp.QuoteMeta(m[1])+`\b`).MatchString(src)
}

// k6DocsImport matches a static import's or a require's module specifier.
var k6DocsImport = regexp.MustCompile(`(?m)(?:^\s*import\s+(?:[^'";]*?\s+from\s+)?|\brequire\(\s*|\bimport\(\s*)['"]([^'"]+)['"]`)

// k6SummaryJSLib is the k6-summary jslib's URL, which llmchaos builds in
// (k6/x/summary).
const k6SummaryJSLib = "https://jslib.k6.io/k6-summary/"

// unsupportedImport is the first module the block imports that llmchaos
// does not have ("" when it has them all).
func unsupportedImport(src string) string {
	for _, m := range k6DocsImport.FindAllStringSubmatch(src, -1) {
		spec := m[1]
		if slices.Contains(js.ModuleNames(), spec) || strings.HasPrefix(spec, k6SummaryJSLib) {
			continue
		}
		return spec
	}
	return ""
}

// k6DocsHost is an http(s) URL's origin in a block: every host a block
// names is served by the stand-in, credentials kept; a host in
// k6DocsNotServed is left as written.
var k6DocsHost = regexp.MustCompile(`\b(https?)://([^/@"'\s` + "`" + `]+@)?([A-Za-z0-9.-]+(?::\d+)?|\$\{[^}]+\})`)

// k6DocsNotServed are the hosts a block names that are not a target: the
// module registry (a block that imports from it is not run, but a string
// may name it) and placeholders filled at run time.
var k6DocsNotServed = []string{"jslib.k6.io"}

// withDocStandInHosts is the block with the host of every URL it names
// replaced by the stand-in's (over TLS for https) and a quoted bare
// cookie domain by the stand-in's IP.
func withDocStandInHosts(src string, h *k6ExampleHosts) string {
	src = k6ExampleDomain.ReplaceAllString(src, "${1}127.0.0.1${3}")
	src = regexp.MustCompile(`(["'])(test\.k6\.io|quickpizza\.grafana\.com|httpbin\.test\.k6\.io|test-api\.k6\.io)(["'])`).
		ReplaceAllString(src, "${1}127.0.0.1${3}")
	return k6DocsHost.ReplaceAllStringFunc(src, func(m string) string {
		sub := k6DocsHost.FindStringSubmatch(m)
		if slices.Contains(k6DocsNotServed, sub[3]) || strings.HasPrefix(sub[3], "${") {
			return m
		}
		addr := h.plain
		if sub[1] == "https" {
			addr = h.tls
		}
		return sub[1] + "://" + sub[2] + addr
	})
}

// k6DocsCap is how long a block may run as written: one that is still
// running then is cut and run again with --duration k6DocsShortDuration,
// as is one whose options name more than this in `duration` values (a
// duration, or stages' durations, summed). k6's docs CI gives every block
// -d 2s; here a block that ends within the cap keeps its own options.
const (
	k6DocsCap           = 15 * time.Second
	k6DocsShortDuration = "2s"
	// k6DocsWall bounds a shortened run: 2 s, the default gracefulStop
	// of 30 s for an iteration that sleeps, setup and teardown.
	k6DocsWall = 75 * time.Second
)

// k6DocsDuration is a `duration: '...'` value in a block.
var k6DocsDuration = regexp.MustCompile(`\bduration\s*:\s*['"]([0-9hms.]+)['"]`)

// namedDuration sums the `duration` values a block names.
func namedDuration(src string) time.Duration {
	var sum time.Duration
	for _, m := range k6DocsDuration.FindAllStringSubmatch(src, -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			sum += d
		}
	}
	return sum
}

// docRun is one run of a block and what the test read of it.
type docRun struct {
	code      int
	timedOut  bool
	shortened bool // run with --duration k6DocsShortDuration
	out       string
	console   string
	unserved  []string // requests the stand-in answered 404 (paths it lacks)
	crossed   []string // the thresholds the summary export marks failed
}

// crossed lists the thresholds the export marks failed, as metric: expression.
func (s summaryExport) crossed() []string {
	var out []string
	for name, m := range s.Metrics {
		var th map[string]bool
		if raw, ok := m["thresholds"]; ok && json.Unmarshal(raw, &th) == nil {
			for expr, failed := range th {
				if failed {
					out = append(out, name+": "+expr)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// The classes of a failure. Those in k6DocsSurveyClasses are the survey's
// own limits, not llmchaos's; every other one fails the test.
const (
	classDataFile    = "needs data file"
	classFragment    = "doc fragment"
	classStandIn     = "stand-in gap"
	classTimeCap     = "time cap"
	classSkipped     = "md-k6:skip"
	classPlaceholder = "placeholder host"
	classThresholds  = "thresholds crossed"
	classGlobal      = "missing global"
	classOption      = "unsupported option"
	classAPI         = "missing API"
	classException   = "script exception"
	classExit        = "exit code"
)

// k6DocsSurveyClasses are the failures the survey causes, with why each is
// not llmchaos's.
var k6DocsSurveyClasses = map[string]string{
	classDataFile: "the block opens a file (CSV, JSON, a binary) that the docs do not ship and do not describe " +
		"well enough to write",
	classFragment: "the block uses a name it does not define (defined elsewhere on its page, or a placeholder " +
		"such as `...`): k6 fails the same way",
	classStandIn: "the block asked the stand-in for a path it does not serve (404): the real host's answer is " +
		"unknown here, and the failure follows from the 404",
	classSkipped: "k6's own docs CI does not run the block (md-k6:skip: it needs a service, a file or a " +
		"setting the page leaves out, or fails on purpose), so k6's outcome is unknown; failures of llmchaos's " +
		"kinds (a missing global, option or API) are not put here",
	classPlaceholder: "the block sends requests to a host the docs name as a placeholder (example.com, " +
		"your.example.domain): nothing answers there as the block expects, in k6 either",
	classTimeCap: "the block still ran " + k6DocsWall.String() + " after it was started with --duration " +
		k6DocsShortDuration + " (its iterations or setup sleep longer)",
}

// k6Globals are the names a k6 script may use without defining them:
// k6's own globals and ECMAScript's. A ReferenceError on one of them is
// llmchaos's (a global it lacks); on any other name the block is a
// fragment of its page.
var k6Globals = []string{"crypto", "open", "console", "require", "module", "exports", "__ENV", "__VU", "__ITER",
	"setTimeout", "clearTimeout", "setInterval", "clearInterval", "global", "globalThis", "TextEncoder",
	"TextDecoder", "URL", "URLSearchParams", "structuredClone", "atob", "btoa", "performance", "Intl", "WeakRef",
	"AbortController", "Event", "EventTarget", "ReadableStream", "WritableStream", "Headers", "Request", "Response",
	"fetch", "queueMicrotask"}

var (
	reReference = regexp.MustCompile(`ReferenceError: ([A-Za-z_$][A-Za-z0-9_$]*) is not defined`)
	reOpenFile  = regexp.MustCompile(`open [^:\n]+: (?:open [^:\n]+: )?no such file or directory`)
	reOption    = regexp.MustCompile(`(?:warning: |level=warning msg=")options\.\S+ (?:\(.*?\) )?is (?:a k6 option llmchaos does not support|k6's \S+ \(k6 reads option names in any case\), which llmchaos does not support|not supported)`)
	reAPI       = regexp.MustCompile(`(?i).{0,100}(not supported|not implemented|has no (?:member|method)|is not a function|Object has no member).{0,60}`)
	reIterLine  = regexp.MustCompile(`^(scenario [^,]+, vu \d+|\d+ failed iteration\(s\)): `)
	// reIterLog is an iteration's exception as the binary logs it under
	// the name k6 (k6's text log line).
	reIterLog  = regexp.MustCompile(`level=error msg="((?:[^"\\]|\\.)*)" source=stacktrace`)
	reLoad     = regexp.MustCompile(`llmchaos: load: SyntaxError: .*`)
	reSyntax   = regexp.MustCompile(`SyntaxError.{0,120}`)
	reEllipsis = regexp.MustCompile(`(?m)^\s*(//\s*)?(\.\.\.|…)\s*$`)
	// rePlaceholderHost is a host the docs name as a placeholder, which
	// has no real answer to stand in for.
	rePlaceholderHost = regexp.MustCompile(`https?://([^/'"\s]*@)?(([a-z0-9-]+\.)*example\.(com|org|net|domain)|your\.[a-z.]+|(my)?website\.com)\b`)
)

// k6Rejects are the option errors k6 gives exit 104 for as well (read in
// k6's source): a block that has one gets k6's verdict when llmchaos
// rejects it with exit 104.
var k6Rejects = []struct {
	llmchaos *regexp.Regexp
	k6       string
	// shortened: only for a run given --duration.
	shortened bool
}{
	{regexp.MustCompile(`options\.tlsVersion\.\w+ "ssl3\.0"`),
		`k6 rejects "ssl3.0" (lib/options.go; lib/options_test.go "Unsupported version")`, false},
	{regexp.MustCompile(`options\.scenarios\.\S+\.executor is missing`),
		`"scenario '%s' doesn't have a specified executor type" (lib/executors.go)`, false},
	{regexp.MustCompile(`\.stages: give at least one`), `"at least one stage has to be specified" (lib/executor/helpers.go)`, false},
	// A block of exec scenarios only, run with --duration: k6's -d
	// replaces the scenarios with one that runs default.
	{regexp.MustCompile(`the script exports no default function`),
		`"executor default: function 'default' not found in exports" (internal/cmd/config.go)`, true},
}

// k6Crosses are the blocks whose thresholds k6 crosses as well, by
// arithmetic on the block itself (not on what a host answers): a block
// whose run exits 99 passes when it crossed exactly these thresholds.
var k6Crosses = []struct {
	file       string
	thresholds []string // the crossed thresholds' metric names, before any {tag}
	why        string
}{
	// Its Counters add the bytes of each request's header names and
	// values: every request carries at least k6's User-Agent ("User-Agent"
	// and "Grafana k6/<version>", over 25 bytes), and 10 VUs for 10 s
	// with a 1 s sleep send about 200, so the sums pass 1024 and 2048 well
	// before the end; test.k6.io's home page alone is over 2048 bytes.
	{"examples/tracking-data-per.md", []string{"endpoint_data_recv", "endpoint_data_sent", "endpoint_data_sent"},
		"its byte counters pass 1024 and 2048 with k6's own headers (200 requests, 25+ bytes each)"},
}

// crossedAsInK6 says why k6 crosses the same thresholds, or "".
func crossedAsInK6(b k6DocBlock, crossed []string) string {
	for _, c := range k6Crosses {
		if c.file != b.file || len(c.thresholds) != len(crossed) {
			continue
		}
		var names []string
		for _, x := range crossed {
			name, _, _ := strings.Cut(x, ":")
			name, _, _ = strings.Cut(name, "{")
			names = append(names, name)
		}
		slices.Sort(names)
		if slices.Equal(names, c.thresholds) {
			return c.why
		}
	}
	return ""
}

// judgeDocRun says whether a run gives k6's outcome for the block and, if
// not, the class and the reason of the failure (for a pass, reason says
// why a code other than 0 is k6's).
func judgeDocRun(b k6DocBlock, r docRun) (ok bool, class, reason string) {
	want := exitcode.OK
	switch {
	case strings.Contains(b.src, "test.abort("):
		want = exitcode.ScriptAborted
	case strings.Contains(b.src, "test.fail("):
		want = exitcode.ScriptMarkedFailed
	}
	// Long lines are folded at spaces: read the output as one line.
	all := strings.Join(strings.Fields(r.out+"\n"+r.console), " ")
	if r.code == exitcode.ScriptInvalidConfig {
		for _, rej := range k6Rejects {
			if rej.llmchaos.MatchString(all) && (r.shortened || !rej.shortened) {
				return true, "", "k6 rejects it too, exit 104: " + rej.k6
			}
		}
	}
	// An iteration's exception: its line and the count at the end.
	var iterErrs []string
	for _, seg := range strings.Split(all, "llmchaos run: ")[1:] {
		if reIterLine.MatchString(seg) {
			iterErrs = append(iterErrs, clip(seg, 240))
		}
	}
	for _, m := range reIterLog.FindAllString(all, -1) {
		iterErrs = append(iterErrs, clip(m, 240))
	}
	passed := !r.timedOut && (r.code == exitcode.OK || r.code == want) && len(iterErrs) == 0 &&
		reOption.FindString(all) == ""
	if passed {
		return true, "", ""
	}
	if r.code == exitcode.Thresholds && len(iterErrs) == 0 && !r.timedOut && reOption.FindString(all) == "" {
		if why := crossedAsInK6(b, r.crossed); why != "" {
			return true, "", "k6 crosses them too, exit 99: " + why
		}
	}
	first := func(ss ...string) string {
		for _, s := range ss {
			if s != "" {
				return strings.TrimSpace(s)
			}
		}
		return fmt.Sprintf("exit %d", r.code)
	}
	// llmchaos's kinds first: a global, an option or an API it lacks.
	if m := reReference.FindStringSubmatch(all); m != nil && slices.Contains(k6Globals, m[1]) {
		return false, classGlobal, m[0]
	}
	if m := reOption.FindString(all); m != "" {
		return false, classOption, m
	}
	if m := reAPI.FindString(all); m != "" {
		return false, classAPI, strings.TrimSpace(m)
	}
	if m := reReference.FindStringSubmatch(all); m != nil {
		return false, classFragment, m[0]
	}
	if m := reOpenFile.FindString(all); m != "" {
		return false, classDataFile, m
	}
	if m := reLoad.FindString(all); m != "" {
		// k6 parses with the same parser (grafana/sobek; esbuild for
		// TypeScript): the block is not a script k6 runs either.
		return false, classFragment, clip(m, 160)
	}
	if m := reSyntax.FindString(all); m != "" && reEllipsis.MatchString(b.src) {
		return false, classFragment, m + " (the block has a `...` line for code it leaves out)"
	}
	if r.timedOut {
		return false, classTimeCap, fmt.Sprintf("still running after %s with --duration %s", k6DocsWall, k6DocsShortDuration)
	}
	what := first(iterErrs...)
	if r.code == exitcode.Thresholds && len(r.crossed) > 0 {
		what = "exit 99, crossed " + strings.Join(r.crossed, "; ")
	}
	if len(r.unserved) > 0 {
		return false, classStandIn, "unserved " + strings.Join(r.unserved, ", ") + "; " + what
	}
	if m := rePlaceholderHost.FindString(b.src); m != "" {
		return false, classPlaceholder, m + ": " + what
	}
	if slices.Contains(b.mdk6, "skip") {
		return false, classSkipped, what
	}
	switch {
	case r.code == exitcode.Thresholds && len(r.crossed) > 0:
		return false, classThresholds, strings.Join(r.crossed, "; ")
	case len(iterErrs) > 0:
		return false, classException, iterErrs[0]
	}
	return false, classExit, fmt.Sprintf("exit %d, k6 gives %d: %s", r.code, want, lastLines(r.out, 3))
}

// lastLines is the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, strings.TrimSpace(l))
		}
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

// runDocBlock runs the block through the binary called as k6 in a fresh
// folder, hosts rewritten to the stand-in's: as written when it names
// no more time than the cap and ends within it, else with --duration.
func runDocBlock(t *testing.T, k6 string, hosts *k6ExampleHosts, b k6DocBlock) docRun {
	t.Helper()
	src := withDocStandInHosts(b.src, hosts)
	short := !slices.Contains(b.mdk6, "fixedscenarios") && namedDuration(b.src) > k6DocsCap
	r := runDocScript(t, k6, hosts, b, src, short)
	if r.timedOut && !short && !slices.Contains(b.mdk6, "fixedscenarios") {
		r = runDocScript(t, k6, hosts, b, src, true)
	}
	return r
}

func runDocScript(t *testing.T, k6 string, hosts *k6ExampleHosts, b k6DocBlock, src string, short bool) docRun {
	t.Helper()
	work := t.TempDir()
	name := "script.js"
	if b.lang == "typescript" || b.lang == "ts" {
		name = "script.ts"
	}
	if err := os.WriteFile(filepath.Join(work, name), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--no-color", "--quiet", "--console-output", "console.txt", "--summary-export", "summary.json"}
	env := append(os.Environ(), "SSL_CERT_FILE="+hosts.certFile)
	for _, o := range b.mdk6 {
		switch {
		case strings.HasPrefix(o, "arg."):
			args = append(args, strings.TrimPrefix(o, "arg."))
		case strings.HasPrefix(o, "env."):
			kv := strings.TrimPrefix(o, "env.")
			if !strings.Contains(kv, "=") {
				kv += "="
			}
			env = append(env, kv)
		case o == "nothresholds":
			args = append(args, "--no-thresholds")
		}
	}
	wall := k6DocsCap
	if short {
		args = append(args, "--duration", k6DocsShortDuration)
		wall = k6DocsWall
	}
	if slices.Contains(b.mdk6, "fixedscenarios") {
		wall = k6DocsWall
	}
	args = append(args, name)
	ctx, cancel := context.WithTimeout(context.Background(), wall)
	defer cancel()
	cmd := exec.CommandContext(ctx, k6, args...)
	cmd.Dir = work
	cmd.Env = env
	before := hosts.reqs.unknownCount()
	out, err := cmd.CombinedOutput()
	r := docRun{shortened: short, out: string(out)}
	if ctx.Err() != nil {
		r.timedOut = true
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		r.code = ee.ExitCode()
	} else if err != nil && !r.timedOut {
		t.Fatal(err)
	}
	if c, err := os.ReadFile(filepath.Join(work, "console.txt")); err == nil {
		r.console = string(c)
	}
	if b, err := os.ReadFile(filepath.Join(work, "summary.json")); err == nil {
		var sum summaryExport
		if json.Unmarshal(b, &sum) == nil {
			r.crossed = sum.crossed()
		}
	}
	// The stand-in is shared by parallel runs: a run's unserved paths are
	// those its own script names.
	for _, u := range hosts.reqs.unknownSince(before) {
		path := u[strings.IndexByte(u, ' ')+1:]
		if strings.Contains(b.src, strings.SplitN(path, "?", 2)[0]) && !slices.Contains(r.unserved, u) {
			r.unserved = append(r.unserved, u)
		}
	}
	return r
}

// k6DocOutcome is one block's verdict, for the table.
type k6DocOutcome struct {
	block         k6DocBlock
	class, reason string
	shortened     bool
}

// TestK6DocsBlocksRunAsInK6 runs every code block of k6's documentation
// (the current version's, from the checkout LLMCHAOS_K6_DOCS names) that
// is a whole script importing only modules llmchaos has, unmodified but
// for the hosts it names, through the binary called as k6 against the
// stand-in of k6's examples, and holds each to the outcome k6 gives: exit
// 0 (the code of its own exec.test.abort/fail; 104 for options k6 rejects
// too, k6Rejects), no failed iteration, no k6 option llmchaos ignores. (A
// line the block logs with console.error is its own output, as in k6:
// k6's docs CI fails such a block unless md-k6:nofail, this test does
// not.) It prints a table: blocks, supported, passed, and the
// failures by class with their reasons; a failure outside the survey's
// own classes (k6DocsSurveyClasses) fails the test.
func TestK6DocsBlocksRunAsInK6(t *testing.T) {
	dir := k6DocsVersionDir(t)
	params := docParams(filepath.Join(filepath.Dir(dir), "_index.md"))
	blocks := k6DocBlocks(t, dir, params)
	var k6 string
	if bin := os.Getenv(k6DocsBinEnv); bin == "" {
		k6 = k6Binary(t)
	} else {
		// Another build's binary (a branch's), under the name k6.
		k6 = filepath.Join(t.TempDir(), "k6")
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, k6); err != nil {
			t.Fatal(err)
		}
	}
	hosts := startK6ExampleHosts(t)

	var scripts, fragments, skipAll int
	notSupported := map[string]int{}
	var run []k6DocBlock
	for _, b := range blocks {
		if !slices.Contains(k6DocsScriptLangs, b.lang) {
			continue
		}
		scripts++
		switch {
		case b.skipAll:
			skipAll++
		case !k6DocsComplete(b.src):
			fragments++
		default:
			if spec := unsupportedImport(b.src); spec != "" {
				notSupported[k6DocsModuleFamily(spec)]++
				continue
			}
			run = append(run, b)
		}
	}
	if only := os.Getenv(k6DocsOnlyEnv); only != "" {
		run = slices.DeleteFunc(run, func(b k6DocBlock) bool { return !strings.Contains(b.name(), only) })
	}
	var mu sync.Mutex
	var outcomes []k6DocOutcome
	t.Run("blocks", func(t *testing.T) {
		for _, b := range run {
			t.Run(b.name(), func(t *testing.T) {
				t.Parallel()
				r := runDocBlock(t, k6, hosts, b)
				ok, class, reason := judgeDocRun(b, r)
				if !ok || os.Getenv(k6DocsOnlyEnv) != "" {
					t.Logf("%s: %s (exit %d)\n%s", class, reason, r.code, r.out)
				}
				mu.Lock()
				outcomes = append(outcomes, k6DocOutcome{block: b, class: class, reason: reason, shortened: r.shortened})
				mu.Unlock()
			})
		}
	})
	sort.Slice(outcomes, func(i, j int) bool { return outcomes[i].block.name() < outcomes[j].block.name() })

	var tbl strings.Builder
	w := bufio.NewWriter(&tbl)
	fmt.Fprintf(w, "k6 docs %s: %d fenced blocks, %d JavaScript/TypeScript\n", filepath.Base(dir), len(blocks), scripts)
	fmt.Fprintf(w, "  %d in files marked md-k6:skipall, %d not whole scripts (no default export or options)\n", skipAll, fragments)
	var fams []string
	n := 0
	for f, c := range notSupported {
		fams = append(fams, fmt.Sprintf("%s %d", f, c))
		n += c
	}
	sort.Strings(fams)
	fmt.Fprintf(w, "  %d import a module llmchaos does not have: %s\n", n, strings.Join(fams, ", "))
	byClass := map[string][]k6DocOutcome{}
	passed, shortened := 0, 0
	var noted []k6DocOutcome
	for _, o := range outcomes {
		if o.shortened {
			shortened++
		}
		if o.class == "" {
			passed++
			if o.reason != "" {
				noted = append(noted, o)
			}
			continue
		}
		byClass[o.class] = append(byClass[o.class], o)
	}
	fmt.Fprintf(w, "supported (whole scripts, modules llmchaos has): %d; passed %d (%d run with --duration %s)\n",
		len(outcomes), passed, shortened, k6DocsShortDuration)
	for _, o := range noted {
		fmt.Fprintf(w, "    passed, %s: %s\n", o.block.name(), clip(o.reason, 200))
	}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		_, si := k6DocsSurveyClasses[classes[i]]
		_, sj := k6DocsSurveyClasses[classes[j]]
		if si != sj {
			return !si
		}
		return classes[i] < classes[j]
	})
	var llmchaosFailures int
	for _, c := range classes {
		cause := "llmchaos"
		if _, ok := k6DocsSurveyClasses[c]; ok {
			cause = "survey"
		} else {
			llmchaosFailures += len(byClass[c])
		}
		fmt.Fprintf(w, "%-20s %4d  (%s)\n", c, len(byClass[c]), cause)
		for _, o := range byClass[c] {
			fmt.Fprintf(w, "    %s: %s\n", o.block.name(), clip(o.reason, 200))
		}
	}
	for _, c := range classes {
		if why, ok := k6DocsSurveyClasses[c]; ok {
			fmt.Fprintf(w, "%s: not llmchaos's: %s\n", c, why)
		}
	}
	_ = w.Flush()
	t.Log("\n" + tbl.String())
	if llmchaosFailures > 0 {
		t.Errorf("%d blocks of k6's docs do not give k6's outcome for a reason of llmchaos's (table above)", llmchaosFailures)
	}
}

// clip shortens s to n bytes, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// k6DocsModuleFamily groups a module specifier for the table: k6's own
// modules by name, remote modules by host and first path element, local
// files as "./file".
func k6DocsModuleFamily(spec string) string {
	switch {
	case strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://"):
		rest := spec[strings.Index(spec, "://")+3:]
		parts := strings.SplitN(rest, "/", 3)
		if len(parts) > 1 {
			return parts[0] + "/" + parts[1]
		}
		return parts[0]
	case strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/"):
		return "./file"
	}
	return spec
}
