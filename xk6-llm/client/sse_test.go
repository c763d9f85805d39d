package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// sseRefEvent is an event as the reference decoder sees it.
type sseRefEvent struct {
	Type, Data, ID string
}

// sseRefDecode is a deliberately simple, whole-input reading of the WHATWG
// event-stream rules, used as the oracle for the incremental decoder.
func sseRefDecode(in []byte) []sseRefEvent {
	s := string(in)
	s = strings.TrimPrefix(s, "\uFEFF")
	var (
		events         []sseRefEvent
		data, typ, id  string
		dataLinesExist bool
	)
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break // an unterminated last line is not a field
		}
		line := s[:i]
		if strings.HasPrefix(s[i:], "\r\n") {
			s = s[i+2:]
		} else {
			s = s[i+1:]
		}
		switch {
		case line == "":
			if dataLinesExist {
				events = append(events, sseRefEvent{Type: typ, Data: strings.TrimSuffix(data, "\n"), ID: id})
			}
			data, typ, dataLinesExist = "", "", false
		case strings.HasPrefix(line, ":"):
		default:
			field, value, found := strings.Cut(line, ":")
			if found {
				value = strings.TrimPrefix(value, " ")
			}
			switch field {
			case "data":
				data += value + "\n"
				dataLinesExist = true
			case "event":
				typ = value
			case "id":
				if !strings.Contains(value, "\x00") {
					id = value
				}
			}
		}
	}
	return events
}

// sseDecodeAll runs the incremental decoder to its end.
func sseDecodeAll(r io.Reader, maxLine int) ([]sseRefEvent, error) {
	d := NewSSEDecoder(r, maxLine)
	var got []sseRefEvent
	for {
		ev, err := d.Next()
		if err != nil {
			return got, err
		}
		got = append(got, sseRefEvent{Type: string(ev.Type), Data: string(ev.Data), ID: string(ev.ID)})
	}
}

// sseSplitReader returns its input in pieces whose sizes come from sizes
// (cycled), so tests and the fuzzer can choose where reads split.
type sseSplitReader struct {
	in    []byte
	sizes []byte
	k     int
}

func (s *sseSplitReader) Read(p []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	n := len(s.in)
	if len(s.sizes) > 0 {
		n = 1 + int(s.sizes[s.k%len(s.sizes)])%17
		s.k++
	}
	n = min(n, len(s.in), len(p))
	copy(p, s.in[:n])
	s.in = s.in[n:]
	return n, nil
}

func TestSSEDecoder(t *testing.T) {
	chunk := `{"choices":[{"delta":{"content":"hi"}}]}`
	tests := []struct {
		name string
		in   string
		want []sseRefEvent
	}{
		{"lf", "data: a\n\ndata: b\n\n", []sseRefEvent{{Data: "a"}, {Data: "b"}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []sseRefEvent{{Data: "a"}, {Data: "b"}}},
		{"cr only", "data: a\r\rdata: b\r\r", []sseRefEvent{{Data: "a"}, {Data: "b"}}},
		{"mixed endings", "data: a\r\n\ndata: b\r\rdata: c\n\r\n", []sseRefEvent{{Data: "a"}, {Data: "b"}, {Data: "c"}}},
		{"openai chunk and done", "data: " + chunk + "\n\ndata: [DONE]\n\n", []sseRefEvent{{Data: chunk}, {Data: "[DONE]"}}},
		{"comments ignored", ": keep-alive\n\n:x\ndata: a\n: mid\n\n", []sseRefEvent{{Data: "a"}}},
		{"multi-line data joined", "data: a\ndata: b\ndata:\n\n", []sseRefEvent{{Data: "a\nb\n"}}},
		{"no space after colon", "data:a\n\n", []sseRefEvent{{Data: "a"}}},
		{"only one space removed", "data:  a \n\n", []sseRefEvent{{Data: " a "}}},
		{"field without colon", "data\n\n", []sseRefEvent{{Data: ""}}},
		{"colon in value kept", "data: {\"a\":1}\n\n", []sseRefEvent{{Data: `{"a":1}`}}},
		{"event type and id", "event: delta\nid: 7\ndata: a\n\ndata: b\n\n", []sseRefEvent{{Type: "delta", Data: "a", ID: "7"}, {Data: "b", ID: "7"}}},
		{"id with NUL ignored", "id: 1\n\nid: 2\x003\ndata: a\n\n", []sseRefEvent{{Data: "a", ID: "1"}}},
		{"blank line without data dispatches nothing", "\n\nevent: x\n\ndata: a\n\n", []sseRefEvent{{Data: "a"}}},
		{"unknown fields ignored", "foo: bar\ndata: a\nDATA: b\n\n", []sseRefEvent{{Data: "a"}}},
		{"bom skipped once", "\uFEFFdata: a\n\n", []sseRefEvent{{Data: "a"}}},
		{"second bom is a field name", "\uFEFF\uFEFFdata: a\n\ndata: b\n\n", []sseRefEvent{{Data: "b"}}},
		{"unfinished event discarded", "data: a\n\ndata: b\n", []sseRefEvent{{Data: "a"}}},
		{"unterminated line discarded", "data: a\n\ndata: b", []sseRefEvent{{Data: "a"}}},
		{"empty stream", "", nil},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				got, err := sseDecodeAll(rd.wrap(strings.NewReader(tt.in)), 0)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %q, want %q", got, tt.want)
				}
				if ref := sseRefDecode([]byte(tt.in)); !reflect.DeepEqual(ref, tt.want) {
					t.Errorf("reference decoder got %q, want %q (test table or oracle wrong)", ref, tt.want)
				}
			})
		}
	}
}

