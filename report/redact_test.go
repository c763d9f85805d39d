package report

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestRedact(t *testing.T) {
	type creds struct {
		Token    string `json:"token"`
		TokenEnv string `json:"token_env"`
		Rate     int    `json:"rate"`
	}
	tests := []struct {
		name string
		in   any
		want string // JSON of the redacted config
	}{
		{"nil", nil, `{}`},
		{"secret keys", map[string]any{"api_key": "x", "API-KEY": "y", "OPENAI_API_KEY": "z", "admin_token": "t",
			"password": "p", "client_secret": "s", "Authorization": "a", "cookie": "c", "key": "k"},
			`{"API-KEY":"[REDACTED]","Authorization":"[REDACTED]","OPENAI_API_KEY":"[REDACTED]","admin_token":"[REDACTED]","api_key":"[REDACTED]","client_secret":"[REDACTED]","cookie":"[REDACTED]","key":"[REDACTED]","password":"[REDACTED]"}`},
		{"kept keys", map[string]any{"api_key_env": "OPENAI_API_KEY", "token_file": "/run/tok", "max_tokens": 128,
			"input_tokens": "lognormal:500,100", "tokenizer": "gpt2", "api_key": ""},
			`{"api_key":"","api_key_env":"OPENAI_API_KEY","input_tokens":"lognormal:500,100","max_tokens":128,"token_file":"/run/tok","tokenizer":"gpt2"}`},
		{"headers", map[string]any{"header": []any{"Authorization: Bearer abc", "X-Api-Key:k1", "X-Trace: 7", "cookie=a=b"}},
			`{"header":["Authorization: [REDACTED]","X-Api-Key: [REDACTED]","X-Trace: 7","cookie=[REDACTED]"]}`},
		{"bearer and keys in values", map[string]any{"a": "Bearer xyz", "b": "sk-proj-0123456789abcdefgh", "c": "sk-short"},
			`{"a":"Bearer [REDACTED]","b":"[REDACTED]","c":"sk-short"}`},
		{"urls", map[string]any{"target": "http://bob:pw@127.0.0.1:8000/v1?api_key=abc&model=m", "plain": "http://127.0.0.1:8000/v1"},
			`{"plain":"http://127.0.0.1:8000/v1","target":"http://bob:REDACTED@127.0.0.1:8000/v1?api_key=REDACTED\u0026model=m"}`},
		{"nested", map[string]any{"faults": []any{map[string]any{"name": "kill", "auth": map[string]any{"user": "u"}}}},
			`{"faults":[{"auth":"[REDACTED]","name":"kill"}]}`},
		{"struct", creds{Token: "t", TokenEnv: "TOK", Rate: 3}, `{"rate":3,"token":"[REDACTED]","token_env":"TOK"}`},
		{"big numbers keep precision", map[string]any{"seed": int64(9007199254740993)}, `{"seed":9007199254740993}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Redact(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestRedactDoesNotModifyInput(t *testing.T) {
	in := map[string]any{"api_key": "x", "nested": map[string]any{"token": "y"}}
	want := map[string]any{"api_key": "x", "nested": map[string]any{"token": "y"}}
	if _, err := Redact(in); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("input changed to %v", in)
	}
}

func TestRedactRejectsNonObjects(t *testing.T) {
	for _, in := range []any{[]string{"a"}, "s", 3, func() {}} {
		if _, err := Redact(in); err == nil {
			t.Errorf("Redact(%T): want an error", in)
		}
	}
}
