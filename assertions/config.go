package assertions

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// Entry is one element of a threshold key's list in a config file: a bare
// expression string, or k6's object form
//
//	{threshold: "p(99)<500ms", abortOnFail: true, delayAbortEval: "10s"}
//
// Entry decodes from JSON (UnmarshalJSON) and YAML (UnmarshalYAML, the
// func(any) error form both common Go YAML libraries call), and from an
// already decoded value (EntryFromValue).
type Entry struct {
	// Threshold holds one expression, or several separated by commas.
	Threshold string
	// AbortOnFail stops the run when the expression fails live.
	AbortOnFail bool
	// DelayAbortEval is the run time before which it may not abort.
	DelayAbortEval time.Duration
}

// EntryFromValue builds an Entry from a decoded YAML or JSON value: a
// string, or a map with the keys threshold (string, required), abortOnFail
// (bool) and delayAbortEval (a Go duration string such as "10s").
func EntryFromValue(v any) (Entry, error) {
	switch v := v.(type) {
	case string:
		return Entry{Threshold: v}, nil
	case map[string]any:
		return entryFromMap(v)
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			ks, ok := k.(string)
			if !ok {
				return Entry{}, fmt.Errorf("threshold object key %v: want a string", k)
			}
			m[ks] = x
		}
		return entryFromMap(m)
	}
	return Entry{}, fmt.Errorf("threshold entry %v: want a string or an object {threshold, abortOnFail, delayAbortEval}", v)
}

func entryFromMap(m map[string]any) (Entry, error) {
	var (
		e    Entry
		errs []error
	)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "threshold":
			s, ok := v.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("threshold: got %v, want a string such as \"p(99)<500ms\"", v))
			}
			e.Threshold = s
		case "abortOnFail":
			b, ok := v.(bool)
			if !ok {
				errs = append(errs, fmt.Errorf("abortOnFail: got %v, want true or false", v))
			}
			e.AbortOnFail = b
		case "delayAbortEval":
			s, ok := v.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("delayAbortEval: got %v, want a duration string such as \"10s\"", v))
				continue
			}
			d, err := time.ParseDuration(s)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("delayAbortEval: %w", err))
			case d < 0:
				errs = append(errs, fmt.Errorf("delayAbortEval: %q is negative", s))
			}
			e.DelayAbortEval = d
		default:
			errs = append(errs, fmt.Errorf("unknown key %q (want threshold, abortOnFail or delayAbortEval)", k))
		}
	}
	if _, ok := m["threshold"]; !ok {
		errs = append(errs, errors.New("missing key \"threshold\""))
	}
	if err := errors.Join(errs...); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// UnmarshalJSON reads a string or the object form.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("threshold entry: %w", err)
	}
	got, err := EntryFromValue(v)
	if err != nil {
		return err
	}
	*e = got
	return nil
}

// UnmarshalYAML reads a string or the object form.
func (e *Entry) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return fmt.Errorf("threshold entry: %w", err)
	}
	got, err := EntryFromValue(v)
	if err != nil {
		return err
	}
	*e = got
	return nil
}

// Config is a config file's thresholds section: each key,
// `metric{tag:value,...}`, maps to its list of entries.
type Config map[string][]Entry

// Thresholds parses every key and entry, in key order, and returns one
// Threshold per expression, or every problem found, joined. Expression
// problems are *ParseError values whose Input is "key: expression".
func (c Config) Thresholds() ([]Threshold, error) { return c.ThresholdsIn(nil) }

// ThresholdsIn is Thresholds with the metrics of reg (see ParseIn).
func (c Config) ThresholdsIn(reg *metrics.Registry) ([]Threshold, error) {
	return c.thresholdsIn(reg, false)
}

// thresholdsIn is ThresholdsIn; k6 marks a script's thresholds (see
// ParseScript).
func (c Config) thresholdsIn(reg *metrics.Registry, k6 bool) ([]Threshold, error) {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var (
		all  []Threshold
		errs []error
	)
	for _, k := range keys {
		ths, err := parseEntriesIn(reg, k, c[k], k6)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, ths...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, nil
}

// ParseConfig reads a decoded thresholds section (map from key to a list of
// entries, or to a single entry) as Config.Thresholds does.
func ParseConfig(m map[string]any) ([]Threshold, error) { return ParseConfigIn(nil, m) }

// ParseConfigIn is ParseConfig with the metrics of reg (see ParseIn).
func ParseConfigIn(reg *metrics.Registry, m map[string]any) ([]Threshold, error) {
	return parseConfigIn(reg, m, false)
}

// ParseConfigScript is ParseConfigIn for a k6 script's options.thresholds
// (see ParseScript: any tag, and k6's judgement of a selection without
// samples).
func ParseConfigScript(reg *metrics.Registry, m map[string]any) ([]Threshold, error) {
	return parseConfigIn(reg, m, true)
}

// parseConfigIn is ParseConfigIn, for a script's thresholds with k6.
func parseConfigIn(reg *metrics.Registry, m map[string]any, k6 bool) ([]Threshold, error) {
	c := make(Config, len(m))
	var errs []error
	for k, v := range m {
		var list []any
		switch v := v.(type) {
		case []any:
			list = v
		case []string:
			for _, s := range v {
				list = append(list, s)
			}
		default:
			list = []any{v}
		}
		c[k] = make([]Entry, 0, len(list))
		for i, x := range list {
			e, err := EntryFromValue(x)
			if err != nil {
				errs = append(errs, fmt.Errorf("threshold %q entry %d: %w", k, i+1, err))
				continue
			}
			c[k] = append(c[k], e)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c.thresholdsIn(reg, k6)
}

// ParseEntries parses the entries listed under one key. Each entry's
// expressions inherit its AbortOnFail and DelayAbortEval.
func ParseEntries(key string, entries []Entry) ([]Threshold, error) {
	return ParseEntriesIn(nil, key, entries)
}

// ParseEntriesIn is ParseEntries with the metrics of reg (see ParseIn).
func ParseEntriesIn(reg *metrics.Registry, key string, entries []Entry) ([]Threshold, error) {
	return parseEntriesIn(reg, key, entries, false)
}

// parseEntriesIn is ParseEntriesIn, for a script's thresholds with k6.
func parseEntriesIn(reg *metrics.Registry, key string, entries []Entry, k6 bool) ([]Threshold, error) {
	p := &parser{what: "threshold", in: key, reg: reg, k6: k6}
	m, known, tags, ok := p.key()
	if ok {
		p.skipSpace()
		if r, _ := p.peek(); r != eof {
			p.errorf(p.pos, "unexpected %q after the metric and its tags", r)
		}
	}
	errs := p.errs
	if len(entries) == 0 {
		errs = append(errs, fmt.Errorf("threshold %q: no expressions", key))
	}
	var all []Threshold
	for _, e := range entries {
		q := &parser{what: "threshold", in: strings.TrimSpace(key) + ": " + e.Threshold, reg: reg, k6: k6}
		q.pos = len(q.in) - len(e.Threshold)
		exprs := q.exprList(m, known)
		if e.DelayAbortEval < 0 {
			errs = append(errs, fmt.Errorf("threshold %q: delayAbortEval %v is negative", q.in, e.DelayAbortEval))
		}
		errs = append(errs, q.errs...)
		for _, t := range thresholds(m, tags, exprs) {
			t.AbortOnFail = e.AbortOnFail
			t.DelayAbortEval = e.DelayAbortEval
			t.k6 = k6
			if k6 {
				t.SourceKey = key
				if len(exprs) == 1 {
					t.Source = e.Threshold
				}
			}
			all = append(all, t)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, nil
}
