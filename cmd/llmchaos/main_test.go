package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"version"}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("exit code = %d, want %d (stderr %q)", code, exitcode.OK, errb.String())
	}
	if !strings.HasPrefix(out.String(), "llmchaos ") {
		t.Errorf("version output = %q, want prefix %q", out.String(), "llmchaos ")
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"version", "--no-such-flag"}, &out, &errb)
	if code != exitcode.Usage {
		t.Fatalf("exit code = %d, want %d", code, exitcode.Usage)
	}
	if !strings.Contains(errb.String(), "no-such-flag") {
		t.Errorf("stderr = %q, want it to name the flag", errb.String())
	}
}

// TestVersionFlag: --version prints the version line of `llmchaos
// version`, which carries main.version (the Makefile's -X main.version).
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"--version"}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("exit code = %d, want %d (stderr %q)", code, exitcode.OK, errb.String())
	}
	if got, want := out.String(), versionLine(); got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
	if !strings.Contains(out.String(), " "+toolVersion()+" ") {
		t.Errorf("--version output %q lacks the version %q", out.String(), toolVersion())
	}
}

// TestShortVIsVerboseEverywhere: -v is --verbose in every verb that has
// it and never --version (issue 28: -v means the same at every level), so
// the root command has no -v.
func TestShortVIsVerboseEverywhere(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			if f := fs.ShorthandLookup("v"); f != nil && f.Name != "verbose" {
				t.Errorf("%s: -v is --%s, want --verbose", c.CommandPath(), f.Name)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out.Reset()
	errb.Reset()
	if code := execute(context.Background(), []string{"-v"}, &out, &errb); code != exitcode.Usage || out.Len() > 0 {
		t.Errorf("llmchaos -v: exit %d, stdout %q; want a usage error, not the version", code, out.String())
	}
}

// TestFlagUsageHasNoBackquotes: pflag takes a `quoted` word of a flag's
// usage as its value's name, so `--no-guard llmchaos recover` would show
// in the help of a flag that takes no value.
func TestFlagUsageHasNoBackquotes(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	for _, c := range append(root.Commands(), root) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(f.Usage, "`") || strings.Contains(name, " ") {
				t.Errorf("%s --%s: usage %q shows the value name %q", c.Name(), f.Name, f.Usage, name)
			}
		})
	}
	var help bytes.Buffer
	root = newRootCmd(&help, &errb)
	root.SetArgs([]string{"run", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help.String(), "--no-guard llmchaos") {
		t.Errorf("run --help still shows --no-guard with a value name:\n%s", help.String())
	}
}
