package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpFitsIn120Columns renders the help of every command, llmchaos's
// and the k6 front end's, and checks that no line is wider than maxWidth:
// flag usages wrap under their column, examples continue with "\".
func TestHelpFitsIn120Columns(t *testing.T) {
	t.Parallel()
	for name, newRoot := range map[string]func(out, errw *strings.Builder) *cobra.Command{
		"llmchaos": func(out, errw *strings.Builder) *cobra.Command { return newRootCmd(out, errw) },
		"k6":       func(out, errw *strings.Builder) *cobra.Command { return newK6RootCmd(out, errw) },
	} {
		var paths [][]string
		var walk func(c *cobra.Command, path []string)
		walk = func(c *cobra.Command, path []string) {
			paths = append(paths, path)
			for _, sub := range c.Commands() {
				if !sub.Hidden {
					walk(sub, append(append([]string{}, path...), sub.Name()))
				}
			}
		}
		var none strings.Builder
		walk(newRoot(&none, &none), nil)
		t.Logf("%s: %d commands", name, len(paths))
		for _, path := range paths {
			var out, errw strings.Builder
			root := newRoot(&out, &errw)
			root.SetArgs(append(append([]string{}, path...), "--help"))
			if err := root.Execute(); err != nil {
				t.Fatalf("%s %s --help: %v", name, strings.Join(path, " "), err)
			}
			if out.Len() == 0 {
				t.Errorf("%s %s --help printed nothing", name, strings.Join(path, " "))
			}
			checkWidth(t, name+" "+strings.Join(path, " ")+" --help", out.String()+errw.String())
		}
	}
}
