package shardjob

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// framedOutput writes what a shard writes with --framed: n request lines
// (of varied lengths, some over one chunk) through Lines, then a report
// of size bytes, and returns the framed bytes, the request lines and the
// report.
func framedOutput(t *testing.T, n, size int) (log, reqs, rep []byte) {
	t.Helper()
	var out, want bytes.Buffer
	fw := NewFrameWriter(&out)
	lines := fw.Lines(FrameRequest)
	for i := range n {
		line := fmt.Sprintf("{\"seq\":%d,\"pad\":%q}\n", i, strings.Repeat("x", (i*37)%500))
		want.WriteString(line)
		// In pieces, as a buffered writer flushes.
		for k := 0; k < len(line); k += 100 {
			if _, err := lines.Write([]byte(line[k:min(k+100, len(line))])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := lines.Close(); err != nil {
		t.Fatal(err)
	}
	var r bytes.Buffer
	r.WriteString("{\n")
	for r.Len() < size {
		fmt.Fprintf(&r, "  \"k%d\": %d,\n", r.Len(), r.Len())
	}
	r.WriteString("  \"end\": true\n}\n")
	if err := fw.Record(FrameReport, r.Bytes()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), want.Bytes(), r.Bytes()
}

func TestUnframeRoundTrip(t *testing.T) {
	log, reqs, rep := framedOutput(t, 50, 20000)
	for _, line := range bytes.SplitAfter(log, []byte("\n")) {
		if len(line) != 0 && len(line) != FrameLineLen {
			t.Fatalf("frame line of %d bytes, want %d: %q", len(line), FrameLineLen, line)
		}
	}
	f, other, err := Unframe(log)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Requests, reqs) || !bytes.Equal(f.Report, rep) || f.Records != 51 || f.Repaired != 0 || len(other) != 0 {
		t.Fatalf("round trip: %d records, %d repaired, %d other bytes, requests equal %v, report equal %v",
			f.Records, f.Repaired, len(other), bytes.Equal(f.Requests, reqs), bytes.Equal(f.Report, rep))
	}
}

// stderrText is what a shard's other stream might hold: lines and partial
// lines of people's text, with '@' and frame-like bytes in them.
func stderrText(r *rand.Rand) []byte {
	words := []string{"llmchaos load:", "warning:", "ttft", "p99", "12ms", "@", "@@", "@@lc1", "@@lc1q0000", "verdict:", "PASS",
		"{", "}", "\"", "abcXYZ09+/=", "\t", "é"}
	var b bytes.Buffer
	for range 1 + r.IntN(30) {
		b.WriteString(words[r.IntN(len(words))])
		switch r.IntN(6) {
		case 0:
			b.WriteByte('\n')
		case 1:
			b.WriteString("\r\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

// TestUnframeSurvivesInterleaving: a container runtime reads stdout and
// stderr apart, so a log holds runs of stderr at any byte of stdout:
// between lines, at the start of a frame line, inside its marker, inside
// its payload, with or without newlines, partial lines included. With at
// most one run of stderr inside any one frame line, the output comes back
// exactly, over 400 random logs; the runs of stderr come back as the
// log's other bytes.
func TestUnframeSurvivesInterleaving(t *testing.T) {
	log, reqs, rep := framedOutput(t, 60, 30000)
	lines := len(log) / FrameLineLen
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		// Distinct frame lines receive one run each, at any offset in
		// the line (0: before it), or right after the log.
		k := 1 + r.IntN(12)
		at := map[int]int{}
		for len(at) < k {
			at[r.IntN(lines+1)] = r.IntN(FrameLineLen)
		}
		var mixed, wantOther bytes.Buffer
		for i := range lines + 1 {
			line := log[min(i*FrameLineLen, len(log)):min((i+1)*FrameLineLen, len(log))]
			off, ok := at[i]
			if !ok {
				mixed.Write(line)
				continue
			}
			off = min(off, len(line))
			x := stderrText(r)
			wantOther.Write(x)
			mixed.Write(line[:off])
			mixed.Write(x)
			mixed.Write(line[off:])
		}
		f, other, err := Unframe(mixed.Bytes())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !bytes.Equal(f.Requests, reqs) || !bytes.Equal(f.Report, rep) {
			t.Fatalf("seed %d: the output came back changed", seed)
		}
		// A run of stderr that starts or ends with the byte it meets at
		// its edge ("x@" before "@@lc1") could have been inserted one byte
		// earlier or later: the same log; only its length is certain.
		if len(other) != wantOther.Len() {
			t.Fatalf("seed %d: other bytes\n%q\nwant\n%q", seed, other, wantOther.Bytes())
		}
	}
}

// TestUnframeLost: an output that is not whole in the log is lost, never
// returned with a part missing: the log cut inside the report (the pod
// killed as it wrote it), a request's frame line gone, two runs of stderr
// inside one frame line (beyond what a frame line's length and CRC can
// undo), a report that never came.
func TestUnframeLost(t *testing.T) {
	log, _, _ := framedOutput(t, 10, 3000)
	lines := bytes.SplitAfter(log, []byte("\n"))
	twice := bytes.Clone(lines[3])
	twice = append(append(append(append(twice[:40:40], "err A\n"...), lines[3][40:100]...), "err B"...), lines[3][100:]...)
	for _, c := range []struct {
		name, why string
		log       []byte
	}{
		{"cut in the report", "record 10 has", log[:len(log)-FrameLineLen-100]},
		{"a request's line gone", "record 3 of 11 is missing", bytes.Join(append(lines[:3:3], lines[4:]...), nil)},
		{"two runs in one line", "record", bytes.Join(append(append(lines[:3:3], twice), lines[4:]...), nil)},
		{"no report", "no frame of its report", bytes.Join(lines[:len(lines)-17], nil)},
		{"no frames", "no frames", []byte("llmchaos load: preflight: connection refused\n")},
	} {
		_, _, err := Unframe(c.log)
		if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want ErrLost saying %q", c.name, err, c.why)
		}
	}
}

// TestLineLogHandsOnRequestLinesLive: followed as it comes, in pieces of
// any size, a framed log hands each request line to the LineFunc once its
// frames are in, in order, and the other lines as they are.
func TestLineLogHandsOnRequestLinesLive(t *testing.T) {
	log, reqs, _ := framedOutput(t, 30, 2000)
	log = append([]byte("llmchaos load: starts at 12:00\n"), log...)
	var got []string
	l := &LineLog{Shard: 2, Fn: func(shard int, line []byte) {
		if shard != 2 {
			t.Errorf("shard %d", shard)
		}
		got = append(got, string(line))
	}}
	r := rand.New(rand.NewPCG(1, 2))
	for p := 0; p < len(log); {
		n := min(len(log)-p, 1+r.IntN(700))
		if _, err := l.Write(log[p : p+n]); err != nil {
			t.Fatal(err)
		}
		p += n
	}
	want := append([]string{"llmchaos load: starts at 12:00"}, strings.Split(strings.TrimSuffix(string(reqs), "\n"), "\n")...)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines handed on:\n%q\nwant\n%q", got, want)
	}
	if !bytes.Equal(l.Bytes(), log) {
		t.Error("the log kept is not what was written")
	}
}
