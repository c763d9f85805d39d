package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

// The docs test: every fenced code block of README.md and docs/*.md is
// run or validated, so that what the docs show is what llmchaos does.
//
// What a block gets depends on its language and on a marker, an HTML
// comment on the line right before its fence:
//
//	<!-- docs-test: skip CATEGORY: REASON -->  not run, reported as a skip with the reason;
//	                                           CATEGORY is one of docsSkipCategories
//	<!-- docs-test: output -->                 a sample of output (```text, a table), not a command
//	<!-- docs-test: excerpt: REASON -->        YAML that is part of a larger document (a fault's
//	                                           params, a CI file): parsed as YAML only, reported as a skip
//	<!-- docs-test: fragment [at DIR] -->      top-level keys of an experiment: merged into a small
//	                                           experiment (docsFragmentBase) that must validate
//	<!-- docs-test: at DIR [env=NAME] -->      a whole experiment or suite validated as a file in DIR
//	                                           of the repository (its relative paths resolve from there);
//	                                           env=NAME: the API key variable it names is set (to a dummy)
//	<!-- docs-test: sim [duration=D] -->       a shell block run with a simulator the test started
//
// Without a marker: ```yaml with kind Experiment or Suite is validated
// (validate, whose warnings fail the test too) and dry-run (run --dry-run,
// suite --dry-run); ```sh and ```bash blocks are run by bash (set -e,
// pipefail) in a scratch directory that links the repository's
// experiments/, examples/, deploy/ and scripts/, with the binary the
// tests built as llmchaos (`go run ./cmd/llmchaos` is read as llmchaos)
// and 127.0.0.1:8000 to 8002 rewritten to free ports; ```js and ```ts are
// dry-run as scripts. Any other block, or YAML that is not a whole
// experiment, must carry a marker: nothing is skipped by guessing.
//
// `sim` starts `llmchaos sim` on the block's 127.0.0.1:8000 (its
// /health answering 200) before the block; duration=D adds --duration D to
// every `llmchaos load` and `llmchaos run` of the block, so that a load
// the docs show for 30 s runs for D. A block that starts a simulator
// itself (`llmchaos sim ... &`) gets --listen on the rewritten port. Each
// block's processes are killed with it (its own process group) when it
// ends or after docsShellTimeout.

// docsSkipCategories are the reasons a block may be left unrun for.
var docsSkipCategories = []string{
	"kubernetes",  // needs a cluster (the Kubernetes tests cover it)
	"gpu",         // needs an NVIDIA GPU
	"docker",      // needs a Docker engine
	"netns",       // needs root and network namespaces
	"engine",      // needs a real inference engine (llama.cpp, vLLM, SGLang)
	"soak",        // runs minutes of load; a named test or target covers it
	"manual",      // interactive or runs until stopped (a console, a supervisor loop)
	"placeholder", // names things the reader fills in (FILE, a host, a run id)
	"config",      // a file for another program (a systemd unit, a tsconfig.json)
}

// docsShellTimeout bounds one shell block.
const docsShellTimeout = 60 * time.Second

// docsFragmentBase is the experiment a `fragment` block's keys replace
// keys of.
const docsFragmentBase = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: docs-fragment}
target: {sim: {replicas: 2}}
workload: {preset: chat, rate: 5, duration: 60s}
`

// docBlock is one fenced code block of a docs page.
type docBlock struct {
	file   string // relative to the repository root
	line   int    // of the opening fence
	lang   string
	marker string // the docs-test marker's text, "" without one
	body   string
}

func (b docBlock) name() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var docsMarker = regexp.MustCompile(`^<!-- docs-test: (.*?) -->$`)

// docBlocks returns the fenced blocks of README.md and docs/*.md.
func docBlocks(t *testing.T, root string) []docBlock {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	var blocks []docBlock
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		lines := strings.Split(string(raw), "\n")
		for i := 0; i < len(lines); i++ {
			info, ok := strings.CutPrefix(lines[i], "```")
			if !ok {
				continue
			}
			b := docBlock{file: rel, line: i + 1, lang: strings.Fields(info + " x")[0]}
			if b.lang == "x" {
				b.lang = ""
			}
			if i > 0 {
				if m := docsMarker.FindStringSubmatch(lines[i-1]); m != nil {
					b.marker = m[1]
				}
			}
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
				j++
			}
			if j == len(lines) {
				t.Fatalf("%s: the code block never ends", b.name())
			}
			b.body = strings.Join(lines[i+1:j], "\n") + "\n"
			blocks = append(blocks, b)
			i = j
		}
	}
	return blocks
}

