package history

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// labelKey is what a label's key may be: a letter, then letters, digits,
// '.', '_', '-' or '/', at most 63 characters.
var labelKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._/-]{0,62}$`)

// ParseLabels reads --label values, each KEY=VALUE, reporting every bad
// one at once; a key given twice keeps its last value.
func ParseLabels(args []string) (map[string]string, error) {
	out := make(map[string]string, len(args))
	var errs []error
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("--label %q: want KEY=VALUE, e.g. version=1.4.2", a))
		case !labelKey.MatchString(k):
			errs = append(errs, fmt.Errorf("--label %q: the key must start with a letter and hold only letters, digits, '.', '_', '-' or '/' (at most 63)", a))
		default:
			out[k] = v
		}
	}
	return out, errors.Join(errs...)
}

// LabelGitCommit is the label of the git commit a run was started from.
const LabelGitCommit = "git_commit"

// LabelVersion is the label the trend page marks changes of: the version
// of the system under test, as the caller gives it (--label version=…).
const LabelVersion = "version"

// commitEnv are the CI systems' variables that hold the commit a job runs
// (GitHub Actions, GitLab CI, Buildkite, Jenkins' git plugin, CircleCI).
var commitEnv = []string{"GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "GIT_COMMIT", "CIRCLE_SHA1"}

// gitTimeout bounds the `git rev-parse` DefaultLabels runs.
const gitTimeout = 3 * time.Second

// DefaultLabels returns the labels a run gets without asking: git_commit,
// from the CI system's variable (getenv reads the environment) or else
// `git rev-parse HEAD` in the working directory; none when neither says.
func DefaultLabels(ctx context.Context, getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, k := range commitEnv {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			out[LabelGitCommit] = v
			return out
		}
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	b, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if c := strings.TrimSpace(string(b)); err == nil && c != "" {
		out[LabelGitCommit] = c
	}
	return out
}
