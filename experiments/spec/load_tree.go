package spec

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// kind is the kind of a value in a decoded document.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kFloat
	kString
	kMap
	kSeq
)

// String names the kind as messages do: "an integer", "a list"...
func (k kind) String() string {
	switch k {
	case kNull:
		return "null"
	case kBool:
		return "a boolean"
	case kInt:
		return "an integer"
	case kFloat:
		return "a number"
	case kString:
		return "a string"
	case kMap:
		return "a mapping"
	case kSeq:
		return "a list"
	}
	return "a value"
}

// pos is a 1-based line and column (in runes); the zero pos is unknown.
type pos struct{ line, col int }

// quoting is how a scalar string was written, which decides how byte
// offsets in its value map back to columns.
type quoting uint8

const (
	quotePlain quoting = iota
	quoteDouble
	quoteSingle
	quoteBlock // literal or folded block: offsets are not mapped
	quoteNone  // not from a file
)

// node is one value of a document, with anchors, aliases, merge keys and
// tags already resolved: the YAML parser's AST reduced to what decoding
// needs, or a Go value (params) turned into the same shape.
type node struct {
	kind  kind
	pos   pos
	quote quoting
	text  string // scalar source text; a string's value
	b     bool
	i     int64
	u     uint64 // integers above MaxInt64
	big   bool   // the integer is u
	f     float64
	keys  []entry // kMap, in document order
	items []*node // kSeq
}

// entry is one key of a mapping.
type entry struct {
	key     string
	keyPos  pos
	keyNode *node // the key as a scalar node, for offset mapping
	val     *node
}

// scalar reports whether n is a scalar (not a mapping or a list).
func (n *node) scalar() bool { return n.kind != kMap && n.kind != kSeq }

// describe returns the kind of n with a short quote of a scalar:
// `a string ("abc")`.
func (n *node) describe() string {
	switch n.kind {
	case kMap, kSeq, kNull:
		return n.kind.String()
	}
	t := n.text
	if len(t) > 40 {
		t = t[:37] + "..."
	}
	return fmt.Sprintf("%s (%s)", n.kind, strconv.Quote(t))
}

// Limits on what a document may make the loader do: nesting depth, and the
// number of nodes after alias expansion (a "billion laughs" document is
// refused, not expanded).
const (
	maxDepth = 64
	maxNodes = 200_000
)

// treeBuilder turns the parser's AST into nodes.
type treeBuilder struct {
	anchors map[string]*node
	sizes   map[*node]int // node count of each built subtree
	total   int
	iss     issues
}

// build returns the node for n, reporting problems at path.
func (b *treeBuilder) build(n ast.Node, path string, depth int) *node {
	if n == nil {
		return &node{kind: kNull}
	}
	if depth > maxDepth {
		b.iss.add(path, "nesting deeper than %d levels", maxDepth)
		return &node{kind: kNull, pos: tokPos(n.GetToken())}
	}
	out := b.build1(n, path, depth)
	if b.sizes[out] == 0 {
		size := 1
		for _, e := range out.keys {
			size += b.sizes[e.val]
		}
		for _, it := range out.items {
			size += b.sizes[it]
		}
		b.sizes[out] = size
	}
	return out
}

