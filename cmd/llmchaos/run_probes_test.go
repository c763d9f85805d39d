package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
)

// probesExperiment is a short experiment with consistency probes: one fault
// window (%[2]s: its type and params) between a baseline and a recovery,
// thresholds on consistency per phase. %[1]s is the target.
const probesExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: probes-short}
target:
  %[1]s
workload: {rate: 10, duration: 9s, input_tokens: 16, output_tokens: 24}
recovery: {window: 1s, hold: 1s}
probes: {rate: 5, max_tokens: 24}
faults:
  - {name: window, at: 3s, duration: 3s, %[2]s}
thresholds:
  "output_consistency{phase:baseline}": ["rate==1"]
  "output_consistency{phase:fault}": ["rate>0.99"]
  "output_distinct_answers{phase:fault}": ["max<=1"]
  "error_rate{class:probe,phase:baseline}": ["rate==0"]
  requests_lost: ["count==0"]
`

// runProbes runs the probes experiment with target and fault through the
// binary and returns its exit code, its output and its run.json.
func runProbes(t *testing.T, target, fault string) (int, string, *report.Document) {
	t.Helper()
	return runProbesOf(t, probesExperiment, target, fault)
}

// runProbesOf is runProbes with another experiment of probesExperiment's
// form.
func runProbesOf(t *testing.T, experiment, target, fault string) (int, string, *report.Document) {
	t.Helper()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "probes.yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, experiment, target, fault), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "run"), "--progress", "0")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run", "run.json"))
	if err != nil {
		t.Fatalf("run.json: %v\n%s", err, out.String())
	}
	var doc report.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Consistency == nil {
		t.Fatalf("run.json has no consistency section:\n%s", out.String())
	}
	return code, out.String(), &doc
}

// window returns the consistency record of phase (and fault) in doc.
func window(t *testing.T, doc *report.Document, phase string) report.ConsistencyWindow {
	t.Helper()
	for _, w := range doc.Consistency.Windows {
		if w.Phase == phase {
			return w
		}
	}
	t.Fatalf("no %s window in %+v", phase, doc.Consistency.Windows)
	return report.ConsistencyWindow{}
}

// checkClean checks that every probe of doc agreed with its reference,
// in every phase, with no integrity error and none in the load's figures.
func checkClean(t *testing.T, doc *report.Document, out string) {
	t.Helper()
	c := doc.Consistency
	if c.Answered == 0 || c.Answered != c.Probes {
		t.Errorf("%d of %d probes answered", c.Answered, c.Probes)
	}
	for _, w := range c.Windows {
		if w.Consistency == nil || *w.Consistency != 1 || w.Compared == 0 || w.DistinctAnswersMax != 1 {
			t.Errorf("window %s(%s): %d of %d consistent, %d distinct answers, want all and 1:\n%s", w.Phase, w.Fault, w.Consistent, w.Compared, w.DistinctAnswersMax, out)
		}
	}
	for _, p := range c.Prompts {
		if !p.HasReference || p.BaselineAgreement != 1 || p.Divergent != nil {
			t.Errorf("prompt %q: reference %v, baseline agreement %v, divergent %+v", p.Prompt, p.HasReference, p.BaselineAgreement, p.Divergent)
		}
	}
	if doc.Quality.IntegrityErrorRate != 0 {
		t.Errorf("integrity error rate %v on a clean run", doc.Quality.IntegrityErrorRate)
	}
	// The probes are kept out of the load's figures: the load sent 10 a
	// second for 9 s (Poisson), never the 45 probes on top.
	if n := doc.Requests.Sent; n > 160 {
		t.Errorf("the load's figures count %d requests: the probes are in them", n)
	}
}

// checkDiverged checks that a run whose fault window corrupted answers
// fails naming output_consistency{phase:fault}, with a clean baseline and
// a divergent answer found in the fault window.
func checkDiverged(t *testing.T, code int, out string, doc *report.Document) {
	t.Helper()
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d:\n%s", code, exitcode.Thresholds, out)
	}
	if !strings.Contains(out, "✗ output_consistency{phase:fault}") || !strings.Contains(out, "✓ output_consistency{phase:baseline}") {
		t.Errorf("the verdict does not name the failed fault-phase threshold beside a clean baseline:\n%s", out)
	}
	if w := window(t, doc, report.PhaseFault); w.Consistency == nil || *w.Consistency >= 1 || w.DivergenceAtMin == nil {
		t.Errorf("fault window %+v: want consistency below 1 and a divergence position", w)
	}
	if w := window(t, doc, report.PhaseBaseline); w.Consistency == nil || *w.Consistency != 1 {
		t.Errorf("baseline window %+v: want consistency 1", w)
	}
	found := false
	for _, p := range doc.Consistency.Prompts {
		if d := p.Divergent; d != nil && d.Phase == report.PhaseFault && d.Fault == "window" {
			found = true
		}
	}
	if !found {
		t.Errorf("no prompt's divergent answer was first given in the fault window: %+v", doc.Consistency.Prompts)
	}
	if !strings.Contains(out, "most common divergent answer") {
		t.Errorf("the terminal report shows no divergent answer:\n%s", out)
	}
}

const simTarget = "sim: {replicas: 2, startup_time: 500ms, latency: constant, ttft: 20ms, itl: 5ms}"

// Against the simulator: a latency fault leaves every answer as it was
// (consistency 1.0 in every phase, the run passes); a proxy that flips
// bytes in half the streams of the fault window changes answers there,
// and the run fails naming output_consistency{phase:fault}.
func TestRunProbesSimulator(t *testing.T) {
	t.Parallel()
	t.Run("latency keeps the answers", func(t *testing.T) {
		code, out, doc := runProbes(t, simTarget, "type: stream.chunk_delay, params: {delay: 20ms}")
		if code != exitcode.OK {
			t.Fatalf("exit %d, want 0:\n%s", code, out)
		}
		checkClean(t, doc, out)
		if doc.Consistency.Unit != "token" {
			t.Errorf("unit %q, want token (the simulator streams one token per chunk)", doc.Consistency.Unit)
		}
	})
	t.Run("flipped bytes change them", func(t *testing.T) {
		code, out, doc := runProbes(t, simTarget, "type: stream.flip, params: {probability: 0.5, after_tokens: 2}")
		checkDiverged(t, code, out, doc)
	})
}

// pileUpExperiment freezes the one replica of the simulator (%[1]s: its
// settings) for 3 s while the load and the probes go on, so that every
// request sent meanwhile (about 30 of the load, 15 probes) runs in one
// batch when it thaws; before, the load (constant arrivals, 10 a second,
// 64 tokens each) and the probes keep a handful of sequences running.
const pileUpExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: pile-up}
target:
  sim: {replicas: 1, startup_time: 500ms, latency: constant, ttft: 20ms, itl: 5ms, %[1]s}
workload: {rate: 10, arrival: constant, duration: 10s, input_tokens: 16, output_tokens: 64, ignore_eos: true}
recovery: {window: 1s, hold: 1s}
probes: {rate: 5, max_tokens: 64}
faults:
  - {name: freeze, type: replica.pause, at: 3s, duration: 3s}
thresholds:
  "output_consistency{phase:baseline}": ["rate==1"]
  "output_consistency{phase:fault}": ["rate==1"]
  integrity_error_rate: ["rate==0"]
  requests_lost: ["count==0"]
`

