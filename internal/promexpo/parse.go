package promexpo

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Quantile is one quantile of a parsed summary.
type Quantile struct{ Quantile, Value float64 }

// ParseError is a problem of a text page, at a line (from 1).
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("text format line %d: %s", e.Line, e.Msg) }

// MaxLine is the longest line Parse reads.
const MaxLine = 1 << 20

// Parse reads a page in the text exposition format 0.0.4 and returns its
// families in the order they first appear. # HELP and # TYPE lines name
// a family (other comments are skipped); a histogram's _bucket{le}, _sum
// and _count samples, and a summary's {quantile}, _sum and _count
// samples, become one Metric per label set (Histogram; Quantiles); a
// sample of a name without a # TYPE line is untyped. Label values may
// hold the escapes \\, \" and \n; values may be NaN, +Inf or -Inf; a
// sample may end with a timestamp in ms. Every error is a *ParseError.
func Parse(r io.Reader) ([]Family, error) {
	p := parser{byName: map[string]int{}, hist: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxLine) // grows from 4 KiB as lines need
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, &ParseError{Line: p.line, Msg: err.Error()}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{Line: p.line + 1, Msg: err.Error()}
	}
	for i := range p.fams {
		if err := p.finish(&p.fams[i]); err != nil {
			return nil, err
		}
	}
	return p.fams, nil
}

// parser is Parse's state.
type parser struct {
	line    int
	fams    []Family
	byName  map[string]int // family index by name
	typed   map[string]bool
	helped  map[string]bool
	sampled map[string]bool
	hist    map[string]int           // Metric index by family name + label key, histograms and summaries
	counted map[*HistogramValue]bool // histograms with a _count sample
}

func (p *parser) family(name string) *Family {
	i, ok := p.byName[name]
	if !ok {
		i = len(p.fams)
		p.byName[name] = i
		p.fams = append(p.fams, Family{Name: name, Type: UntypedType})
	}
	return &p.fams[i]
}

func (p *parser) parseLine(line string) error {
	line = strings.TrimLeft(line, " \t")
	if line == "" {
		return nil
	}
	if line[0] == '#' {
		return p.parseComment(line)
	}
	return p.parseSample(line)
}

