package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DatasetFormat names a dataset file format.
type DatasetFormat string

// Dataset formats. DatasetAuto picks by file extension (.json: ShareGPT,
// .jsonl/.ndjson: JSONL), else by the first non-blank byte ('[': ShareGPT,
// '{': JSONL).
const (
	DatasetAuto     DatasetFormat = ""
	DatasetShareGPT DatasetFormat = "sharegpt"
	DatasetJSONL    DatasetFormat = "jsonl"
)

// vLLM's ShareGPT filter (benchmarks' is_valid_sequence defaults): entries
// whose prompt or answer is under 4 tokens, whose prompt is over 1024, or
// whose prompt and answer together are over 2048 are left out.
const (
	shareGPTMinTokens       = 4
	shareGPTMaxPromptTokens = 1024
	shareGPTMaxTotalTokens  = 2048
)

// Dataset is a loaded prompt dataset: conversations to replay as sessions.
// It is immutable after loading and safe for concurrent reads.
type Dataset struct {
	Entries []DatasetEntry
	// Skipped counts entries the format's filter left out (ShareGPT: too
	// short, too long, or no human turn answered by the model).
	Skipped int
}

// DatasetEntry is one conversation of a dataset: an optional system prompt
// and one or more user turns.
type DatasetEntry struct {
	System string
	Turns  []DatasetTurn
}

// DatasetTurn is one user turn and, when the dataset records the answer,
// its length in estimated tokens (0: unknown).
type DatasetTurn struct {
	User         string
	OutputTokens int
}

// LoadDataset reads a dataset file in format (DatasetAuto to detect it).
//
// ShareGPT (as vLLM's bench reads it): a JSON array of objects with a
// "conversations" list of {"from": "human"|"gpt", "value": TEXT}. The first
// human turn is the prompt and the model turn right after it gives the
// output length (its estimated tokens); later turns are ignored. Entries
// without such a pair, or outside vLLM's length filter (prompt and answer
// ≥ 4 tokens, prompt ≤ 1024, both ≤ 2048), are skipped and counted.
//
// JSONL: one object per line with either "prompt": TEXT or "messages":
// [{"role": "system"|"user"|"assistant", "content": TEXT}, ...], and
// optionally one of "output_tokens", "output_length" or "max_tokens" (the
// last turn's output length in tokens). A messages entry becomes a
// multi-turn session: each user message opens a turn (consecutive ones are
// joined), an assistant message after it gives that turn's output length
// (its estimated tokens; the engine sends the live replies, not the
// dataset's), and a system message may only come first. Blank lines are
// skipped.
//
// Errors name the file and line ("data.jsonl:7: ...").
func LoadDataset(path string, format DatasetFormat) (*Dataset, error) {
	f, err := openInput(path, "dataset")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if format == DatasetAuto {
		if format, err = detectDatasetFormat(f, path); err != nil {
			return nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", path, err)
		}
	}
	switch format {
	case DatasetShareGPT:
		return ParseShareGPT(f, path)
	case DatasetJSONL:
		return ParseJSONLDataset(f, path)
	}
	return nil, fmt.Errorf("dataset %s: unknown format %q (want sharegpt or jsonl)", path, format)
}

func detectDatasetFormat(r io.Reader, path string) (DatasetFormat, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return DatasetShareGPT, nil
	case ".jsonl", ".ndjson":
		return DatasetJSONL, nil
	}
	br := bufio.NewReader(r)
	for {
		c, err := br.ReadByte()
		if err != nil {
			return "", fmt.Errorf("dataset %s: empty file, or cannot tell its format: set it (sharegpt or jsonl)", path)
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			return DatasetShareGPT, nil
		case '{':
			return DatasetJSONL, nil
		}
		return "", fmt.Errorf("dataset %s: starts with %q, neither a JSON array (sharegpt) nor an object per line (jsonl)", path, c)
	}
}

