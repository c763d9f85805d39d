package experiments

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
)

// partFault is a faults.Fault for multiFault: it fails when told to and
// counts its undos.
type partFault struct {
	fail   bool
	undone *int
}

func (p partFault) Inject(context.Context, faults.RevertLog) (faults.Undo, error) {
	if p.fail {
		return nil, errors.New("part refused")
	}
	return func(context.Context) error { *p.undone++; return nil }, nil
}

func TestMultiFaultAllOrNothing(t *testing.T) {
	t.Parallel()
	var undone int
	m := multiFault{partFault{undone: &undone}, partFault{undone: &undone}, partFault{fail: true, undone: &undone}}
	if _, err := m.Inject(context.Background(), faults.NopLog{}); err == nil || !strings.Contains(err.Error(), "part refused") {
		t.Fatalf("Inject = %v, want the part's error", err)
	}
	if undone != 2 {
		t.Errorf("%d parts undone after a failed Inject, want the 2 injected", undone)
	}
	undone = 0
	m = m[:2]
	undo, err := m.Inject(context.Background(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(context.Background()); err != nil || undone != 2 {
		t.Errorf("undo: %v, %d parts undone; want nil, 2", err, undone)
	}
}

func TestPickEndpoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target *spec.FaultTarget
		n      int
		want   int
		subset []int
	}{
		{"all by default", nil, 3, 3, []int{0, 1, 2}},
		{"listed", &spec.FaultTarget{Endpoints: []int{2, 0}}, 3, 2, []int{0, 2}},
		{"count", &spec.FaultTarget{Count: 2}, 5, 2, []int{0, 1, 2, 3, 4}},
		{"percent rounds up", &spec.FaultTarget{Percent: 30}, 5, 2, []int{0, 1, 2, 3, 4}},
		{"count of the listed", &spec.FaultTarget{Endpoints: []int{1, 3}, Count: 1}, 5, 1, []int{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf := &plannedFault{spec: spec.Fault{Target: tc.target}, seed: 7}
			got := pf.pickEndpoints(tc.n)
			if len(got) != tc.want {
				t.Fatalf("picked %v, want %d endpoints", got, tc.want)
			}
			for _, e := range got {
				if !slices.Contains(tc.subset, e) {
					t.Errorf("picked %d, not one of %v", e, tc.subset)
				}
			}
			if again := pf.pickEndpoints(tc.n); !slices.Equal(again, got) {
				t.Errorf("picked %v then %v: the seeded choice must repeat", got, again)
			}
		})
	}
}