func TestSSEDecoderComment(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // each event's Comment
	}{
		{"last comment of the event", ": first\n:second\ndata: a\n\n", []string{"second"}},
		{"one leading space removed", ":  two spaces\ndata: a\n\n", []string{" two spaces"}},
		{"cleared after dispatch", ": c\ndata: a\n\ndata: b\n\n", []string{"c", ""}},
		{"dropped with a data-less blank line", ": ping\n\ndata: a\n\n", []string{""}},
		{"split across reads and CRLF", ": x\r\ndata: a\r\n\r\n", []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewSSEDecoder(iotest.OneByteReader(strings.NewReader(tt.in)), 0)
			var got []string
			for {
				ev, err := d.Next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				got = append(got, string(ev.Comment))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got comments %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSSEDecoderDoneAndRetry(t *testing.T) {
	d := NewSSEDecoder(strings.NewReader("retry: 1500\ndata: [DONE]\n\nretry: x\ndata: [DONE] \n\n"), 0)
	ev, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !ev.IsDone() {
		t.Errorf("IsDone(%q) = false, want true", ev.Data)
	}
	if got, want := d.Retry(), 1500; got != want {
		t.Errorf("Retry() = %d, want %d", got, want)
	}
	ev, err = d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if ev.IsDone() {
		t.Errorf("IsDone(%q) = true, want false", ev.Data)
	}
	if got, want := d.Retry(), 1500; got != want {
		t.Errorf("Retry() after a non-numeric retry = %d, want %d", got, want)
	}
}

// TestSSEDecoderCRLFSplitAcrossReads checks that a CR ending one read
// dispatches at once (no wait for the LF) and that the LF starting the next
// read is not taken for a blank line.
func TestSSEDecoderCRLFSplitAcrossReads(t *testing.T) {
	pr, pw := io.Pipe()
	d := NewSSEDecoder(pr, 0)
	type result struct {
		ev  sseRefEvent
		err error
	}
	out := make(chan result, 4)
	go func() {
		for {
			ev, err := d.Next()
			out <- result{sseRefEvent{Data: string(ev.Data)}, err}
			if err != nil {
				return
			}
		}
	}()
	if _, err := pw.Write([]byte("data: a\r\n\r")); err != nil {
		t.Fatal(err)
	}
	// The event must come out now, before the trailing LF is written.
	if r := <-out; r.err != nil || r.ev.Data != "a" {
		t.Fatalf("first event = %q, %v; want \"a\", nil", r.ev.Data, r.err)
	}
	if _, err := pw.Write([]byte("\ndata: b\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if r := <-out; r.err != nil || r.ev.Data != "b" {
		t.Fatalf("second event = %q, %v; want \"b\", nil", r.ev.Data, r.err)
	}
	pw.Close()
	if r := <-out; !errors.Is(r.err, io.EOF) {
		t.Fatalf("end = %v, want io.EOF", r.err)
	}
}

func TestSSEDecoder16MiBLine(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 16<<20)
	in := append(append([]byte("data: "), payload...), "\n\ndata: [DONE]\n\n"...)
	// Whole-buffer reads first: the line crosses every buffer growth.
	d := NewSSEDecoder(&sseSplitReader{in: in, sizes: nil}, 0)
	ev, err := d.Next()
	if err != nil {
		t.Fatalf("16 MiB data line: %v", err)
	}
	if !bytes.Equal(ev.Data, payload) {
		t.Fatalf("16 MiB data line: got %d bytes, want %d", len(ev.Data), len(payload))
	}
	ev, err = d.Next()
	if err != nil || !ev.IsDone() {
		t.Fatalf("after the long line: %q, %v; want [DONE]", ev.Data, err)
	}

	one := NewSSEDecoder(iotest.HalfReader(bytes.NewReader(in)), 0)
	if ev, err := one.Next(); err != nil || len(ev.Data) != len(payload) {
		t.Fatalf("16 MiB data line, half reads: %d bytes, %v", len(ev.Data), err)
	}
}

func TestSSEDecoderTooLong(t *testing.T) {
	tests := []struct {
		name    string
		r       io.Reader
		maxLine int
	}{
		{"over the default limit", io.MultiReader(strings.NewReader("data: "), bytes.NewReader(bytes.Repeat([]byte("x"), DefaultMaxSSELine-5)), strings.NewReader("\n\n")), 0},
		{"endless line", iotest.HalfReader(sseEndlessReader{}), 1 << 10},
		{"endless event of short lines", strings.NewReader(strings.Repeat("data: 0123456789\n", 200) + "\n"), 1 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewSSEDecoder(tt.r, tt.maxLine)
			_, err := d.Next()
			if !errors.Is(err, ErrSSETooLong) {
				t.Fatalf("err = %v, want ErrSSETooLong", err)
			}
			if _, err2 := d.Next(); !errors.Is(err2, ErrSSETooLong) {
				t.Errorf("second Next err = %v, want the same error", err2)
			}
		})
	}
}

// sseEndlessReader yields 'x' forever.
type sseEndlessReader struct{}

func (sseEndlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestSSEDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	d := NewSSEDecoder(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), 0)
	if ev, err := d.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first event = %q, %v", ev.Data, err)
	}
	if _, err := d.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestSSEDecoderNoProgress(t *testing.T) {
	d := NewSSEDecoder(sseZeroReader{}, 0)
	if _, err := d.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}

// sseZeroReader returns (0, nil) forever.
type sseZeroReader struct{}

func (sseZeroReader) Read([]byte) (int, error) { return 0, nil }

func TestSSEDecoderAllocs(t *testing.T) {
	var stream bytes.Buffer
	for range 1000 {
		stream.WriteString(`data: {"choices":[{"delta":{"content":"token"}}]}` + "\n\n")
	}
	in := stream.Bytes()
	d := NewSSEDecoder(bytes.NewReader(in), 0)
	r := bytes.NewReader(in)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(in)
		d.Reset(iotest.HalfReader(r), 0)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	})
	if allocs > 2 { // the HalfReader wrapper itself
		t.Errorf("allocations per 1000-event stream = %v, want <= 2", allocs)
	}
}

func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: a\r\n\r\ndata: b\r\rdata: c\n\r\n",
		": comment\nevent: x\nid: 1\ndata: a\ndata: b\n\n",
		"\uFEFFdata:a\n\ndata",
		"retry: 10\ndata\n\n\n",
	} {
		f.Add([]byte(s), []byte{0, 3, 7, 1})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		want := sseRefDecode(in)
		got, err := sseDecodeAll(&sseSplitReader{in: bytes.Clone(in), sizes: sizes}, 0)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v, want io.EOF", err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("input %q split by %v:\n got %q\nwant %q", in, sizes, got, want)
		}
	})
}

func BenchmarkSSEDecoder(b *testing.B) {
	var stream bytes.Buffer
	const events = 1000
	chunk := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`
	for range events {
		fmt.Fprintf(&stream, "data: %s\n\n", chunk)
	}
	in := stream.Bytes()
	r := bytes.NewReader(in)
	d := NewSSEDecoder(r, 0)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		d.Reset(r, 0)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}