// ParseShareGPT reads a ShareGPT JSON array from r (see LoadDataset); name
// is used in errors. r is read once as a stream and read again from the
// start only to find the line of an error.
func ParseShareGPT(r io.ReadSeeker, name string) (*Dataset, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 256<<10))
	lineErr := func(off int64, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineAtOffset(r, off), fmt.Sprintf(format, args...))
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, lineErr(jsonErrOffset(err, dec.InputOffset()), "not a JSON array of conversations: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, lineErr(0, "want a JSON array of conversations, found %v", tok)
	}
	ds := &Dataset{}
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var e struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := dec.Decode(&e); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, lineErr(jsonErrOffset(err, start), "entry %d: %v", i, err)
			}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				// A field's type error counts its offset from the
				// entry's start, and points just past the bad value.
				return nil, lineErr(valueStart(r, start)+te.Offset-1, "entry %d: %s: want %s, found a JSON %s", i, te.Field, te.Type, te.Value)
			}
			if te != nil {
				return nil, lineErr(start, "entry %d: want an object {\"conversations\": [{\"from\": ..., \"value\": TEXT}, ...]}, found a JSON %s", i, te.Value)
			}
			return nil, lineErr(start, "entry %d: %v", i, err)
		}
		prompt, answer, ok := "", "", false
		for j, c := range e.Conversations {
			if isHumanRole(c.From) {
				if j+1 < len(e.Conversations) && !isHumanRole(e.Conversations[j+1].From) && e.Conversations[j+1].From != "system" {
					prompt, answer, ok = c.Value, e.Conversations[j+1].Value, true
				}
				break
			}
		}
		in, out := EstimateTokens(prompt), EstimateTokens(answer)
		if !ok || in < shareGPTMinTokens || out < shareGPTMinTokens ||
			in > shareGPTMaxPromptTokens || in+out > shareGPTMaxTotalTokens {
			ds.Skipped++
			continue
		}
		ds.Entries = append(ds.Entries, DatasetEntry{Turns: []DatasetTurn{{User: prompt, OutputTokens: out}}})
	}
	if _, err := dec.Token(); err != nil {
		return nil, lineErr(jsonErrOffset(err, dec.InputOffset()), "unterminated array: %v", err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, lineErr(dec.InputOffset(), "data after the array: %v", errOrToken(tok, err))
	}
	if len(ds.Entries) == 0 {
		return nil, fmt.Errorf("%s: no usable conversations (%d skipped by the length filter or for lacking a human turn answered by the model)", name, ds.Skipped)
	}
	return ds, nil
}

func errOrToken(tok json.Token, err error) any {
	if err != nil {
		return err
	}
	return tok
}

func isHumanRole(from string) bool { return from == "human" || from == "user" }

// jsonErrOffset returns the byte offset a JSON syntax error points at (the
// decoder reports it from the start of the stream), or def.
func jsonErrOffset(err error, def int64) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return se.Offset - 1
	}
	return def
}

// scanBlank rereads r from the start up to the first non-blank byte at or
// after off (commas count as blank: off often points at the end of the
// previous array element) and returns that byte's offset and 1-based line.
// When reading fails it returns off and line 0.
func scanBlank(r io.ReadSeeker, off int64, skipBlank bool) (pos int64, line int) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return off, 0
	}
	br := bufio.NewReader(r)
	line = 1
	for pos = 0; ; pos++ {
		c, err := br.ReadByte()
		if err != nil {
			return pos, line
		}
		if pos >= off && (!skipBlank || (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',')) {
			return pos, line
		}
		if c == '\n' {
			line++
		}
	}
}

// lineAtOffset returns the line of the first non-blank byte at or after off.
func lineAtOffset(r io.ReadSeeker, off int64) int {
	_, line := scanBlank(r, off, true)
	return line
}

// valueStart returns the offset of the JSON value that begins after off.
func valueStart(r io.ReadSeeker, off int64) int64 {
	pos, _ := scanBlank(r, off, true)
	return pos
}

// ParseJSONLDataset reads a JSONL dataset from r (see LoadDataset); name is
// used in errors.
func ParseJSONLDataset(r io.Reader, name string) (*Dataset, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	ds := &Dataset{}
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if b := bytes.TrimSpace(raw); len(b) > 0 {
			e, perr := parseJSONLEntry(b)
			if perr != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, perr)
			}
			ds.Entries = append(ds.Entries, e)
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(ds.Entries) == 0 {
		return nil, fmt.Errorf("%s: no entries", name)
	}
	return ds, nil
}

