package spec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Load reads the experiment file at path (YAML, or JSON, which is YAML
// too), decodes it strictly and validates it. It returns the spec and its
// warnings. When the file has errors, it returns a nil spec and a field.Problems
// error holding every problem found, warnings included, each with the
// file's name, line and column. A file that cannot be read gives a plain
// error.
//
// The spec has no defaults filled in: call WithDefaults.
func Load(path string) (*Spec, field.Problems, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("experiment: %w", err)
	}
	return Parse(path, data)
}

// Parse does what Load does with a file's contents; name is the file name
// used in problems.
func Parse(name string, data []byte) (*Spec, field.Problems, error) {
	spec, ps, _ := parse(name, data, LoadOptions{})
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return spec, ps, nil
}

// parse decodes and validates data and returns the spec (partly filled
// when there are errors) and every problem, in file order, and the
// resolved experiment when there is no error. o's steps are made on the
// decoded spec and the result is checked once; only when that finds a
// problem are the spec's states before each step checked too, to say
// which step brought it in (attribute).
func parse(name string, data []byte, o LoadOptions) (*Spec, field.Problems, *Experiment) {
	doc, ps := readDocument(name, data, docExperiment)
	if doc == nil {
		return nil, ps, nil
	}
	if k := doc.root.keyed("kind"); k != nil && k.kind == kString && k.text == KindSuite {
		// Not an experiment with a wrong kind: every key would be wrong.
		return nil, field.Problems{doc.locate(issue{path: "kind", offset: -1,
			msg: "this is a suite file (kind: Suite): run it with llmchaos suite; llmchaos validate checks it and its experiments"})}, nil
	}
	spec := &Spec{}
	var (
		v       *validator
		applied *CapacityApplied
		states  []Spec // the spec before each step, and after the last
		refused field.Problems
		zeros   map[string]bool
	)
	iss := doc.decode(spec, func(dec *decoder) issues {
		zeros = dec.zeros
		for _, st := range o.Steps {
			states = append(states, spec.clone())
			if err := st.Apply(spec); err != nil {
				refused = problemsOf(err)
				return nil
			}
		}
		if len(o.Steps) > 0 {
			states = append(states, spec.clone())
		}
		o.apply(spec)
		var capIss issues
		if o.applyCapacity && spec.Workload.Rate.Unresolved() && spec.Workload.Capacity != "" {
			a, err := ApplyCapacity(spec, spec.Workload.CapacityPath(baseDir(name)))
			if err != nil {
				for _, p := range problemsOf(err) {
					capIss.add(string(p.Path), "%s", p.Message(nil)) // placed in the file at its field
				}
			} else {
				applied = &a
			}
		}
		v = spec.checker(dec.zeros, baseDir(name))
		return append(capIss, v.iss...)
	})
	if refused != nil {
		ps = append(doc.problems(iss), refused...)
		sortProblems(ps)
		return spec, ps, nil
	}
	ps = attribute(doc, iss, o.Steps, states, zeros)
	if ps.Err() != nil || v == nil {
		return spec, ps, nil
	}
	return spec, ps, experimentOf(spec, name, v, applied, ps.Warnings())
}

// attribute places the problems iss of a spec made by steps from its
// file: each that the spec before the first step has, or that no state
// has (a problem of the file's decoding, of its capacity), at its
// position in the file; each other one where the step that brought it in
// (the first after whose change it holds) says. states are the spec
// before each step and after the last; zeros the file's explicit zeros.
func attribute(doc *document, iss issues, steps []Step, states []Spec, zeros map[string]bool) field.Problems {
	if len(steps) == 0 || len(iss) == 0 {
		return doc.problems(iss)
	}
	seen := make([]map[string]bool, len(states))
	for i := range states {
		seen[i] = map[string]bool{}
		for _, is := range states[i].check(zeros, baseDir(doc.name)) {
			seen[i][is.path+"\x00"+is.msg] = true
		}
	}
	ps := make(field.Problems, 0, len(iss))
	for _, is := range iss {
		key := is.path + "\x00" + is.msg
		step := -1
		if !seen[0][key] {
			for i := 1; i < len(states); i++ {
				if seen[i][key] {
					step = i - 1
					break
				}
			}
		}
		if step < 0 || steps[step].Blame == nil {
			ps = append(ps, doc.locate(is))
			continue
		}
		ps = append(ps, steps[step].Blame(problemAt(doc.name, 0, 0, is.path, is.msg, is.warn)))
	}
	sortProblems(ps)
	return ps
}

