package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Trace is a replayable arrival trace: request times, and optionally the
// prompt and output lengths recorded with them.
//
// The file format is JSON Lines in the shape of the Mooncake traces (also
// read by AIPerf's trace replay), one request per line:
//
//	{"timestamp": 0, "input_length": 655, "output_length": 52}
//	{"timestamp": 10535.5, "input_length": 672}
//
// timestamp is required and in MILLISECONDS (fractions allowed); offsets are
// taken from the first line's timestamp, so a trace may start at any value.
// Timestamps must not decrease. input_length (the whole prompt as the server
// counts it, in tokens) and output_length (tokens) are optional; other
// fields (such as hash_ids) are ignored. Blank lines are skipped.
type Trace struct {
	// Entries are the trace's requests in order; At is the offset from the
	// first request, lengths are 0 where the line gives none.
	Entries []Arrival
}

// LoadTrace reads a trace file (see Trace for the format). Errors name the
// file and line.
func LoadTrace(path string) (*Trace, error) {
	f, err := openInput(path, "trace")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTrace(f, path)
}

// ParseTrace reads a trace from r; name is used in errors ("name:line: ...").
func ParseTrace(r io.Reader, name string) (*Trace, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	tr := &Trace{}
	var first, prev float64
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if b := bytes.TrimSpace(raw); len(b) > 0 {
			var rec struct {
				Timestamp    *float64 `json:"timestamp"`
				InputLength  *float64 `json:"input_length"`
				OutputLength *float64 `json:"output_length"`
			}
			if jerr := json.Unmarshal(b, &rec); jerr != nil {
				return nil, fmt.Errorf("%s:%d: not a JSON object with a numeric \"timestamp\": %w", name, line, jerr)
			}
			if rec.Timestamp == nil {
				return nil, fmt.Errorf("%s:%d: missing \"timestamp\" (milliseconds)", name, line)
			}
			ts := *rec.Timestamp
			if !finiteNum(ts) || ts < 0 {
				return nil, fmt.Errorf("%s:%d: timestamp %v must be a finite number ≥ 0 (milliseconds)", name, line, ts)
			}
			if len(tr.Entries) == 0 {
				first, prev = ts, ts
			}
			if ts < prev {
				return nil, fmt.Errorf("%s:%d: timestamp %v ms is before the previous line's %v ms; sort the trace by time", name, line, ts, prev)
			}
			prev = ts
			in, ierr := traceLength(rec.InputLength)
			if ierr != nil {
				return nil, fmt.Errorf("%s:%d: input_length: %w", name, line, ierr)
			}
			out, oerr := traceLength(rec.OutputLength)
			if oerr != nil {
				return nil, fmt.Errorf("%s:%d: output_length: %w", name, line, oerr)
			}
			tr.Entries = append(tr.Entries, Arrival{
				At:           time.Duration(math.Round((ts - first) * 1e6)),
				InputTokens:  in,
				OutputTokens: out,
			})
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(tr.Entries) == 0 {
		return nil, fmt.Errorf("%s: no requests in trace", name)
	}
	return tr, nil
}

func traceLength(v *float64) (int, error) {
	if v == nil {
		return 0, nil
	}
	if !finiteNum(*v) || *v < 0 || *v != math.Trunc(*v) {
		return 0, fmt.Errorf("%v is not a whole number of tokens ≥ 0", *v)
	}
	if *v > MaxLength {
		return 0, errTooLong(*v)
	}
	return int(*v), nil
}

// Arrivals replays the trace, ending at duration (arrivals at t < duration;
// 0: no limit) or after requests arrivals (0: no limit), whichever first.
func (t *Trace) Arrivals(duration time.Duration, requests int) Arrivals {
	return &traceArrivals{entries: t.Entries, end: duration, limit: requests}
}

type traceArrivals struct {
	entries []Arrival
	i       int
	end     time.Duration
	limit   int
}

var _ Arrivals = (*traceArrivals)(nil)

// Next returns the trace's next request.
func (p *traceArrivals) Next() (Arrival, bool) {
	if p.i >= len(p.entries) || (p.limit > 0 && p.i >= p.limit) {
		return Arrival{}, false
	}
	e := p.entries[p.i]
	if p.end > 0 && e.At >= p.end {
		p.i = len(p.entries)
		return Arrival{}, false
	}
	p.i++
	return e, true
}