// TestDocsCodeBlocks runs or validates every code block of the docs.
func TestDocsCodeBlocks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlocks(t, root)
	if len(blocks) < 50 {
		t.Fatalf("found %d code blocks in README.md and docs/*.md; the parser is broken", len(blocks))
	}
	for _, b := range blocks {
		t.Run(b.name(), func(t *testing.T) {
			// Each block runs in its own directory on its own ports, so
			// the blocks run side by side (go test's -parallel bounds
			// how many); one that sets an environment variable cannot.
			if !strings.Contains(b.marker, " env=") {
				t.Parallel()
			}
			checkDocBlock(t, root, b)
		})
	}
}

func checkDocBlock(t *testing.T, root string, b docBlock) {
	word, rest, _ := strings.Cut(b.marker, " ")
	switch word {
	case "skip":
		cat, reason, ok := strings.Cut(rest, ":")
		if !ok || strings.TrimSpace(reason) == "" || !slices.Contains(docsSkipCategories, cat) {
			t.Fatalf("%s: want <!-- docs-test: skip CATEGORY: REASON --> with CATEGORY one of %v, got %q", b.name(), docsSkipCategories, b.marker)
		}
		t.Skipf("skipped (%s):%s", cat, reason)
	case "output":
		t.Skip("a sample of output, not a command")
	case "excerpt:":
		if strings.TrimSpace(rest) == "" {
			t.Fatalf("%s: an excerpt marker needs a reason", b.name())
		}
		if b.lang != "yaml" {
			t.Fatalf("%s: excerpt is for YAML blocks", b.name())
		}
		var v any
		if err := yaml.Unmarshal([]byte(b.body), &v); err != nil {
			t.Fatalf("%s: not YAML: %v", b.name(), err)
		}
		t.Skipf("excerpt, its YAML parsed only: %s", rest)
	}
	switch b.lang {
	case "yaml":
		checkDocYAML(t, root, b, word, rest)
	case "sh", "bash":
		if word != "" && word != "sim" {
			t.Fatalf("%s: marker %q does not apply to a shell block", b.name(), b.marker)
		}
		runDocShell(t, root, b, word == "sim", rest)
	case "js", "javascript", "ts", "typescript":
		if word != "" {
			t.Fatalf("%s: marker %q does not apply to a script block", b.name(), b.marker)
		}
		ext := ".js"
		if strings.HasPrefix(b.lang, "t") {
			ext = ".ts"
		}
		file := filepath.Join(t.TempDir(), "snippet"+ext)
		writeFile(t, file, b.body)
		mustRun(t, b, "run", file, "--dry-run")
	default:
		t.Fatalf("%s: a ```%s block needs a docs-test marker (output, skip CATEGORY: REASON, ...)", b.name(), b.lang)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustRun runs llmchaos in process and fails unless it exits 0 with no
// warning.
func mustRun(t *testing.T, b docBlock, args ...string) string {
	t.Helper()
	code, stdout, stderr := run(t, args...)
	if code != exitcode.OK {
		t.Fatalf("%s: llmchaos %s: exit %d\nstdout:\n%s\nstderr:\n%s\nthe block:\n%s", b.name(), strings.Join(args, " "), code, stdout, stderr, b.body)
	}
	if out := stdout + stderr; strings.Contains(strings.ToLower(out), "warning") {
		t.Fatalf("%s: llmchaos %s warns:\n%s\nthe block:\n%s", b.name(), strings.Join(args, " "), out, b.body)
	}
	return stdout
}

var docsKind = regexp.MustCompile(`(?m)^kind: *(Experiment|Suite)\s*$`)

func checkDocYAML(t *testing.T, root string, b docBlock, word, rest string) {
	body := b.body
	dir := t.TempDir()
	if word == "fragment" {
		if at, ok := strings.CutPrefix(rest, "at "); ok {
			word, rest = "at", at
		} else if rest != "" {
			t.Fatalf("%s: marker %q: want fragment [at DIR]", b.name(), b.marker)
		}
		body = docsFragment(t, b)
	}
	if word == "at" {
		at, env, ok := strings.Cut(rest, " env=")
		if ok {
			t.Setenv(env, "docs-test-dummy-key")
		}
		rest = at
	}
	switch word {
	case "fragment":
	case "at":
		dir = filepath.Join(root, rest)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Fatalf("%s: at %q: no such directory in the repository", b.name(), rest)
		}
	case "":
	default:
		t.Fatalf("%s: marker %q does not apply to a YAML block", b.name(), b.marker)
	}
	m := docsKind.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("%s: YAML that is not a whole experiment or suite needs a marker (fragment, or excerpt: REASON)", b.name())
	}
	f, err := os.CreateTemp(dir, ".docs-test-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mustRun(t, b, "validate", f.Name())
	if strings.HasPrefix(b.marker, "fragment") {
		return // the plan of the base says nothing more about the fragment
	}
	if m[1] == "Suite" {
		mustRun(t, b, "suite", "--dry-run", f.Name())
		return
	}
	mustRun(t, b, "run", "--dry-run", f.Name())
}

// docsFragment returns docsFragmentBase with the keys of b's YAML in
// place of its own.
func docsFragment(t *testing.T, b docBlock) string {
	t.Helper()
	var base, frag map[string]any
	if err := yaml.Unmarshal([]byte(docsFragmentBase), &base); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(b.body), &frag); err != nil {
		t.Fatalf("%s: not YAML: %v", b.name(), err)
	}
	for k, v := range frag {
		base[k] = v
	}
	out, err := yaml.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// freeDocsPort returns a port nothing listens on now.
func freeDocsPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// docsShellPrelude wraps llmchaos for the blocks: a simulator gets the
// block's port, a load or run the duration cap.
const docsShellPrelude = `set -eo pipefail
llmchaos() {
  case "$1" in
  sim) case " $* " in *" --listen "*) ;; *) set -- "$@" --listen "127.0.0.1:$DOCS_TEST_PORT" ;; esac ;;
  load|run) if [ -n "$DOCS_TEST_DURATION" ]; then set -- "$@" --duration "$DOCS_TEST_DURATION"; fi ;;
  esac
  command llmchaos "$@"
}
`

func runDocShell(t *testing.T, root string, b docBlock, withSim bool, opts string) {
	bin := needBinary(t)
	var duration string
	for o := range strings.FieldsSeq(opts) {
		d, ok := strings.CutPrefix(o, "duration=")
		if !ok {
			t.Fatalf("%s: unknown option %q in marker %q", b.name(), o, b.marker)
		}
		duration = d
	}
	dir := t.TempDir()
	for _, d := range []string{"experiments", "examples", "deploy", "scripts"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.ReplaceAll(b.body, "go run ./cmd/llmchaos", "llmchaos")
	port := freeDocsPort(t)
	script = strings.ReplaceAll(script, "127.0.0.1:8000", "127.0.0.1:"+port)
	for _, p := range []string{"8001", "8002"} {
		script = strings.ReplaceAll(script, "127.0.0.1:"+p, "127.0.0.1:"+freeDocsPort(t))
	}
	ctx, cancel := context.WithTimeout(t.Context(), docsShellTimeout)
	defer cancel()
	if withSim {
		startDocsSim(t, ctx, bin, port)
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", docsShellPrelude+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DOCS_TEST_PORT="+port, "DOCS_TEST_DURATION="+duration)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A file, not a pipe: what the block leaves in the background (a
	// simulator started with &) keeps its output open after bash ends.
	outFile, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the block left in the background
	}
	out, rerr := os.ReadFile(outFile.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("%s: %v (limit %s)\nthe block as run:\n%s\noutput:\n%s", b.name(), err, docsShellTimeout, script, out)
	}
	if strings.Contains(strings.ToLower(string(out)), "warning") {
		t.Fatalf("%s: the block's output warns:\n%s", b.name(), out)
	}
	t.Logf("%s ran:\n%s", b.name(), out)
}

// startDocsSim starts `llmchaos sim` on 127.0.0.1:port and waits until
// its /health answers 200; the test stops it.
func startDocsSim(t *testing.T, ctx context.Context, bin, port string) {
	t.Helper()
	sim := exec.Command(bin, "sim", "--listen", "127.0.0.1:"+port, "--startup-time", "0s")
	sim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-sim.Process.Pid, syscall.SIGKILL)
		_ = sim.Wait()
	})
	for {
		resp, err := http.Get("http://127.0.0.1:" + port + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the simulator on port %s was not healthy in time", port)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestExampleScriptsDryRun: every example script loads and plans (run
// --dry-run, in process, no warning), and the model it asks for when
// MODEL is not given is the one `llmchaos sim` serves, so that the
// commands in their comments work against the simulator as written.
func TestExampleScriptsDryRun(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("../../examples/scripts")
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	for _, pat := range []string{"*.js", "*.ts"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	if len(scripts) < 10 {
		t.Fatalf("found %d example scripts in %s", len(scripts), dir)
	}
	defaultModel := regexp.MustCompile(`__ENV\.MODEL \|\| '([^']*)'`)
	served := simconfig.Default().Model
	for _, s := range scripts {
		t.Run(filepath.Base(s), func(t *testing.T) {
			src, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range defaultModel.FindAllStringSubmatch(string(src), -1) {
				if m[1] != served {
					t.Errorf("%s defaults MODEL to %q; llmchaos sim serves %q", s, m[1], served)
				}
			}
			mustRun(t, docBlock{file: s, body: string(src)}, "run", s, "--dry-run")
		})
	}
}