// problemsOf returns err as problems: its own when it is a field.Problems or a
// field.Problem, those of the errors it joins, else one problem of its message.
func problemsOf(err error) field.Problems {
	switch e := err.(type) {
	case field.Problems:
		return e
	case field.Problem:
		return field.Problems{e}
	case interface{ Unwrap() []error }:
		var ps field.Problems
		for _, x := range e.Unwrap() {
			ps = append(ps, problemsOf(x)...)
		}
		return ps
	}
	return field.Problems{problemAt("", 0, 0, "", err.Error(), false)}
}

// docKind says, for the messages of readDocument, what a file holds.
type docKind struct {
	// what is the file's kind with its article: "an experiment".
	what string
	// keys lists its top-level keys for messages.
	keys string
}

var (
	docExperiment = docKind{"an experiment", "apiVersion, kind, metadata, target, workload"}
	docSuite      = docKind{"a suite", "apiVersion, kind, metadata, experiments"}
)

// document is a file parsed into a tree, with what locating a problem in
// it needs: its name, its source text and the index of its key paths.
type document struct {
	name string
	kind docKind
	src  source
	root *node
	idx  *posIndex
	iss  issues // problems of the tree itself (depth, aliases)
}

// readDocument parses data, which must hold one YAML document. A syntax
// error, an empty file or a second document is returned as field.Problems with
// a nil document.
func readDocument(name string, data []byte, kind docKind) (*document, field.Problems) {
	if p := checkRaw(name, data, kind.what); p != nil {
		return nil, field.Problems{*p}
	}
	src := newSource(data)
	file, err := parseYAML(data)
	if err != nil {
		return nil, field.Problems{syntaxProblem(name, err)}
	}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		if body != nil {
			p := tokPos(doc.Body.GetToken())
			return nil, field.Problems{problemAt(name, p.line, p.col, "", "a second document: "+kind.what+" file holds one (remove the ---)", false)}
		}
		body = doc.Body
	}
	if body == nil {
		return nil, field.Problems{problemAt(name, 1, 1, "", "empty file: "+kind.what+" needs "+andList(kind.keys), false)}
	}
	tb := &treeBuilder{anchors: map[string]*node{}, sizes: map[*node]int{}}
	root := tb.build(body, "", 0)
	return &document{name: name, kind: kind, src: src, root: root, idx: newPosIndex(root), iss: tb.iss}, nil
}

// andList turns "a, b, c" into "a, b and c".
func andList(keys string) string {
	if i := strings.LastIndex(keys, ", "); i >= 0 {
		return keys[:i] + " and " + keys[i+2:]
	}
	return keys
}

// decode decodes the document strictly into v (a pointer to a struct),
// then runs check over what decoded, keeping the semantic issues that do
// not overlap a decoding problem, and returns every issue.
func (d *document) decode(v any, check func(dec *decoder) issues) issues {
	iss := append(issues(nil), d.iss...)
	dec := newDecoder(&iss)
	for _, is := range d.iss {
		dec.broken[is.path] = true
	}
	if d.root.kind != kMap {
		dec.bad("", "the file holds %s; %s is a mapping with keys %s...", d.root.describe(), d.kind.what, d.kind.keys)
		return iss
	}
	dec.decode("", d.root, reflect.ValueOf(v).Elem())
	// Semantic checks of what decoded; a problem on or around a value
	// that did not decode would only repeat it.
	for _, is := range check(dec) {
		if !dec.overlaps(is) {
			iss = append(iss, is)
		}
	}
	return iss
}

// problems gives each issue its position in the document, in file order.
func (d *document) problems(iss issues) field.Problems {
	ps := make(field.Problems, 0, len(iss))
	for _, is := range iss {
		ps = append(ps, d.locate(is))
	}
	sortProblems(ps)
	return ps
}