// yaml12FloatRE matches the numbers with an exponent that YAML 1.2 reads
// as floats and YAML 1.1 parsers as strings (1e12, 2.5E-3).
var yaml12FloatRE = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+$`)

func (b *treeBuilder) build1(n ast.Node, path string, depth int) *node {
	switch n := n.(type) {
	case *ast.DocumentNode:
		if n.Body == nil {
			return &node{kind: kNull}
		}
		return b.build(n.Body, path, depth)
	case *ast.NullNode:
		return &node{kind: kNull, pos: tokPos(n.GetToken()), text: "null"}
	case *ast.BoolNode:
		return &node{kind: kBool, pos: tokPos(n.GetToken()), b: n.Value, text: n.GetToken().Value}
	case *ast.IntegerNode:
		out := &node{kind: kInt, pos: tokPos(n.GetToken()), text: n.GetToken().Value}
		switch v := n.Value.(type) {
		case int64:
			out.i = v
		case uint64:
			if v <= math.MaxInt64 {
				out.i = int64(v)
			} else {
				out.u, out.big = v, true
			}
		default:
			b.iss.add(path, "integer %s out of range", out.text)
		}
		return out
	case *ast.FloatNode:
		return &node{kind: kFloat, pos: tokPos(n.GetToken()), f: n.Value, text: n.GetToken().Value}
	case *ast.InfinityNode:
		return &node{kind: kFloat, pos: tokPos(n.GetToken()), f: n.Value, text: n.GetToken().Value}
	case *ast.NanNode:
		return &node{kind: kFloat, pos: tokPos(n.GetToken()), f: math.NaN(), text: n.GetToken().Value}
	case *ast.StringNode:
		tk := n.GetToken()
		q := quotePlain
		switch tk.Type {
		case token.DoubleQuoteType:
			q = quoteDouble
		case token.SingleQuoteType:
			q = quoteSingle
		}
		if q == quotePlain && yaml12FloatRE.MatchString(n.Value) {
			// YAML 1.2 reads 1e12 as a number; the parser (YAML 1.1) as a
			// string, which would make "rate: 1e12" a type error.
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil || math.IsInf(f, 0) {
				return &node{kind: kFloat, pos: tokPos(tk), f: f, text: n.Value}
			}
		}
		return &node{kind: kString, pos: tokPos(tk), quote: q, text: n.Value}
	case *ast.LiteralNode:
		v := ""
		if n.Value != nil {
			v = n.Value.Value
		}
		return &node{kind: kString, pos: tokPos(n.Start), quote: quoteBlock, text: v}
	case *ast.MappingNode:
		return b.mapping(n.Values, tokPos(n.GetToken()), path, depth)
	case *ast.MappingValueNode:
		return b.mapping([]*ast.MappingValueNode{n}, tokPos(n.GetToken()), path, depth)
	case *ast.SequenceNode:
		out := &node{kind: kSeq, pos: tokPos(n.GetToken())}
		for i, v := range n.Values {
			out.items = append(out.items, b.build(v, index(path, i), depth+1))
		}
		return out
	case *ast.AnchorNode:
		v := b.build(n.Value, path, depth)
		if n.Name != nil {
			b.anchors[n.Name.GetToken().Value] = v
		}
		return v
	case *ast.AliasNode:
		name := ""
		if n.Value != nil {
			name = n.Value.GetToken().Value
		}
		v, ok := b.anchors[name]
		if !ok {
			b.iss.add(path, "alias *%s names no anchor defined before it", name)
			return &node{kind: kNull, pos: tokPos(n.GetToken())}
		}
		b.total += b.sizes[v]
		if b.total > maxNodes {
			b.iss.add(path, "document too large: more than %d values once aliases are expanded", maxNodes)
			return &node{kind: kNull, pos: tokPos(n.GetToken())}
		}
		return v
	case *ast.TagNode:
		tag := n.Start.Value
		v := b.build(n.Value, path, depth)
		switch tag {
		case "!!str":
			if v.scalar() && v.kind != kNull {
				c := *v
				c.kind = kString
				return &c
			}
		case "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq", "!!binary", "!!timestamp", "!!omap", "!!set":
		default:
			b.iss.add(path, "tag %s is not supported; remove it", tag)
		}
		return v
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &node{kind: kNull}
	}
	b.iss.add(path, "unsupported YAML construct (%s)", n.Type())
	return &node{kind: kNull, pos: tokPos(n.GetToken())}
}

// mapping builds a mapping from its entries, expanding merge keys (<<):
// keys written in the mapping win over merged ones, and earlier merged
// mappings over later ones, as YAML 1.1 says.
func (b *treeBuilder) mapping(vals []*ast.MappingValueNode, at pos, path string, depth int) *node {
	out := &node{kind: kMap, pos: at}
	seen := map[string]pos{}
	var merged []entry
	for _, mv := range vals {
		if mv == nil {
			continue
		}
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			src := b.build(mv.Value, path, depth+1)
			var maps []*node
			switch src.kind {
			case kMap:
				maps = []*node{src}
			case kSeq:
				maps = src.items
			}
			if len(maps) == 0 {
				b.iss.add(path, "merge key << wants a mapping or a list of mappings, got %s", src.kind)
			}
			for _, m := range maps {
				if m.kind != kMap {
					b.iss.add(path, "merge key << wants a mapping or a list of mappings, got %s", m.kind)
					continue
				}
				merged = append(merged, m.keys...)
			}
			continue
		}
		kn := b.build(mv.Key, path, depth+1)
		if !kn.scalar() || kn.kind == kNull {
			b.iss.add(path, "a key must be a plain string, got %s", kn.kind)
			continue
		}
		k := kn.text
		if prev, dup := seen[k]; dup {
			e := issue{path: child(path, k), key: true, offset: -1,
				msg: fmt.Sprintf("key %q is given twice (first at line %d); remove one", k, prev.line)}
			b.iss = append(b.iss, e)
			// The later one is the one reported; its position is recorded
			// below so that the issue points at it.
			out.keys = append(out.keys, entry{key: k, keyPos: kn.pos, keyNode: kn, val: b.build(mv.Value, child(path, k), depth+1)})
			continue
		}
		seen[k] = kn.pos
		if len(out.keys) == 0 && kn.pos.line > 0 {
			out.pos = kn.pos // a block mapping is where its first key is
		}
		out.keys = append(out.keys, entry{key: k, keyPos: kn.pos, keyNode: kn, val: b.build(mv.Value, child(path, k), depth+1)})
	}
	for _, e := range merged {
		if _, ok := seen[e.key]; ok {
			continue
		}
		seen[e.key] = e.keyPos
		out.keys = append(out.keys, e)
	}
	return out
}

func tokPos(tk *token.Token) pos {
	if tk == nil || tk.Position == nil {
		return pos{}
	}
	return pos{line: tk.Position.Line, col: tk.Position.Column}
}

// valueNode turns a decoded Go value (map[string]any, []any, scalars) into
// a node without positions, for checking values that did not come from a
// file (a Spec built in code).
func valueNode(v any) *node {
	switch v := v.(type) {
	case nil:
		return &node{kind: kNull, quote: quoteNone, text: "null"}
	case bool:
		return &node{kind: kBool, quote: quoteNone, b: v, text: strconv.FormatBool(v)}
	case int:
		return &node{kind: kInt, quote: quoteNone, i: int64(v), text: strconv.Itoa(v)}
	case int64:
		return &node{kind: kInt, quote: quoteNone, i: v, text: strconv.FormatInt(v, 10)}
	case int32:
		return valueNode(int64(v))
	case uint64:
		if v > math.MaxInt64 {
			return &node{kind: kInt, quote: quoteNone, u: v, big: true, text: strconv.FormatUint(v, 10)}
		}
		return valueNode(int64(v))
	case uint:
		return valueNode(uint64(v))
	case uint32:
		return valueNode(int64(v))
	case float64:
		return &node{kind: kFloat, quote: quoteNone, f: v, text: strconv.FormatFloat(v, 'g', -1, 64)}
	case float32:
		return valueNode(float64(v))
	case string:
		return &node{kind: kString, quote: quoteNone, text: v}
	case fmt.Stringer:
		return &node{kind: kString, quote: quoteNone, text: v.String()}
	case []any:
		out := &node{kind: kSeq, quote: quoteNone}
		for _, x := range v {
			out.items = append(out.items, valueNode(x))
		}
		return out
	case []string:
		out := &node{kind: kSeq, quote: quoteNone}
		for _, x := range v {
			out.items = append(out.items, valueNode(x))
		}
		return out
	case map[string]any:
		out := &node{kind: kMap, quote: quoteNone}
		ks := make([]string, 0, len(v))
		for k := range v {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			out.keys = append(out.keys, entry{key: k, keyNode: &node{kind: kString, quote: quoteNone, text: k}, val: valueNode(v[k])})
		}
		return out
	}
	return &node{kind: kString, quote: quoteNone, text: fmt.Sprint(v)}
}

// toAny returns n as a plain Go value: map[string]any, []any, string,
// bool, int (int64 or uint64 when it does not fit), float64 or nil.
func (n *node) toAny() any {
	switch n.kind {
	case kBool:
		return n.b
	case kInt:
		if n.big {
			return n.u
		}
		if n.i >= math.MinInt && n.i <= math.MaxInt {
			return int(n.i)
		}
		return n.i
	case kFloat:
		return n.f
	case kString:
		return n.text
	case kMap:
		m := make(map[string]any, len(n.keys))
		for _, e := range n.keys {
			m[e.key] = e.val.toAny()
		}
		return m
	case kSeq:
		s := make([]any, len(n.items))
		for i, it := range n.items {
			s[i] = it.toAny()
		}
		return s
	}
	return nil
}

// jsonValue returns n as a value encoding/json writes as the same JSON
// (NaN and infinities, which JSON lacks, become strings).
func (n *node) jsonValue() any {
	switch n.kind {
	case kFloat:
		if math.IsNaN(n.f) || math.IsInf(n.f, 0) {
			return n.text
		}
	case kMap:
		m := make(map[string]any, len(n.keys))
		for _, e := range n.keys {
			m[e.key] = e.val.jsonValue()
		}
		return m
	case kSeq:
		s := make([]any, len(n.items))
		for i, it := range n.items {
			s[i] = it.jsonValue()
		}
		return s
	}
	return n.toAny()
}

// suggest returns the candidate nearest to s by edit distance when it is
// near enough to be a likely typo, else "".
func suggest(s string, candidates []string) string {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := editDistance(ls, strings.ToLower(c))
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	n := len([]rune(s))
	if bestD < 0 || bestD > max(1, n/3) || bestD >= n {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes,
// counting a swap of two neighbours as one edit (Damerau's rule), which is
// the commonest typo.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 {
		return max(len(ra), len(rb))
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
