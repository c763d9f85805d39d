package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// llmchaosPkg is the import path of the command the tests build.
const llmchaosPkg = "github.com/llmchaos/llmchaos/cmd/llmchaos"

// BinPath returns where RunWithLLMChaos puts the binary in dir:
// dir/bin/llmchaos, so that dir can double as a Docker build context.
func BinPath(dir string) string { return filepath.Join(dir, "bin", "llmchaos") }

// BuildLLMChaos builds the llmchaos command into BinPath(dir), statically
// (CGO_ENABLED=0, -trimpath) as `make build` makes it, so that the binary
// also runs FROM scratch in a container. The compiler's output goes to
// stderr.
func BuildLLMChaos(dir string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go") // go test passes GOROOT on
	}
	build := exec.Command(goTool, "build", "-trimpath", "-o", BinPath(dir), llmchaosPkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build llmchaos: %w", err)
	}
	return nil
}

// RunWithLLMChaos is the body of a TestMain whose tests run the real
// binary: it makes a temporary directory (named after pattern, as
// os.MkdirTemp does), builds llmchaos into it with BuildLLMChaos, hands the
// directory to setDir, runs m and removes the directory. It returns the
// code to pass to os.Exit; a failed setup is printed on stderr and yields 1
// without running any test.
func RunWithLLMChaos(m interface{ Run() int }, pattern string, setDir func(dir string)) int {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := BuildLLMChaos(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	setDir(dir)
	return m.Run()
}

// BecomeSubreaper makes the calling process the child subreaper of its
// descendants: orphans (children of a killed supervisor, balloon parent or
// helper) are re-parented to it instead of to init, so that tests can reap
// them with Reap and see how they ended rather than leaving zombies. Call it
// from TestMain, before m.Run.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set child subreaper: %w", err)
	}
	return nil
}