// runPileUp runs pileUpExperiment with the simulator settings sim and
// returns its exit code, output and run.json.
func runPileUp(t *testing.T, sim string) (int, string, *report.Document) {
	t.Helper()
	return runPileUpOf(t, pileUpExperiment, sim)
}

// runPileUpOf is runPileUp with another experiment of pileUpExperiment's
// form.
func runPileUpOf(t *testing.T, experiment, sim string) (int, string, *report.Document) {
	t.Helper()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "pile-up.yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, experiment, sim), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "run"), "--progress", "0")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	doc, err := report.Read(filepath.Join(dir, "run", "run.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.Consistency == nil {
		t.Fatalf("run.json has no consistency section:\n%s", out.String())
	}
	return code, out.String(), doc
}

// checkPileUpDiverged checks that a pile-up run failed naming
// output_consistency{phase:fault} beside a clean baseline: answers changed
// only in what ran when the replica thawed (probes sent while it was
// frozen: they count in the freeze's window), well-formed (no integrity
// error: only a comparison with the reference finds them).
func checkPileUpDiverged(t *testing.T, code int, out string, doc *report.Document) {
	t.Helper()
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d:\n%s", code, exitcode.Thresholds, out)
	}
	for _, want := range []string{"✓ output_consistency{phase:baseline}", "✗ output_consistency{phase:fault}", "✓ integrity_error_rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("the verdict has no %q:\n%s", want, out)
		}
	}
	if w := window(t, doc, report.PhaseBaseline); w.Consistency == nil || *w.Consistency != 1 || w.Compared == 0 {
		t.Errorf("baseline window %+v: want every probe consistent", w)
	}
	if w := window(t, doc, report.PhaseFault); w.Consistency == nil || *w.Consistency >= 1 || w.DivergenceAtMin == nil || w.Fault != "freeze" {
		t.Errorf("fault window %+v: want consistency below 1, a divergence position, fault freeze", w)
	}
	// A prompt's most common divergent answer may be one a probe sent just
	// after the thaw gave (it joined the batch): recovery(freeze), never
	// earlier.
	found := false
	for _, p := range doc.Consistency.Prompts {
		if p.BaselineAgreement != 1 {
			t.Errorf("prompt %q: baseline agreement %v, want 1 (a light load keeps the reference)", p.Prompt, p.BaselineAgreement)
		}
		if d := p.Divergent; d != nil {
			if (d.Phase != report.PhaseFault && d.Phase != report.PhaseRecovery) || d.Fault != "freeze" || len(d.Text) != len(p.Reference) {
				t.Errorf("prompt %q: divergent answer first given in %s(%s), %d bytes (reference %d): want fault(freeze) or its recovery, as long",
					p.Prompt, d.Phase, d.Fault, len(d.Text), len(p.Reference))
			}
			found = true
		}
	}
	if !found {
		t.Errorf("no prompt has a divergent answer: %+v", doc.Consistency.Prompts)
	}
	if doc.Quality.IntegrityErrorRate != 0 {
		t.Errorf("integrity error rate %v: a changed continuation is a well-formed stream", doc.Quality.IntegrityErrorRate)
	}
}