func parseJSONLEntry(b []byte) (DatasetEntry, error) {
	var rec struct {
		Prompt   *string `json:"prompt"`
		Messages *[]struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		OutputTokens *int `json:"output_tokens"`
		OutputLength *int `json:"output_length"`
		MaxTokens    *int `json:"max_tokens"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return DatasetEntry{}, fmt.Errorf("not a JSON object with \"prompt\" or \"messages\": %w", err)
	}
	out := 0
	n := 0
	for _, v := range []*int{rec.OutputTokens, rec.OutputLength, rec.MaxTokens} {
		if v != nil {
			n++
			out = *v
		}
	}
	if n > 1 {
		return DatasetEntry{}, errors.New("give one of output_tokens, output_length, max_tokens, not several")
	}
	if out < 0 {
		return DatasetEntry{}, fmt.Errorf("output length %d must be ≥ 0", out)
	}
	if out > MaxLength {
		return DatasetEntry{}, fmt.Errorf("output length: %w", errTooLong(float64(out)))
	}
	switch {
	case rec.Prompt != nil && rec.Messages != nil:
		return DatasetEntry{}, errors.New("both \"prompt\" and \"messages\": give one")
	case rec.Prompt != nil:
		if *rec.Prompt == "" {
			return DatasetEntry{}, errors.New("\"prompt\" is empty")
		}
		return DatasetEntry{Turns: []DatasetTurn{{User: *rec.Prompt, OutputTokens: out}}}, nil
	case rec.Messages == nil:
		return DatasetEntry{}, errors.New("neither \"prompt\" nor \"messages\"")
	}
	var e DatasetEntry
	for i, m := range *rec.Messages {
		var content string
		if err := json.Unmarshal(m.Content, &content); err != nil {
			return DatasetEntry{}, fmt.Errorf("messages[%d].content: only a string is supported", i)
		}
		switch m.Role {
		case "system":
			if i != 0 {
				return DatasetEntry{}, fmt.Errorf("messages[%d]: a system message may only come first", i)
			}
			e.System = content
		case "user":
			if k := len(e.Turns); k > 0 && (*rec.Messages)[i-1].Role == "user" {
				e.Turns[k-1].User += "\n" + content
			} else {
				e.Turns = append(e.Turns, DatasetTurn{User: content})
			}
		case "assistant":
			if len(e.Turns) == 0 {
				return DatasetEntry{}, fmt.Errorf("messages[%d]: an assistant message before any user message", i)
			}
			e.Turns[len(e.Turns)-1].OutputTokens += EstimateTokens(content)
		default:
			return DatasetEntry{}, fmt.Errorf("messages[%d]: role %q (want system, user or assistant)", i, m.Role)
		}
	}
	if len(e.Turns) == 0 {
		return DatasetEntry{}, errors.New("\"messages\" has no user message")
	}
	for i, t := range e.Turns {
		if t.User == "" {
			return DatasetEntry{}, fmt.Errorf("turn %d: empty user message", i)
		}
	}
	if n > 0 {
		e.Turns[len(e.Turns)-1].OutputTokens = out
	}
	for i, t := range e.Turns {
		if t.OutputTokens > MaxLength {
			return DatasetEntry{}, fmt.Errorf("turn %d: the assistant's answer: %w", i, errTooLong(float64(t.OutputTokens)))
		}
	}
	return e, nil
}

// MaxInputFileBytes bounds a dataset or trace file: parsed, a file takes a
// few times its size in memory, and 2 GiB (ShareGPT's whole dump is about a
// third of it) keeps that within a test machine's.
const MaxInputFileBytes int64 = 2 << 30

// openInput opens a dataset or trace file (what names it in errors),
// refusing what is not a regular file (a device such as /dev/zero, a pipe
// or a directory would never end or never parse) and a file over
// MaxInputFileBytes, before any of it is read.
func openInput(path, what string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("%s %s: %w", what, path, err)
	case !st.Mode().IsRegular():
		err = fmt.Errorf("%s %s: not a regular file (a device, pipe or directory): give a file", what, path)
	case st.Size() > MaxInputFileBytes:
		err = fmt.Errorf("%s %s: %d bytes is over the limit of %d bytes (2 GiB) for one file: sample it down", what, path, st.Size(), MaxInputFileBytes)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
