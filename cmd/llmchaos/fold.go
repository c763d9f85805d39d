package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxWidth is the widest line llmchaos prints: its summaries are made to
// fit, and foldWriter folds what goes to stderr (a warning that quotes a
// URL and an error, a progress alarm) to fit too.
const maxWidth = 120

// foldWriter passes whole lines on to w, folding one wider than width
// runes at its last space before the limit (a hard break where there is
// none), the rest indented by two spaces. Lines with ANSI escapes pass
// unchanged (their width is not their length). A partial line waits for
// its end, or for Flush. It is safe for concurrent use.
type foldWriter struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	buf   []byte
}

func newFoldWriter(w io.Writer, width int) *foldWriter { return &foldWriter{w: w, width: width} }

func (f *foldWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = append(f.buf, p...)
	var out []byte
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, fold(string(f.buf[:i]), f.width)...)
		f.buf = f.buf[i+1:]
	}
	if len(out) > 0 {
		if _, err := f.w.Write(out); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes a partial line left, folded.
func (f *foldWriter) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.buf) == 0 {
		return nil
	}
	s := fold(string(f.buf), f.width)
	f.buf = nil
	_, err := io.WriteString(f.w, strings.TrimSuffix(s, "\n"))
	return err
}

// fold returns line, folded to width, with a newline after each piece.
func fold(line string, width int) string {
	if utf8.RuneCountInString(line) <= width || strings.Contains(line, "\x1b[") {
		return line + "\n"
	}
	const indent = "  "
	var b strings.Builder
	first := true
	for {
		limit := width
		if !first {
			limit -= len(indent)
			b.WriteString(indent)
		}
		if utf8.RuneCountInString(line) <= limit {
			b.WriteString(line + "\n")
			return b.String()
		}
		cut := runeOffset(line, limit)
		at := strings.LastIndexByte(line[:cut+1], ' ')
		if at <= 0 {
			at = cut // no space: a hard break
			b.WriteString(line[:at] + "\n")
			line = line[at:]
		} else {
			b.WriteString(strings.TrimRight(line[:at], " ") + "\n")
			line = strings.TrimLeft(line[at:], " ")
		}
		first = false
	}
}

// runeOffset is the byte offset of the n-th rune of s (len(s) when s is
// shorter).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// unfolded is the writer under w when w is a foldWriter, else w: k6's log
// lines (a JSON object each, or key=value pairs a tool parses) are written
// whole, as k6 writes them, never folded.
func unfolded(w io.Writer) io.Writer {
	if f, ok := w.(*foldWriter); ok {
		return f.w
	}
	return w
}