// checkPileUpClean checks that a pile-up run without divergence passed
// with every compared probe consistent, the piled-up ones included.
func checkPileUpClean(t *testing.T, code int, out string, doc *report.Document) {
	t.Helper()
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0: without divergence nothing changes an answer:\n%s", code, out)
	}
	for _, w := range doc.Consistency.Windows {
		if w.Compared > 0 && (w.Consistency == nil || *w.Consistency != 1) {
			t.Errorf("window %s(%s): %d of %d consistent", w.Phase, w.Fault, w.Consistent, w.Compared)
		}
	}
	if w := window(t, doc, report.PhaseFault); w.Compared == 0 {
		t.Errorf("fault window %+v: no probe of the pile-up was compared", w)
	}
}

// Against the simulator with --divergence batch: the batch a frozen
// replica's pile-up makes when it thaws (some 45 sequences) changes the
// answers at near-tie tokens, which the probes find in the freeze's window
// (they were sent while it was frozen) while the baseline's light load (a
// handful of sequences, below divergence_min_batch 16) kept every answer
// the reference. Nothing here is left to chance: the pile-up is at least
// 16 sequences whatever the machine's speed, the tie positions of the
// probes' prompts are fixed, and the baseline never reaches 16 sequences.
// Without the mode the same run passes.
func TestRunProbesSimulatorBatchDivergence(t *testing.T) {
	t.Parallel()
	t.Run("batch", func(t *testing.T) {
		code, out, doc := runPileUp(t, "divergence: batch, divergence_min_batch: 16")
		checkPileUpDiverged(t, code, out, doc)
	})
	t.Run("off", func(t *testing.T) {
		code, out, doc := runPileUp(t, "max_num_seqs: 256") // the default: the simulator as it comes
		checkPileUpClean(t, code, out, doc)
	})
}

