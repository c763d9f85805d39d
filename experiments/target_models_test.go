package experiments

import (
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
)

// The /models request that finds a target's model carries the key the
// load would send (api_key_env, else OPENAI_API_KEY) and the headers: a
// server that checks keys, as vLLM --api-key, checks them there too.
func TestModelsHeaderCarriesTheKey(t *testing.T) {
	t.Setenv("MY_KEY", "k1")
	t.Setenv("OPENAI_API_KEY", "k2")
	for _, tt := range []struct {
		name string
		t    spec.LLMTarget
		auth string
	}{
		{"api_key_env", spec.LLMTarget{APIKeyEnv: "MY_KEY", Headers: map[string]string{"X-Team": "qa"}}, "Bearer k1"},
		{"the default variable", spec.LLMTarget{}, "Bearer k2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := modelsHeader(tt.t)
			if got := h.Get("Authorization"); got != tt.auth {
				t.Errorf("Authorization %q, want %q", got, tt.auth)
			}
			if want := tt.t.Headers["X-Team"]; h.Get("X-Team") != want {
				t.Errorf("X-Team %q, want %q", h.Get("X-Team"), want)
			}
		})
	}
	t.Setenv("OPENAI_API_KEY", "")
	if h := modelsHeader(spec.LLMTarget{}); h.Get("Authorization") != "" {
		t.Errorf("Authorization %q without a key, want none", h.Get("Authorization"))
	}
}
