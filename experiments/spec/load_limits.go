package spec

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Limits checked on a file's bytes before the YAML parser sees them: the
// parser's memory grows with the nesting it meets (a 120 kB file nested
// 60,000 deep took 6.6 GB), so a file bigger or deeper than any
// experiment or suite needs is refused first, with its position.
const (
	// MaxFileSize is the largest experiment or suite file read.
	MaxFileSize = 1 << 20
	// maxCapacityFileSize is the largest capacity file a rate given as a
	// share reads: a search's file is about 1.5 kB a step.
	maxCapacityFileSize = 16 << 20
	// maxRawDepth bounds the nesting the raw scan counts (scanDepth):
	// above maxDepth, which the tree builder checks exactly, since the
	// scan counts conservatively (a bracket in a plain scalar counts).
	maxRawDepth = 4 * maxDepth
)

// checkRaw refuses a file over MaxFileSize or nested deeper than
// maxRawDepth, as a positioned problem; nil when it may be parsed.
func checkRaw(name string, data []byte, what string) *field.Problem {
	if len(data) > MaxFileSize {
		p := problemAt(name, 1, 1, "", fmt.Sprintf("the file is bigger than %s file may be: at most %d (1 MiB)", what, MaxFileSize), false)
		return &p
	}
	if line, col, deep := scanDepth(data, maxRawDepth); deep {
		p := problemAt(name, line, col, "", fmt.Sprintf("nesting deeper than %d levels: %s file needs far less; not parsed", maxDepth, what), false)
		return &p
	}
	return nil
}

// scanDepth walks YAML text and reports the first place where its
// nesting passes limit. It counts, without parsing, an upper bound of the
// nesting at each point: the block levels (a stack of indentation columns,
// plus one per "- " that opens a line's content) and the open flow
// collections ([ and {) outside quoted scalars, comments and block
// scalars (| and >).
func scanDepth(data []byte, limit int) (line, col int, deep bool) {
	var (
		indents []int // indentation columns of the open block levels
		flow    int   // open [ and {
		block   = -1  // indentation of the key that opened a block scalar, -1 none
	)
	for ln, rest := 1, data; len(rest) > 0; ln++ {
		var text []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			text, rest = rest[:i], rest[i+1:]
		} else {
			text, rest = rest, nil
		}
		ind := 0
		for ind < len(text) && text[ind] == ' ' {
			ind++
		}
		content := bytes.TrimRight(text[ind:], " \t\r")
		if len(content) == 0 || content[0] == '#' {
			continue
		}
		if block >= 0 {
			if ind > block {
				continue // a line of the block scalar
			}
			block = -1
		}
		if flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] >= ind {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, ind)
		}
		depth := len(indents)
		quote := byte(0)
		prev := byte(' ')
		for i := 0; i < len(content); i++ {
			c := content[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '#' && (prev == ' ' || prev == '\t'):
				i = len(content) // a comment: the rest of the line
			case (c == '\'' || c == '"') && bytes.IndexByte([]byte(" \t[{,:-"), prev) >= 0:
				quote = c
			case c == '[' || c == '{':
				flow++
			case (c == ']' || c == '}') && flow > 0:
				flow--
			case c == '-' && flow == 0 && (i+1 == len(content) || content[i+1] == ' ') && (i == 0 || prev == ' '):
				depth++ // a sequence entry opened on this line
			}
			prev = c
			if depth+flow > limit {
				return ln, ind + i + 1, true
			}
		}
		if quote == 0 && flow == 0 && len(content) > 0 {
			last := content
			if j := bytes.Index(last, []byte(" #")); j >= 0 {
				last = bytes.TrimRight(last[:j], " \t")
			}
			if n := len(last); n > 0 && (last[n-1] == '|' || last[n-1] == '>' ||
				n > 1 && (last[n-2] == '|' || last[n-2] == '>') && (last[n-1] == '-' || last[n-1] == '+' || '1' <= last[n-1] && last[n-1] <= '9')) {
				block = ind
			}
		}
	}
	return 0, 0, false
}

// readFile reads an experiment or suite file, at most MaxFileSize + 1
// bytes of it (enough for checkRaw to refuse a bigger one), and refuses a
// device (/dev/zero would never end) before reading it; a pipe is read
// (process substitution), bounded the same.
func readFile(path string) ([]byte, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// readFileLimit reads the file at path, refusing a device, a socket, a
// directory or a file of more than limit bytes (what is means the file in
// the error: "a capacity file"); a regular file is refused by its size
// before any of it is read.
func readFileLimit(path string, limit int64, what string) ([]byte, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooBig := fmt.Errorf("%s is bigger than %s may be: at most %d bytes", path, what, limit)
	if st.Mode().IsRegular() && st.Size() > limit {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, tooBig
	}
	return b, err
}

// openRegular opens the file at path, refusing a device, a socket or a
// directory, which reading would never end or could not parse.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if st.Mode()&(os.ModeDevice|os.ModeCharDevice|os.ModeSocket) != 0 || st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	return f, st, nil
}
