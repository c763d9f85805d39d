package experiments

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llmchaos/llmchaos/report"
)

// Note records a facilitator's note (a observation, a hypothesis) by by
// at the current run-clock time, as an event of the run, and returns it.
func (l *Control) Note(text, by string) (report.EventRecord, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return report.EventRecord{}, errors.New("the note is empty")
	}
	if len(text) > 4000 {
		return report.EventRecord{}, fmt.Errorf("the note has %d characters: at most 4000", len(text))
	}
	r, err := l.enter()
	if err != nil {
		return report.EventRecord{}, err
	}
	defer l.busy.Done()
	return r.obs.eventBy(report.EventSourceGameDay, "note", "", text, by), nil
}

// Events returns the run's events from the i-th on, and the next i.
func (l *Control) Events(i int) ([]report.EventRecord, int) {
	select {
	case <-l.ready:
	default:
		return nil, 0
	}
	return l.r.obs.eventsFrom(i)
}
