package server

import (
	"reflect"
	"strings"
	"testing"
)

// Over HTTP, temperature 0 gives the same answer for the same prompt on
// replicas with different seeds, and another answer for another prompt;
// chat and completions agree on the same text.
func TestGreedyAnswerPerPrompt(t *testing.T) {
	answer := func(seed int64, path, body string) []string {
		cfg := testConfig()
		cfg.Seed = seed
		r := start(t, Options{Config: cfg})
		resp := post(t, r.url+path, body)
		defer resp.Body.Close()
		evs, err := readEvents(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return parseStream(evs).tokens
	}
	chat := func(prompt string) string {
		return `{"model":"llmchaos-sim","messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":40,"temperature":0,"stream":true}`
	}
	a, b := answer(1, "/v1/chat/completions", chat("What is 2+2?")), answer(2, "/v1/chat/completions", chat("What is 2+2?"))
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("same prompt at temperature 0 on two replicas: %q vs %q", a, b)
	}
	if c := answer(1, "/v1/chat/completions", chat("Name a colour.")); reflect.DeepEqual(a, c) {
		t.Errorf("two prompts gave the same answer %q", a)
	}
	comp := answer(3, "/v1/completions", `{"model":"llmchaos-sim","prompt":"What is 2+2?","max_tokens":40,"temperature":0,"stream":true}`)
	if strings.Join(comp, "") != strings.Join(a, "") {
		t.Errorf("completions %q, chat %q: want the same answer for the same text", comp, a)
	}
}
