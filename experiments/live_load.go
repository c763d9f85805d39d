package experiments

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// LoadChange changes a live run's load; nil fields stay as they are.
type LoadChange struct {
	// Rate is the open loop's new rate, in requests per second.
	Rate *float64 `json:"rate,omitempty"`
	// Users is the closed loop's new number of virtual users.
	Users *int `json:"users,omitempty"`
	// Paused pauses (true) or resumes (false) the load.
	Paused *bool `json:"paused,omitempty"`
	// Preset switches what the requests are like to a workload preset
	// (workload.Presets: chat, batch, completion, agent), with the
	// experiment's own workload keys on top; the results keep the
	// experiment's request class.
	Preset *string `json:"preset,omitempty"`
}

// LoadState is a live run's load now: its rate or users, whether it is
// paused or ended, and the preset its requests are drawn from ("" for
// the experiment's own workload).
type LoadState struct {
	engine.LiveState
	Preset string `json:"preset,omitempty"`
}

// Load returns the load's settings now (zero before the load started).
func (l *Control) Load() LoadState {
	select {
	case <-l.ready:
		return l.loadState()
	default:
		return LoadState{}
	}
}

func (l *Control) loadState() LoadState {
	return LoadState{LiveState: l.load.State(), Preset: l.sw.Name()}
}

// switchPreset makes the load's requests those of preset name.
func (l *Control) switchPreset(r *run, name string) error {
	if r.p.spec.Workload.Dataset != "" {
		return &RefusedError{Reason: "the workload replays a dataset: its requests are the dataset's, whatever the preset"}
	}
	w := r.p.spec.Workload
	w.Preset = name
	wc, _, err := w.Configs()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(wc.Dataset) && wc.Dataset != "" {
		wc.Dataset = filepath.Join(filepath.Dir(r.p.file), wc.Dataset)
	}
	nw, err := workload.New(wc, rand.New(rand.NewPCG(r.p.seed, hashName("preset "+name))))
	if err != nil {
		return fmt.Errorf("preset %s: %w", name, err)
	}
	l.sw.Set(nw, name)
	return nil
}

// SetLoad changes the load for by: a rate for an open loop, users for a
// closed loop (the other is refused), a pause or a resume.
func (l *Control) SetLoad(c LoadChange, by string) (LoadState, error) {
	r, err := l.enter()
	if err != nil {
		return LoadState{}, err
	}
	defer l.busy.Done()
	closed := r.p.ac.Mode() == workload.ModeClosed
	var did []string
	switch {
	case c.Rate != nil && closed:
		return l.loadState(), l.refused(r, errors.New("the load is a closed loop of users: change its users, not a rate"), by)
	case c.Users != nil && !closed:
		return l.loadState(), l.refused(r, errors.New("the load is an open loop at a rate: change its rate, not users"), by)
	case c.Rate != nil:
		if err := l.load.SetRate(*c.Rate); err != nil {
			return l.loadState(), err
		}
		did = append(did, fmt.Sprintf("rate %g req/s", *c.Rate))
	case c.Users != nil:
		if err := l.load.SetUsers(*c.Users); err != nil {
			return l.loadState(), err
		}
		did = append(did, fmt.Sprintf("%d users", *c.Users))
	}
	if c.Preset != nil {
		if err := l.switchPreset(r, *c.Preset); err != nil {
			if _, ok := errors.AsType[*RefusedError](err); ok {
				return l.loadState(), l.refused(r, err, by)
			}
			return l.loadState(), err
		}
		did = append(did, "preset "+*c.Preset)
	}
	if c.Paused != nil {
		if *c.Paused {
			l.load.Pause()
			did = append(did, "paused")
		} else {
			l.load.Resume()
			did = append(did, "resumed")
		}
	}
	if len(did) > 0 {
		r.obs.eventBy(report.EventSourceGameDay, "load", "", strings.Join(did, ", "), by)
	}
	return l.loadState(), nil
}

// End ends the game day for by: the load's schedule ends (requests in
// flight get the grace), every fault is reverted, and Run writes its
// record and returns.
func (l *Control) End(by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	r.obs.eventBy(report.EventSourceGameDay, "end", "", "the game day was ended", by)
	l.load.End()
	return nil
}