// Against the simulator with --divergence preempt: while its one replica
// is frozen for 4 s, some 20 probes pile up (5 a second; the load sends
// only a few short requests), and when it thaws they are all admitted
// (2 KV blocks each) and grow together towards 10 blocks each (128
// tokens, every answer capped at max_tokens) in a KV cache of about 106
// blocks: it runs out after some 50 tokens, and the newest sequences, the
// piled probes, are preempted with tokens generated, and recompute into
// another continuation. Before the freeze at most a handful of probes run
// at once (some 60 blocks at most), so none is preempted and the baseline
// agrees with itself. Without the mode the same run keeps every answer.
func TestRunProbesSimulatorPreemption(t *testing.T) {
	t.Parallel()
	exp := strings.NewReplacer(
		"workload: {rate: 10, arrival: constant, duration: 10s, input_tokens: 16, output_tokens: 64, ignore_eos: true}",
		"workload: {rate: 2, arrival: constant, duration: 11s, input_tokens: 16, output_tokens: 2}",
		"probes: {rate: 5, max_tokens: 64}", "probes: {rate: 5, max_tokens: 128}",
		"at: 3s, duration: 3s", "at: 3s, duration: 4s",
	).Replace(pileUpExperiment)
	const sim = "gpu_memory: 16.85GiB, max_model_len: 1024, mean_output_tokens: 100000"
	t.Run("preempt", func(t *testing.T) {
		code, out, doc := runPileUpOf(t, exp, sim+", divergence: preempt")
		checkPileUpDiverged(t, code, out, doc)
	})
	t.Run("off", func(t *testing.T) {
		code, out, doc := runPileUpOf(t, exp, sim)
		checkPileUpClean(t, code, out, doc)
	})
}

// engineAnswer is the in-test engine's greedy answer to a prompt: words
// drawn from the prompt's hash, the same every time.
func engineAnswer(prompt string, n int) []string {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	x := h.Sum64()
	words := make([]string, n)
	for i := range words {
		x = x*6364136223846793005 + 1442695040888963407
		words[i] = fmt.Sprintf(" w%d", x>>59)
	}
	return words
}

