package script

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// The problems of a script's options are keyed by the option's field, as
// a path from the root of `export const options`; the script front end
// names them as the script writes them (options.scenarios.spike.rate), an
// override as the override. Whatever the problem, it stays an
// *OptionsError (k6's exit 104) that is a *js.ScriptError at the script.
func TestOptionProblemsAreKeyedByTheirOption(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		script    string
		overrides Overrides
		wantPaths []field.Path
		wantMsgs  []string
	}{
		{
			name: "a scenario's fields",
			script: `export const options = { scenarios: {
  spike: { executor: 'constant-arrival-rate', rate: 0, duration: '1s', preAllocatedVUs: 2, maxVUs: 1 },
  ramp: { executor: 'ramping-vus', stages: [{ duration: '1s', target: -1 }] } } };
export default function () {}
`,
			wantPaths: []field.Path{"scenarios.ramp.stages[0].target", "scenarios.spike.rate", "scenarios.spike.maxVUs"},
			wantMsgs: []string{"options.scenarios.ramp.stages[0].target must not be negative", "options.scenarios.spike.rate must be positive",
				"options.scenarios.spike.maxVUs 1 must be at least options.scenarios.spike.preAllocatedVUs 2"},
		},
		{
			name:      "the shortcut's fields are the options the script wrote",
			script:    "export const options = { vus: 0, duration: '1s' };\nexport default function () {}\n",
			wantPaths: []field.Path{FieldVUs},
			wantMsgs:  []string{"options.vus must be positive"},
		},
		{
			name: "top-level options and a scenario's exec",
			script: `export const options = { setupTimeout: '0s', summaryTimeUnit: 'h',
  scenarios: { a: { executor: 'shared-iterations', exec: 'missing' } } };
export default function () {}
`,
			wantPaths: []field.Path{FieldSummaryTimeUnit, FieldSetupTimeout, "scenarios.a.exec"},
			wantMsgs: []string{`options.summaryTimeUnit "h": want s, ms or us`, "options.setupTimeout must be positive",
				`options.scenarios.a.exec: the script exports no function "missing"`},
		},
		{
			name:      "an override",
			script:    "export default function () {}\n",
			overrides: Overrides{Rate: 2},
			wantPaths: []field.Path{FieldOverrideDuration},
			wantMsgs:  []string{"the rate override needs a duration: options.duration, or the duration override"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Inspect(context.Background(), Config{Script: writeScript(t, tt.script), Overrides: tt.overrides, NoSystemEnv: true})
			oe, ok := errors.AsType[*OptionsError](err)
			if !ok {
				t.Fatalf("got %v (%T), want an *OptionsError", err, err)
			}
			if se, ok := errors.AsType[*js.ScriptError](err); !ok || !strings.HasSuffix(se.Pos, "script.js") {
				t.Errorf("got %v, want a *js.ScriptError at the script", err)
			}
			var paths []field.Path
			for _, p := range oe.Problems {
				paths = append(paths, p.Path)
			}
			if !slices.Equal(paths, tt.wantPaths) {
				t.Errorf("got paths %q, want %q", paths, tt.wantPaths)
			}
			for _, w := range tt.wantMsgs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to say %q", err, w)
				}
			}
		})
	}
}
