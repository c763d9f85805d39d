package script

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// progressInterval is how often the progress line is written, as k6's.
const progressInterval = time.Second

// progressLine is k6's progress line: the run's time, the VUs active of
// those initialized, and the iterations completed and interrupted.
func progressLine(elapsed time.Duration, ex *js.Execution) string {
	m := int(elapsed / time.Minute)
	s := (elapsed % time.Minute).Seconds()
	return fmt.Sprintf("running (%dm%04.1fs), %d/%d VUs, %d complete and %d interrupted iterations",
		m, s, ex.Active(), ex.Initialized(), ex.Completed(), ex.Interrupted())
}

// startProgress writes the progress line to w every second until the
// returned stop, which writes it a last time: on a terminal (tty) the
// line rewrites itself, elsewhere (a CI log) each is a line of its own.
// A nil w writes nothing.
func startProgress(w io.Writer, tty bool, now func() time.Duration, ex *js.Execution) (stop func()) {
	if w == nil {
		return func() {}
	}
	write := func(last bool) {
		line := progressLine(now(), ex)
		switch {
		case tty && last:
			fmt.Fprintf(w, "\r%s\x1b[K\n", line)
		case tty:
			fmt.Fprintf(w, "\r%s\x1b[K", line)
		default:
			fmt.Fprintln(w, line)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				write(false)
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			write(true)
		})
	}
}