// mergingEngine answers like an engine behind a buffering gateway: a
// greedy answer per prompt, two tokens per chunk (so chunks are not
// tokens), usage, [DONE], and the connection closed after each stream.
func mergingEngine() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			MaxTokens int `json:"max_tokens"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 || req.MaxTokens < 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Connection", "close")
		fl := http.NewResponseController(w)
		words := engineAnswer(req.Messages[len(req.Messages)-1].Content, req.MaxTokens)
		id := fmt.Sprintf("chatcmpl-%p", r)
		for i := 0; i < len(words); i += 2 {
			text, _ := json.Marshal(strings.Join(words[i:min(i+2, len(words))], ""))
			role := ""
			if i == 0 {
				role = `"role":"assistant",`
			}
			fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{%s\"content\":%s},\"finish_reason\":null}]}\n\n", id, role, text)
			_ = fl.Flush()
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n", id)
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", id, len(words), 16+len(words))
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// Against an engine in the test that merges chunks and closes after each
// stream: a clean run is consistent everywhere, positions in characters;
// flipped bytes in the fault window fail the run by its threshold.
func TestRunProbesMergingEngine(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mergingEngine())
	defer srv.Close()
	target := fmt.Sprintf("llm: {url: %q, model: m}", srv.URL+"/v1")
	t.Run("clean", func(t *testing.T) {
		code, out, doc := runProbes(t, target, "type: stream.chunk_delay, params: {delay: 10ms}")
		if code != exitcode.OK {
			t.Fatalf("exit %d, want 0:\n%s", code, out)
		}
		checkClean(t, doc, out)
		if doc.Consistency.Unit != "char" {
			t.Errorf("unit %q, want char (two tokens per chunk)", doc.Consistency.Unit)
		}
	})
	t.Run("flipped", func(t *testing.T) {
		code, out, doc := runProbes(t, target, "type: stream.flip, params: {probability: 0.5, after_tokens: 2}")
		checkDiverged(t, code, out, doc)
	})
}

// startRouterSim starts `llmchaos sim` with 2 replicas behind its
// migrating router (migrate mode), and returns the router's URL and the
// state file, once the router answers through a serving replica.
func startRouterSim(t *testing.T, bin, migrate string) (url, state string) {
	t.Helper()
	dir := t.TempDir()
	state = filepath.Join(dir, "state.json")
	cmd := exec.Command(bin, "sim", "--replicas", "2", "--base-port", "0", "--listen", "127.0.0.1:0", "--state-file", state,
		"--router", "127.0.0.1:0", "--migrate", migrate, "--latency", "constant", "--ttft", "20ms", "--itl", "20ms",
		"--startup-time", "300ms", "--restart-delay", "500ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), `msg="router serving" addr=`); ok {
				a, _, _ = strings.Cut(a, " ")
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		url = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("the router did not serve within 30 s")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/v1/models")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, state
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica served through the router within 30 s (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// migrationExperiment kills one of the two replicas behind the router at
// 4 s while long probes and load requests stream through it.
const migrationExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: migration-short}
target:
  llm: {url: "%[1]s/v1", model: llmchaos-sim}
workload: {rate: 10, duration: 10s, input_tokens: 16, output_tokens: 48}
recovery: {window: 1s, hold: 1s}
probes: {rate: 5, max_tokens: 64}
faults:
  - {name: kill, type: replica.kill, at: 4s, duration: 3s, params: {target: {state_file: %[2]q}}}
thresholds:
  output_consistency: ["rate==1"]
  integrity_error_rate: ["rate==0"]
  error_rate: ["rate==0"]
`

