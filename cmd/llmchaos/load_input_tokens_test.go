package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestLoadInputTokensFlag checks that --input-tokens (the metric's and the
// experiment file's name) sets the prompt length, that --prompt-tokens is
// another name of it, that giving both is an error naming both, and that
// the workload's messages name the flag given.
func TestLoadInputTokensFlag(t *testing.T) {
	t.Parallel()
	base := []string{"--target", "http://127.0.0.1:1/v1", "--model", "m", "--rate", "5", "--duration", "1s"}
	tests := []struct {
		name    string
		args    []string
		wantIn  string   // the resolved prompt length, when the flags are valid
		wantErr []string // what the error says, when they are not
	}{
		{name: "input-tokens", args: []string{"--input-tokens", "64"}, wantIn: "fixed:64"},
		{name: "prompt-tokens", args: []string{"--prompt-tokens", "uniform:10:20"}, wantIn: "uniform:10:20"},
		{name: "input-tokens over a preset", args: []string{"--workload", "chat", "--input-tokens", "32"}, wantIn: "fixed:32"},
		{name: "both", args: []string{"--input-tokens", "64", "--prompt-tokens", "64"},
			wantErr: []string{"--input-tokens and --prompt-tokens are both set"}},
		{name: "a bad length names its flag", args: []string{"--input-tokens", "lognormal:x"}, wantErr: []string{"--input-tokens"}},
		{name: "workload messages name input-tokens", args: []string{"--input-tokens", "64", "--dataset", "d.jsonl"},
			wantErr: []string{"--input-tokens and --dataset are both set"}},
		{name: "workload messages name prompt-tokens", args: []string{"--prompt-tokens", "64", "--dataset", "d.jsonl"},
			wantErr: []string{"--prompt-tokens and --dataset are both set"}},
		{name: "nothing to send", args: nil, wantErr: []string{"give --input-tokens or --dataset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := defaultLoadFlags()
			fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
			addLoadFlags(fs, &f)
			if err := fs.Parse(append(append([]string{}, base...), tt.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.config(fs)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("config: no error, want one saying %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("config: %v", err)
			}
			if got := cfg.Workload.InputTokens.String(); got != tt.wantIn {
				t.Errorf("input tokens %s, want %s", got, tt.wantIn)
			}
		})
	}
}
