package script

import (
	"bytes"
	"context"
	"testing"
)

// TestUnsetAPIKeyEnvWarns: an llm.Client whose apiKeyEnv names a variable
// that neither -e nor the environment sets is warned of before the load,
// as an experiment's api_key_env is; one set with -e, one with a literal
// apiKey and one without apiKeyEnv are not, and a name is warned of once.
func TestUnsetAPIKeyEnvWarns(t *testing.T) {
	const unset = "LLMCHAOS_TEST_SURELY_UNSET_KEY"
	t.Setenv(unset, "") // empty counts as unset; restored after the test
	src := `import llm from "k6/x/llm";
const a = new llm.Client({ baseURL: "http://127.0.0.1:1/v1", model: "m", apiKeyEnv: "` + unset + `" });
const b = new llm.Client({ baseURL: "http://127.0.0.1:1/v1", model: "m2", apiKeyEnv: "` + unset + `" });
const c = new llm.Client({ baseURL: "http://127.0.0.1:1/v1", model: "m", apiKeyEnv: "GIVEN_WITH_E" });
const d = new llm.Client({ baseURL: "http://127.0.0.1:1/v1", model: "m", apiKeyEnv: "LITERAL_TOO", apiKey: "k" });
const e = new llm.Client({ baseURL: "http://127.0.0.1:1/v1", model: "m" });
export default function () {}
`
	var stderr bytes.Buffer
	if _, err := Inspect(context.Background(), Config{Script: writeScript(t, src), Stderr: &stderr,
		Env: map[string]string{"GIVEN_WITH_E": "key"}}); err != nil {
		t.Fatal(err)
	}
	got := stderr.String()
	want := "llmchaos run: warning: llm.Client apiKeyEnv: the environment variable " + unset +
		" is not set (or empty): requests will be sent without an API key\n"
	if got != want {
		t.Errorf("stderr:\n%s\nwant exactly:\n%s", got, want)
	}
}