// A replica killed behind a router that migrates streams: migrated
// cleanly, every stream in flight ends whole and every probe keeps its
// answer (no error, consistency 1.0); migrated with a resent span, the
// probes that were moved diverge where the span repeats and the integrity
// checks find it, and the run fails naming both.
func TestRunProbesMigration(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	run := func(t *testing.T, migrate string) (int, string, *report.Document) {
		url, state := startRouterSim(t, bin, migrate)
		dir := t.TempDir()
		file := filepath.Join(dir, "migration.yaml")
		if err := os.WriteFile(file, fmt.Appendf(nil, migrationExperiment, url, state), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "run"), "--progress", "0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		doc, err := report.Read(filepath.Join(dir, "run", "run.json"))
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return code, out.String(), doc
	}
	t.Run("clean", func(t *testing.T) {
		code, out, doc := run(t, "clean")
		if code != exitcode.OK {
			t.Fatalf("exit %d, want 0: a clean migration loses nothing and changes nothing:\n%s", code, out)
		}
		if !strings.Contains(out, "exit: pid") || doc.Consistency.Answered != doc.Consistency.Probes {
			t.Errorf("no replica was killed, or a probe went unanswered:\n%s", out)
		}
	})
	// The runner starts the router itself with target.sim.migrate: the
	// router is the target's one endpoint, and the kill's streams move.
	t.Run("target.sim", func(t *testing.T) {
		dir := t.TempDir()
		src := strings.NewReplacer(`llm: {url: "%[1]s/v1", model: llmchaos-sim}`,
			"sim: {replicas: 2, migrate: clean, latency: constant, ttft: 20ms, itl: 20ms, startup_time: 300ms, restart_delay: 500ms}",
			"params: {target: {state_file: %[2]q}}", "params: {}").Replace(migrationExperiment)
		file := filepath.Join(dir, "migration.yaml")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "run"), "--progress", "0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: a clean migration loses nothing and changes nothing:\n%s", err, out)
		}
		log, err := os.ReadFile(filepath.Join(dir, "run", "sim.log"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), `msg="migrated a stream"`) {
			t.Errorf("no stream was migrated; the simulator's log:\n%s", log)
		}
		doc, err := report.Read(filepath.Join(dir, "run", "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		if eps, _ := doc.Config["endpoints"].([]any); len(eps) != 1 {
			t.Errorf("endpoints %v: want the router alone", doc.Config["endpoints"])
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		code, out, doc := run(t, "duplicate")
		if code != exitcode.Thresholds {
			t.Fatalf("exit %d, want %d:\n%s", code, exitcode.Thresholds, out)
		}
		if !strings.Contains(out, "✗ output_consistency") || !strings.Contains(out, "✗ integrity_error_rate") {
			t.Errorf("the verdict does not name consistency and integrity:\n%s", out)
		}
		diverged := false
		for _, p := range doc.Consistency.Prompts {
			if d := p.Divergent; d != nil && len(d.Text) > len(p.Reference) {
				diverged = true // the resent span makes the answer longer
			}
		}
		if !diverged {
			t.Errorf("no probe's answer got the resent span: %+v", doc.Consistency.Prompts)
		}
	})
}

// Against the simulator through stream.resume, which drops a stream's
// upstream after 8 tokens and resumes it on a fresh request: a faithful
// resume (every stream of the window; the load asks for exactly its
// max_tokens, so a fresh answer is as long as the first) keeps every
// answer whole and the run passes with consistency 1.0 and no integrity
// error; one that sends 4 delivered tokens again is found as
// integrity_resume_repeat by the checks and as a longer answer by the
// probes, and the run fails naming output_consistency{phase:fault}.
func TestRunProbesStreamResume(t *testing.T) {
	t.Parallel()
	exp := strings.Replace(probesExperiment, "output_tokens: 24}", "output_tokens: 24, ignore_eos: true}", 1)
	t.Run("faithful", func(t *testing.T) {
		code, out, doc := runProbesOf(t, exp, simTarget, "type: stream.resume, params: {after_tokens: 8, gap: 50ms}")
		if code != exitcode.OK {
			t.Fatalf("exit %d, want 0:\n%s", code, out)
		}
		checkClean(t, doc, out)
		if f := doc.Faults; len(f) != 1 || f[0].RequestsActedOn == nil || *f[0].RequestsActedOn == 0 || !f[0].RevertOK {
			t.Errorf("faults %+v: want the resume to have acted and been reverted", f)
		}
	})
	t.Run("resend", func(t *testing.T) {
		code, out, doc := runProbesOf(t, exp, simTarget, "type: stream.resume, params: {probability: 0.5, after_tokens: 8, resend: 4, gap: 400ms}")
		checkDiverged(t, code, out, doc)
		if !strings.Contains(out, "integrity_resume_repeat") {
			t.Errorf("the report does not name integrity_resume_repeat:\n%s", out)
		}
		for _, p := range doc.Consistency.Prompts {
			if d := p.Divergent; d != nil && len(d.Text) != len(p.Reference)+4*sim.BytesPerToken {
				t.Errorf("prompt %q: divergent answer %q, want the reference %q with 4 tokens twice", p.Prompt, d.Text, p.Reference)
			}
		}
	})
}
