package spec

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/pipeline/script"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

// The __ENV variables the runner gives a script workload: the
// experiment's target, as the load must reach it (through the fault
// proxies) for the faults to act on it.
const (
	// ScriptEnvBaseURL is the first endpoint's base URL.
	ScriptEnvBaseURL = "BASE_URL"
	// ScriptEnvBaseURLs lists every endpoint's base URL, comma-separated,
	// for a script that spreads its requests over them.
	ScriptEnvBaseURLs = "BASE_URLS"
	// ScriptEnvModel is the model the target serves.
	ScriptEnvModel = "MODEL"
)

// ScriptKeys are the workload keys that apply with a script: the others
// shape requests and load, which the script does itself.
var ScriptKeys = []string{"script", "env", "duration", "concurrency", "requests", "rate", "capacity", "preflight"}

// ScriptPath is the workload's script as a path: relative to dir, the
// experiment file's directory, unless absolute.
func (w Workload) ScriptPath(dir string) string {
	if w.Script == "" || filepath.IsAbs(w.Script) || dir == "" {
		return w.Script
	}
	return filepath.Join(dir, w.Script)
}

// ScriptOverrides are the keys that override a script's scenarios, as
// llmchaos run's flags do: duration (--duration), concurrency (--vus),
// requests (--iterations) and rate (a constant arrival rate).
func (w Workload) ScriptOverrides() script.Overrides {
	return script.Overrides{VUs: w.Concurrency, Duration: w.Duration.D(), Iterations: w.Requests, Rate: w.Rate.PerSecond}
}

// ScriptEnv is the script's __ENV over the process environment: env, then
// the target's base URLs (as the load reaches them) and model.
func (w Workload) ScriptEnv(baseURLs []string, model string) map[string]string {
	env := make(map[string]string, len(w.Env)+3)
	for k, v := range w.Env {
		env[k] = v
	}
	if len(baseURLs) > 0 {
		env[ScriptEnvBaseURL] = baseURLs[0]
	}
	env[ScriptEnvBaseURLs] = strings.Join(baseURLs, ",")
	env[ScriptEnvModel] = model
	return env
}

// placeholderURLs are the base URLs a script is inspected with before the
// run (the simulator's ports, the proxies' addresses are not known yet):
// one per endpoint, in a domain that resolves nowhere.
func placeholderURLs(n int) []string {
	out := make([]string, max(n, 1))
	for i := range out {
		out[i] = fmt.Sprintf("http://endpoint-%d.llmchaos.invalid/v1", i)
	}
	return out
}

// scriptModel is the model the target serves, as far as the file says.
func (s *Spec) scriptModel() string {
	switch {
	case s.Target.Sim != nil && s.Target.Sim.Model != "":
		return s.Target.Sim.Model
	case s.Target.Sim != nil:
		return simconfig.Default().Model
	case s.Target.LLM != nil && s.Target.LLM.Model != "":
		return s.Target.LLM.Model
	case s.Target.Kubernetes != nil && s.Target.Kubernetes.Model != "":
		return s.Target.Kubernetes.Model
	}
	return "model-from-the-target"
}

// scriptEndpoints is the number of endpoints a script reaches.
func (s *Spec) scriptEndpoints() int {
	switch {
	case s.Target.Sim != nil && s.Target.Sim.Replicas > 0:
		return s.Target.Sim.EndpointCount()
	case s.Target.LLM != nil:
		return len(s.Target.LLM.Endpoints())
	}
	return 1 // a kubernetes target's url
}

// InspectScript resolves the spec's script workload without running it
// (script.Inspect), with the env its run gets and placeholders for the
// target's URLs; dir is the experiment file's directory. The plan's
// clients must send to those placeholders (see CheckScriptClients).
func (s *Spec) InspectScript(ctx context.Context, dir string) (*script.Plan, error) {
	w := s.Workload
	return script.Inspect(ctx, script.Config{
		Script: w.ScriptPath(dir), Env: w.ScriptEnv(placeholderURLs(s.scriptEndpoints()), s.scriptModel()),
		Overrides: w.ScriptOverrides(),
	})
}

// CheckScriptClients says which llm.Client objects of a script's init
// code would not send to the experiment's target, whose base URLs (as the
// load reaches them) are urls: their requests would bypass the fault
// proxies, and the faults would not act on them.
func CheckScriptClients(plan *script.Plan, urls []string) error {
	var bad []string
	for _, c := range plan.Clients {
		if !slices.Contains(urls, strings.TrimRight(c.BaseURL, "/")) {
			bad = append(bad, c.BaseURL)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("the script's llm.Client sends to %s, not to the experiment's target: build it with baseURL: __ENV.%s (or one of __ENV.%s), which the runner sets to the target, through its fault proxies",
		strings.Join(bad, ", "), ScriptEnvBaseURL, ScriptEnvBaseURLs)
}