// locate gives one issue its position in the document.
func (d *document) locate(is issue) field.Problem {
	p := d.idx.locate(d.src, is)
	p.File = d.name
	return p
}

// overlaps reports whether a problem would be about a value that already
// has a decoding problem: one at the same path or under it, or one at a
// mapping above it that holds an unknown key (the key meant may be the
// one found missing) or a bad value its message names. A problem of the
// mapping that is about another key is kept, so that all problems show in
// one pass.
func (d *decoder) overlaps(is issue) bool {
	for b := range d.broken {
		if within(is.path, b) {
			return true
		}
		if is.path != "" && within(b, is.path) && (d.unknown[b] || mentionsKey(is.msg, b[len(is.path):])) {
			return true
		}
	}
	return false
}

// mentionsKey reports whether msg names, as a word, the last key of the
// relative path rel (".params.latency" → latency); list indexes are not
// keys.
func mentionsKey(msg, rel string) bool {
	segs := strings.FieldsFunc(rel, func(r rune) bool { return r == '.' || r == '[' || r == ']' || r == '"' })
	for len(segs) > 0 && strings.Trim(segs[len(segs)-1], "0123456789") == "" {
		segs = segs[:len(segs)-1]
	}
	if len(segs) == 0 {
		return false
	}
	k := segs[len(segs)-1]
	for i := 0; ; {
		j := strings.Index(msg[i:], k)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(k)
		if (j == 0 || !isWordByte(msg[j-1])) && (end == len(msg) || !isWordByte(msg[end])) {
			return true
		}
		i = j + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// parseYAML parses data, turning a panic of the parser (a bug there, on
// input it did not expect) into an error.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("the YAML parser failed on this input (%v)", r)
		}
	}()
	return parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
}

// syntaxProblem turns a parser error into a positioned field.Problem.
func syntaxProblem(name string, err error) field.Problem {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return problemAt(name, 0, 0, "", err.Error(), false)
	}
	line, col := 0, 0
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	return problemAt(name, line, col, "", "YAML syntax: "+ye.GetMessage(), false)
}

// posIndex maps key paths to the nodes of a document.
type posIndex struct {
	vals map[string]*node
	keys map[string]*node
}

func newPosIndex(root *node) *posIndex {
	idx := &posIndex{vals: map[string]*node{}, keys: map[string]*node{}}
	idx.add("", root, 0)
	return idx
}

func (x *posIndex) add(path string, n *node, depth int) {
	if depth > maxDepth || len(x.vals) > maxNodes {
		return
	}
	if _, ok := x.vals[path]; !ok {
		x.vals[path] = n
	}
	for _, e := range n.keys {
		p := child(path, e.key)
		// For a duplicate key the later one is the one reported.
		x.keys[p] = e.keyNode
		x.vals[p] = e.val
		x.add(p, e.val, depth+1)
	}
	for i, it := range n.items {
		x.add(index(path, i), it, depth+1)
	}
}

// locate gives an issue its position: the node at its path (its key for
// a key issue; the column of the offending character for an issue with an
// offset), or the nearest enclosing node that has one.
func (x *posIndex) locate(src source, is issue) field.Problem {
	path := is.path
	var at pos
	if is.key {
		if k, ok := x.keys[is.path]; ok && k.pos.line > 0 {
			at = k.pos
			if is.offset >= 0 {
				at = src.offsetPos(k, is.offset)
			}
		}
	}
	if at.line == 0 {
		for q := is.path; ; q = parentPath(q) {
			if n, ok := x.vals[q]; ok && n.pos.line > 0 {
				at = n.pos
				// A string found above the path is the string form of a
				// string-or-mapping value (a threshold entry): the offset
				// points into it all the same.
				if is.offset >= 0 && !is.key && (q == is.path || n.kind == kString) {
					at = src.offsetPos(n, is.offset)
					path = q // name the key as the file writes it
				}
				break
			}
			if k, ok := x.keys[q]; ok && k.pos.line > 0 {
				at = k.pos
				break
			}
			if q == "" {
				break
			}
		}
	}
	return problemAt("", at.line, at.col, path, is.msg, is.warn)
}
