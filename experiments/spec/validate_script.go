package spec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline/script"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// ScriptInspectTimeout bounds the run of a script's init code when an
// experiment is validated.
const ScriptInspectTimeout = 30 * time.Second

// baseDir is the directory relative paths of the file at file are
// resolved from ("" for the working directory).
func baseDir(file string) string {
	if file == "" {
		return ""
	}
	return filepath.Dir(file)
}

// scriptWorkload checks a script workload: only the keys that apply with
// a script (ScriptKeys), env names the runner does not set, a script file
// that exists, loads and whose init code runs, and whose llm clients send
// to the target. The script's options give the load's end (for the fault
// times) and its custom metrics (for the thresholds).
func (v *validator) scriptWorkload() {
	w := v.s.Workload
	set := setKeys(w)
	var keys []string
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(ScriptKeys, k) {
			v.iss.addKey("workload."+k, "does not apply with a script, which shapes its requests and load itself: with script, the workload takes %s", strings.Join(ScriptKeys, ", "))
		}
	}
	if w.Script == "" {
		v.iss.add("workload", "env applies to a script: set script, the path of a k6-style .js file")
		return
	}
	if t := v.s.Target.Kubernetes; t != nil && t.URL == "" {
		v.iss.add("workload.script", "a script's clients send to fixed base URLs, and this target's pods come and go: set target.kubernetes.url (the Service through an Ingress, a LoadBalancer or a port-forward)")
	}
	envKeys := make([]string, 0, len(w.Env))
	for k := range w.Env {
		envKeys = append(envKeys, k)
	}
	slices.Sort(envKeys)
	for _, k := range envKeys {
		p := child("workload.env", k)
		switch k {
		case ScriptEnvBaseURL, ScriptEnvBaseURLs, ScriptEnvModel:
			v.iss.addKey(p, "is set by the runner to the experiment's target (through its fault proxies): remove it")
		default:
			if !envNameRE.MatchString(k) {
				v.iss.addKey(p, "%q is not a variable name: letters, digits and '_', not starting with a digit", k)
			}
		}
	}
	for _, n := range []struct {
		key string
		bad bool
	}{{"duration", w.Duration < 0}, {"concurrency", w.Concurrency < 0}, {"requests", w.Requests < 0}, {"rate", w.Rate.PerSecond < 0}} {
		if n.bad {
			v.iss.add("workload."+n.key, "is negative")
		}
	}
	if t := v.s.Target.LLM; t != nil {
		if len(t.Headers) > 0 {
			v.iss.warn("target.llm.headers", "a script's llm.Client does not send them (only the pre-flight check does)")
		}
		if t.APIKeyEnv != "" {
			v.iss.warn("target.llm.api_key_env", "a script's llm.Client reads its key from its own apiKeyEnv option (default OPENAI_API_KEY), not from this (only the pre-flight check does)")
		}
	}
	path := w.ScriptPath(v.dir)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		msg := "not a file"
		if err != nil {
			msg = err.Error()
			if errors.Is(err, os.ErrNotExist) {
				msg = "no such file"
			}
		}
		v.iss.add("workload.script", "%s: %s (a path relative to the experiment file)", path, msg)
		v.scriptFailed = true
		return
	}
	if len(v.iss) > 0 && slices.ContainsFunc(v.iss, func(is issue) bool { return within(is.path, "workload") && !is.warn }) {
		v.scriptFailed = true
		return // the script would run with keys that do not apply
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScriptInspectTimeout)
	defer cancel()
	plan, err := v.s.InspectScript(ctx, v.dir)
	if oe, ok := errors.AsType[*script.OptionsError](err); ok {
		v.scriptOptionProblems(oe)
		v.scriptFailed = true
		return
	}
	if err != nil {
		msg := err.Error()
		if se, ok := errors.AsType[*js.ScriptError](err); ok {
			msg = se.Msg
			if se.Pos != "" {
				msg = se.Pos + ": " + msg
			}
		}
		v.iss.add("workload.script", "%s", msg)
		v.scriptFailed = true
		return
	}
	if err := CheckScriptClients(plan, placeholderURLs(v.s.scriptEndpoints())); err != nil {
		v.iss.add("workload.script", "%v", err)
	}
	v.metrics = plan.Metrics
	if end, known := plan.Length(); known {
		v.loadEnd = end
	}
}

// scriptOverrideKeys are the workload keys that set a script's overrides
// (ScriptOverrides), by the override's field.
var scriptOverrideKeys = map[field.Path]string{
	script.FieldOverrideRate:       "workload.rate",
	script.FieldOverrideDuration:   "workload.duration",
	script.FieldOverrideVUs:        "workload.concurrency",
	script.FieldOverrideIterations: "workload.requests",
}

// scriptFieldName names a field of a script workload's problems: an
// override by the workload key that sets it, an option as the script
// writes it (script.OptionName).
func scriptFieldName(p field.Path) string {
	if k, ok := scriptOverrideKeys[p]; ok {
		return k
	}
	return script.OptionName(p)
}

// scriptOptionProblems reports the problems of the script's options with
// the workload's overrides on top: an override's at the workload key that
// set it, an option's at workload.script, where the script is named.
func (v *validator) scriptOptionProblems(oe *script.OptionsError) {
	for _, p := range oe.Problems {
		msg := p.Message(scriptFieldName)
		if k, ok := scriptOverrideKeys[p.Path]; ok {
			v.iss.add(k, "%s", msg)
			continue
		}
		v.iss.add("workload.script", "%s: %s", oe.Err.Pos, msg)
	}
}
