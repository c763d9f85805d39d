package workload

import (
	"math/rand/v2"
	"testing"
)

// TestSwitch: a Switch draws from the workload set last, and every session
// carries its own class.
func TestSwitch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(preset string) Workload {
		p, err := LookupPreset(preset)
		if err != nil {
			t.Fatal(err)
		}
		w, err := New(p.Workload.WithDefaults(), rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	s := NewSwitch("mine")
	s.Set(mk("chat"), "chat")
	if got := s.Next(rng, Arrival{}); got.Class != "mine" || !got.Chat {
		t.Errorf("chat session %+v, want class mine, chat", got)
	}
	s.Set(mk("completion"), "completion")
	if got := s.Next(rng, Arrival{}); got.Class != "mine" || got.Chat || s.Name() != "completion" {
		t.Errorf("after the switch: %+v (%s), want a completion of class mine", got, s.Name())
	}
}