func (p *parser) parseComment(line string) error {
	fields := strings.Fields(line[1:])
	if len(fields) < 2 || fields[0] != "HELP" && fields[0] != "TYPE" {
		return nil // a plain comment
	}
	name := fields[1]
	if !validName(name, true) {
		return fmt.Errorf("invalid metric name %q", name)
	}
	if p.typed == nil {
		p.typed, p.helped, p.sampled = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	if fields[0] == "HELP" {
		if p.helped[name] {
			return fmt.Errorf("second HELP line for %s", name)
		}
		p.helped[name] = true
		_, rest, _ := strings.Cut(strings.TrimLeft(line[1:], " \t")[len("HELP"):], name)
		p.family(name).Help = unescapeHelp(strings.TrimLeft(rest, " \t"))
		return nil
	}
	if len(fields) != 3 {
		return fmt.Errorf("TYPE line for %s: want one type, got %q", name, strings.Join(fields[2:], " "))
	}
	if p.typed[name] {
		return fmt.Errorf("second TYPE line for %s", name)
	}
	if p.sampled[name] {
		return fmt.Errorf("TYPE line for %s after its samples", name)
	}
	p.typed[name] = true
	var t Type
	switch fields[2] {
	case "counter":
		t = CounterType
	case "gauge":
		t = GaugeType
	case "histogram":
		t = HistogramType
	case "summary":
		t = SummaryType
	case "untyped":
		t = UntypedType
	default:
		return fmt.Errorf("TYPE line for %s: unknown type %q", name, fields[2])
	}
	p.family(name).Type = t
	return nil
}

// unescapeHelp undoes the help text's escapes \\ and \n; another
// backslash stays as it is.
func unescapeHelp(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == 'n') {
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte('\\')
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// owner returns the family a sample name belongs to and the suffix that
// made it so: a histogram or summary declared by # TYPE owns its
// _bucket, _sum and _count samples.
func (p *parser) owner(name string) (*Family, string) {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		if i, ok := p.byName[base]; ok {
			t := p.fams[i].Type
			if t == HistogramType || t == SummaryType && suf != "_bucket" {
				return &p.fams[i], suf
			}
		}
	}
	return p.family(name), ""
}

func (p *parser) parseSample(line string) error {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return fmt.Errorf("sample %q has no value", line)
	}
	name, rest := line[:i], line[i:]
	if !validName(name, true) {
		return fmt.Errorf("invalid metric name %q", name)
	}
	var labels []Label
	if rest[0] == '{' {
		var err error
		if labels, rest, err = parseLabels(rest[1:]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return fmt.Errorf("%s: want a value and an optional timestamp after the labels, got %q", name, strings.TrimSpace(rest))
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	m := Metric{Labels: labels, Value: v}
	if len(fields) == 2 {
		ts, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: invalid timestamp %q", name, fields[1])
		}
		m.TimestampMs, m.HasTimestamp = ts, true
	}
	f, suffix := p.owner(name)
	if p.sampled == nil {
		p.typed, p.helped, p.sampled = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	p.sampled[f.Name] = true
	if f.Type != HistogramType && f.Type != SummaryType {
		f.Metrics = append(f.Metrics, m)
		return nil
	}
	return p.addToGroup(f, suffix, m)
}

// addToGroup adds a histogram's or summary's sample to the Metric of its
// label set (le and quantile aside).
func (p *parser) addToGroup(f *Family, suffix string, m Metric) error {
	special := "quantile"
	if f.Type == HistogramType {
		special = "le"
	}
	var bound float64
	hasBound := false
	labels := m.Labels[:0:0]
	for _, l := range m.Labels {
		if l.Name != special {
			labels = append(labels, l)
			continue
		}
		b, err := parseValue(l.Value)
		if err != nil {
			return fmt.Errorf("%s%s: label %s: %w", f.Name, suffix, special, err)
		}
		bound, hasBound = b, true
	}
	if suffix == "" && f.Type == HistogramType {
		return fmt.Errorf("histogram %s: sample %s is not _bucket, _sum or _count", f.Name, f.Name)
	}
	if (suffix == "_bucket" || suffix == "" && f.Type == SummaryType) && !hasBound {
		return fmt.Errorf("%s%s: no %s label", f.Name, suffix, special)
	}
	var key strings.Builder
	key.WriteString(f.Name)
	for _, l := range labels {
		key.WriteString("\xff" + l.Name + "\xfe" + l.Value)
	}
	i, ok := p.hist[key.String()]
	if !ok {
		i = len(f.Metrics)
		p.hist[key.String()] = i
		f.Metrics = append(f.Metrics, Metric{Labels: labels, Histogram: &HistogramValue{}})
	}
	g := &f.Metrics[i]
	if m.HasTimestamp {
		g.TimestampMs, g.HasTimestamp = m.TimestampMs, true
	}
	switch suffix {
	case "_sum":
		g.Histogram.Sum = m.Value
	case "_count":
		if m.Value < 0 || math.IsNaN(m.Value) || m.Value != math.Trunc(m.Value) {
			return fmt.Errorf("%s_count: %v is not a count", f.Name, m.Value)
		}
		g.Histogram.Count = uint64(m.Value)
		if p.counted == nil {
			p.counted = map[*HistogramValue]bool{}
		}
		p.counted[g.Histogram] = true
	case "_bucket":
		if m.Value < 0 || math.IsNaN(m.Value) || m.Value != math.Trunc(m.Value) {
			return fmt.Errorf("%s_bucket: %v is not a count", f.Name, m.Value)
		}
		g.Histogram.Buckets = append(g.Histogram.Buckets, Bucket{UpperBound: bound, CumulativeCount: uint64(m.Value)})
	default:
		g.Quantiles = append(g.Quantiles, Quantile{Quantile: bound, Value: m.Value})
	}
	return nil
}

// finish sorts a family's buckets and checks that they are cumulative
// and within the count; without a _count sample, the count is the last
// bucket's.
func (p *parser) finish(f *Family) error {
	for i := range f.Metrics {
		h := f.Metrics[i].Histogram
		if h == nil || f.Type != HistogramType {
			continue
		}
		slices.SortFunc(h.Buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
		for j := 1; j < len(h.Buckets); j++ {
			if h.Buckets[j].CumulativeCount < h.Buckets[j-1].CumulativeCount {
				return &ParseError{Line: p.line, Msg: fmt.Sprintf("histogram %s: bucket le=%v counts less than le=%v",
					f.Name, h.Buckets[j].UpperBound, h.Buckets[j-1].UpperBound)}
			}
		}
		if n := len(h.Buckets); n > 0 {
			last := h.Buckets[n-1].CumulativeCount
			switch {
			case !p.counted[h]:
				h.Count = last
			case h.Count < last:
				return &ParseError{Line: p.line, Msg: fmt.Sprintf("histogram %s: _count %d is less than bucket le=%v (%d)",
					f.Name, h.Count, h.Buckets[n-1].UpperBound, last)}
			}
		}
	}
	return nil
}

// parseValue parses a sample value or an le/quantile label: a float,
// NaN, +Inf or -Inf.
func parseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid value %q", s)
	}
	return v, nil
}

// parseLabels parses label pairs after the opening brace up to and
// including the closing one, and returns them sorted by name with the
// rest of the line.
func parseLabels(s string) ([]Label, string, error) {
	var out []Label
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", fmt.Errorf("labels not closed with }")
		}
		if s[0] == '}' {
			slices.SortFunc(out, func(a, b Label) int { return cmp.Compare(a.Name, b.Name) })
			return out, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, "", fmt.Errorf("label %q has no =", s)
		}
		name := strings.TrimRight(s[:eq], " \t")
		if !validName(name, false) {
			return nil, "", fmt.Errorf("invalid label name %q", name)
		}
		if slices.ContainsFunc(out, func(l Label) bool { return l.Name == name }) {
			return nil, "", fmt.Errorf("label %s given twice", name)
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		if s == "" || s[0] != '"' {
			return nil, "", fmt.Errorf("label %s: value not in double quotes", name)
		}
		var v strings.Builder
		closed := false
		i := 1
		for ; i < len(s); i++ {
			c := s[i]
			if c == '"' {
				closed = true
				break
			}
			if c != '\\' {
				v.WriteByte(c)
				continue
			}
			i++
			if i == len(s) {
				break
			}
			switch s[i] {
			case '\\':
				v.WriteByte('\\')
			case '"':
				v.WriteByte('"')
			case 'n':
				v.WriteByte('\n')
			default:
				return nil, "", fmt.Errorf("label %s: invalid escape \\%c", name, s[i])
			}
		}
		if !closed {
			return nil, "", fmt.Errorf("label %s: value not closed with \"", name)
		}
		out = append(out, Label{name, v.String()})
		s = strings.TrimLeft(s[i+1:], " \t")
		if s != "" && s[0] == ',' {
			s = s[1:]
		} else if s == "" || s[0] != '}' {
			return nil, "", fmt.Errorf("label %s: want , or } after the value", name)
		}
	}
}
