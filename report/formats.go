package report

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Names of the report formats in Formats.
const (
	FormatText  = "text"
	FormatJSON  = "json"
	FormatJUnit = "junit"
	FormatHTML  = "html"
	FormatVLLM  = "vllm"
)

// Stdout is the path that means standard output wherever a report's path
// is given (--out -, -o -, --junit -).
const Stdout = "-"

// Format is one way to write a run: `llmchaos report --format NAME` and
// `llmchaos load --out NAME=FILE` look it up by Name.
type Format struct {
	// Name is what --format and --out NAME=FILE take.
	Name string
	// Description says in a few words what the format is, for help text.
	Description string
	// Write writes d in the format.
	Write func(io.Writer, *Document) error
}

// Formats is the table of report formats, in the order help text lists
// them. Adding a format is one file with its writer and one row here. It
// returns a new slice each time: the table is not mutable state.
func Formats() []Format {
	return []Format{
		{FormatText, "the terminal summary", WriteText},
		{FormatJSON, "the JSON run report (SCHEMA.md), which report, compare and merge read back", Write},
		{FormatJUnit, "JUnit XML of the thresholds, for CI test-report plugins", WriteJUnit},
		{FormatHTML, "a self-contained HTML page with plots", WriteHTML},
		{FormatVLLM, "the result JSON of vLLM's `bench serve` (its field names), for tools that read vLLM results", WriteVLLM},
	}
}

// LookupFormat returns the format called name; the error lists the known
// ones.
func LookupFormat(name string) (Format, error) {
	for _, f := range Formats() {
		if f.Name == name {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("unknown report format %q: want %s", name, FormatNames())
}

// FormatNames lists the formats' names as "text, json, junit, html or vllm".
func FormatNames() string {
	fs := Formats()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Output is one report a run writes: a format and where to.
type Output struct {
	// Format is a Format's Name.
	Format string
	// Path is the file, written atomically; "" or Stdout: standard output.
	Path string
	// Flag names the option that asked for it ("--junit"), for errors;
	// "" for none.
	Flag string
	// Text holds the rendering options of the text format (quiet,
	// verbose, colour, trend stats); the other formats ignore it.
	Text TextOptions
}

// WriteOutput writes d in o's format to o's path, atomically, or to stdout
// when the path is "" or Stdout.
func WriteOutput(stdout io.Writer, o Output, d *Document) error {
	f, err := LookupFormat(o.Format)
	if err == nil {
		write := f.Write
		if f.Name == FormatText {
			write = o.Text.Writer()
		}
		err = WriteTo(stdout, o.Path, func(w io.Writer) error { return write(w, d) })
	}
	if err != nil && o.Flag != "" {
		return fmt.Errorf("%s: %w", o.Flag, err)
	}
	return err
}

// WriteOutputs writes d to every output in order, and returns every
// failure joined: one report that cannot be written does not keep the
// others from being written.
func WriteOutputs(stdout io.Writer, outs []Output, d *Document) error {
	var errs []error
	for _, o := range outs {
		errs = append(errs, WriteOutput(stdout, o, d))
	}
	return errors.Join(errs...)
}

// WriteTo writes what write produces to path, atomically, or to stdout
// when path is "" or Stdout.
func WriteTo(stdout io.Writer, path string, write func(io.Writer) error) error {
	if path == "" || path == Stdout {
		return write(stdout)
	}
	return WriteFileWith(path, write)
}
