package faults

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// node is a selection candidate in these tests.
type node struct {
	name string
	up   bool
}

func nodeUp(n node) bool { return n.up }

func names(ns []node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.name
	}
	return out
}

func nodes(spec string) []node {
	var out []node
	for i, c := range spec {
		out = append(out, node{name: string(rune('a' + i)), up: c == '+'})
	}
	return out
}

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x73656c656374)) }

func TestSelectionValidate(t *testing.T) {
	tests := []struct {
		name string
		sel  Selection
		want []string // substrings of the error; nil: valid
	}{
		{"default one", Selection{}, nil},
		{"all", Selection{Mode: SelectAll, MinAvailable: 1}, nil},
		{"count", Selection{Mode: SelectCount, Value: 2}, nil},
		{"percent", Selection{Mode: SelectPercent, Value: 100}, nil},
		{"count zero", Selection{Mode: SelectCount}, []string{"select.value: 0, mode count needs at least 1"}},
		{"percent over", Selection{Mode: SelectPercent, Value: 101}, []string{"mode percent needs 1 to 100"}},
		{"one with value", Selection{Mode: SelectOne, Value: 3}, []string{"mode one takes no value"}},
		{"unknown mode and negative floor", Selection{Mode: "half", MinAvailable: -1},
			[]string{`select.mode: "half"`, "select.min_available: -1 must not be negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sel.WithDefaults().Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name    string
		sel     Selection
		targets string // one character per target: + up, - down
		want    int    // number picked
		wantErr error
	}{
		{"one of three", Selection{Mode: SelectOne}, "+++", 1, nil},
		{"all picks only the up ones", Selection{Mode: SelectAll}, "+-+", 2, nil},
		{"count two of four", Selection{Mode: SelectCount, Value: 2}, "++++", 2, nil},
		{"percent rounds down", Selection{Mode: SelectPercent, Value: 50}, "+++++", 2, nil},
		{"percent at least one", Selection{Mode: SelectPercent, Value: 10}, "+++", 1, nil},
		{"percent counts down targets too", Selection{Mode: SelectPercent, Value: 50}, "++--", 2, nil},
		{"min_available holds", Selection{Mode: SelectCount, Value: 1, MinAvailable: 2}, "+++", 1, nil},
		{"min_available refuses", Selection{Mode: SelectCount, Value: 2, MinAvailable: 2}, "+++", 0, ErrMinAvailable},
		{"min_available counts only up", Selection{Mode: SelectOne, MinAvailable: 2}, "++-", 0, ErrMinAvailable},
		{"all with a floor", Selection{Mode: SelectAll, MinAvailable: 1}, "++", 0, ErrMinAvailable},
		{"more than up", Selection{Mode: SelectCount, Value: 3}, "++-", 0, ErrNotEnoughUp},
		{"none up", Selection{Mode: SelectAll}, "--", 0, ErrNotEnoughUp},
		{"nothing matches", Selection{Mode: SelectOne}, "", 0, ErrNoTargets},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := nodes(tt.targets)
			got, err := Choose(tt.sel, testRand(1), items, nodeUp)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Choose() error = %v, want %v", err, tt.wantErr)
				}
				var se *SelectionError
				if !errors.As(err, &se) || se.Total != len(items) {
					t.Errorf("Choose() error = %#v, want a *SelectionError with Total %d", err, len(items))
				}
				if got != nil {
					t.Errorf("Choose() picked %v with an error, want nothing", names(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("Choose() error = %v", err)
			}
			if len(got) != tt.want {
				t.Fatalf("Choose() picked %v, want %d targets", names(got), tt.want)
			}
			for _, n := range got {
				if !n.up {
					t.Errorf("Choose() picked %s, which is down", n.name)
				}
			}
			if !slices.IsSortedFunc(got, func(a, b node) int { return strings.Compare(a.name, b.name) }) {
				t.Errorf("Choose() = %v, want the input order kept", names(got))
			}
			if c := slices.CompactFunc(slices.Clone(got), func(a, b node) bool { return a.name == b.name }); len(c) != len(got) {
				t.Errorf("Choose() picked a target twice: %v", names(got))
			}
		})
	}
}

func TestChooseErrorMessages(t *testing.T) {
	tests := []struct {
		name    string
		sel     Selection
		targets string
		want    string
	}{
		{"floor", Selection{Mode: SelectCount, Value: 2, MinAvailable: 2}, "+++",
			"select mode count value 2 min_available 2: refused: acting on 2 of the 3 targets up would leave 1 up, fewer than min_available 2 (3 match in all)"},
		{"too few up", Selection{Mode: SelectCount, Value: 3}, "++-",
			"select mode count value 3: refused: it picks 3 targets but only 2 of the 3 that match are up"},
		{"none up", Selection{Mode: SelectAll}, "--",
			"select mode all: refused: none of the 2 targets that match is up"},
		{"none match", Selection{Mode: SelectOne}, "", "select mode one: no target matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Choose(tt.sel, testRand(1), nodes(tt.targets), nodeUp)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Choose() error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestChooseIsSeededAndUniform(t *testing.T) {
	items := nodes("+++++")
	sel := Selection{Mode: SelectCount, Value: 2}
	a, err := Choose(sel, testRand(42), items, nodeUp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Choose(sel, testRand(42), items, nodeUp)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(a), names(b)) {
		t.Errorf("same seed picked %v then %v, want the same pick", names(a), names(b))
	}
	// Over many draws from one seeded source every target is picked about
	// 2/5 of the time; 4000 draws put ±5 standard deviations well inside ±0.05.
	rng := testRand(7)
	counts := map[string]int{}
	const draws = 4000
	for range draws {
		got, err := Choose(sel, rng, items, nodeUp)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range got {
			counts[n.name]++
		}
	}
	for _, n := range items {
		if share := float64(counts[n.name]) / draws; share < 0.35 || share > 0.45 {
			t.Errorf("target %s picked in %.3f of draws, want about 0.4", n.name, share)
		}
	}
}

func TestChooseWithoutRandom(t *testing.T) {
	items := nodes("+++")
	if got, err := Choose(Selection{Mode: SelectAll}, nil, items, nodeUp); err != nil || len(got) != 3 {
		t.Errorf("Choose(all, nil rng) = %v, %v; want all three", names(got), err)
	}
	if _, err := Choose(Selection{Mode: SelectOne}, nil, items, nodeUp); err == nil {
		t.Error("Choose(one of three, nil rng) = nil error, want one saying there is no random source")
	}
}

// BenchmarkChoose picks 10 of 100 targets, as a fault's Inject does once.
func BenchmarkChoose(b *testing.B) {
	items := nodes(strings.Repeat("+", 90) + strings.Repeat("-", 10))
	sel := Selection{Mode: SelectCount, Value: 10, MinAvailable: 50}
	rng := testRand(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Choose(sel, rng, items, nodeUp); err != nil {
			b.Fatal(err)
		}
	}
}
