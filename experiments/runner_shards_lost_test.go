package experiments

import (
	"errors"
	"fmt"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
)

// TestOnlyLost: a lost shard is counted, the run going on, only when it is
// the whole of the shards' error: wrapped, or joined with nothing else (as
// shardjob.Run joins the Job's deletion, nil when it went well); joined with
// another error (the Job not deleted) it fails the run.
func TestOnlyLost(t *testing.T) {
	t.Parallel()
	lost := &shardjob.LostError{Lost: 1, Shards: 3, Err: errors.New("shard 1: killed")}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"bare", lost, true},
		{"wrapped", fmt.Errorf("shard job ns/j: %w", lost), true},
		{"joined with nil", errors.Join(fmt.Errorf("shard job ns/j: %w", lost), nil), true},
		{"joined with another", errors.Join(lost, errors.New("delete Job: forbidden")), false},
		{"other", errors.New("watch: gone"), false},
		{"nil", nil, false},
	} {
		if got, ok := onlyLost(c.err); ok != c.want || ok && got != lost {
			t.Errorf("%s: onlyLost = %v, %v; want %v", c.name, got, ok, c.want)
		}
	}
}
