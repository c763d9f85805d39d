package js

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/grafana/sobek"
	"golang.org/x/net/html"
)

// newHTMLModule is `k6/html`: parseHTML(src) gives a Selection of the
// parsed document, with k6's jQuery-like Selection API (selectionMethods)
// and its DOM-like Elements (html_element.go). Parsing and selecting are
// goquery's (CSS selectors by cascadia), as k6's.
func newHTMLModule(vu *VU) *sobek.Object {
	rt := vu.rt
	o := rt.NewObject()
	set(o, "parseHTML", func(call sobek.FunctionCall) sobek.Value {
		s, err := parseHTML(rt, call.Argument(0).String(), "")
		if err != nil {
			panic(rt.NewGoError(fmt.Errorf("parseHTML: %w", err)))
		}
		return s.value()
	})
	return o
}

// parseHTML parses src into the Selection of its document; base is the
// URL the page came from (res.html()), against which elements' URLs
// resolve ("" for none: they are returned as written).
func parseHTML(rt *sobek.Runtime, src, base string) (*htmlSelection, error) {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(src))
	if err != nil {
		return nil, err
	}
	return &htmlSelection{rt: rt, sel: doc.Selection, url: base}, nil
}

// htmlSelection is one k6/html Selection: the nodes goquery matched and
// the page's URL. It is a sobek.DynamicObject whose properties are the
// methods of selectionMethods and `url`; it belongs to its VU's runtime.
type htmlSelection struct {
	rt  *sobek.Runtime
	sel *goquery.Selection
	url string
}

var _ sobek.DynamicObject = (*htmlSelection)(nil)

// selectionMethod is one method of a Selection.
type selectionMethod func(s *htmlSelection, call sobek.FunctionCall) sobek.Value

// selectionMethods is the Selection API, as k6's: one row per method.
var selectionMethods = map[string]selectionMethod{
	"add":          func(s *htmlSelection, c sobek.FunctionCall) sobek.Value { return s.byArg("add", c, addOps) },
	"find":         func(s *htmlSelection, c sobek.FunctionCall) sobek.Value { return s.byArg("find", c, findOps) },
	"closest":      func(s *htmlSelection, c sobek.FunctionCall) sobek.Value { return s.byArg("closest", c, closestOps) },
	"has":          func(s *htmlSelection, c sobek.FunctionCall) sobek.Value { return s.byArg("has", c, hasOps) },
	"not":          (*htmlSelection).not,
	"single":       (*htmlSelection).single,
	"next":         adjacent((*goquery.Selection).Next, (*goquery.Selection).NextFiltered),
	"nextAll":      adjacent((*goquery.Selection).NextAll, (*goquery.Selection).NextAllFiltered),
	"prev":         adjacent((*goquery.Selection).Prev, (*goquery.Selection).PrevFiltered),
	"prevAll":      adjacent((*goquery.Selection).PrevAll, (*goquery.Selection).PrevAllFiltered),
	"parent":       adjacent((*goquery.Selection).Parent, (*goquery.Selection).ParentFiltered),
	"parents":      adjacent((*goquery.Selection).Parents, (*goquery.Selection).ParentsFiltered),
	"siblings":     adjacent((*goquery.Selection).Siblings, (*goquery.Selection).SiblingsFiltered),
	"children":     adjacent((*goquery.Selection).Children, (*goquery.Selection).ChildrenFiltered),
	"nextUntil":    until("nextUntil", nextUntilOps),
	"prevUntil":    until("prevUntil", prevUntilOps),
	"parentsUntil": until("parentsUntil", parentsUntilOps),
	"size":         func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.rt.ToValue(s.sel.Length()) },
	"end":          func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.derive(s.sel.End()).value() },
	"eq": func(s *htmlSelection, c sobek.FunctionCall) sobek.Value {
		return s.derive(s.sel.Eq(intArg(c, 0))).value()
	},
	"first":           func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.derive(s.sel.First()).value() },
	"last":            func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.derive(s.sel.Last()).value() },
	"contents":        func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.derive(s.sel.Contents()).value() },
	"text":            func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.rt.ToValue(s.sel.Text()) },
	"attr":            (*htmlSelection).attr,
	"html":            func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.html() },
	"val":             func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.val() },
	"each":            (*htmlSelection).each,
	"map":             (*htmlSelection).mapSel,
	"filter":          (*htmlSelection).filter,
	"is":              (*htmlSelection).is,
	"slice":           (*htmlSelection).slice,
	"get":             (*htmlSelection).get,
	"toArray":         (*htmlSelection).toArray,
	"index":           (*htmlSelection).index,
	"data":            (*htmlSelection).data,
	"serialize":       func(s *htmlSelection, _ sobek.FunctionCall) sobek.Value { return s.rt.ToValue(s.serialize()) },
	"serializeArray":  (*htmlSelection).serializeArray,
	"serializeObject": (*htmlSelection).serializeObject,
}

// Get returns a method of the Selection, or its url.
func (s *htmlSelection) Get(key string) sobek.Value {
	if key == "url" {
		return s.rt.ToValue(s.url)
	}
	m, ok := selectionMethods[key]
	if !ok {
		return nil
	}
	return s.rt.ToValue(func(call sobek.FunctionCall) sobek.Value { return m(s, call) })
}

// Set refuses: a Selection is read-only.
func (s *htmlSelection) Set(string, sobek.Value) bool { return false }

// Has reports whether key is a method of a Selection or url.
func (s *htmlSelection) Has(key string) bool {
	_, ok := selectionMethods[key]
	return ok || key == "url"
}

// Delete refuses: a Selection is read-only.
func (s *htmlSelection) Delete(string) bool { return false }

// Keys lists the Selection's methods and url.
func (s *htmlSelection) Keys() []string { return append(sortedKeys(selectionMethods), "url") }

// value is the Selection as a JavaScript object.
func (s *htmlSelection) value() sobek.Value { return s.rt.NewDynamicObject(s) }

// derive is a Selection of the same page with other nodes.
func (s *htmlSelection) derive(sel *goquery.Selection) *htmlSelection {
	return &htmlSelection{rt: s.rt, sel: sel, url: s.url}
}

// only is the Selection of one node of the same page (which goquery does
// not build directly: an empty Selection of the page given the node).
func (s *htmlSelection) only(n *html.Node) *htmlSelection {
	sel := s.sel.Slice(0, 0)
	sel.Nodes = []*html.Node{n}
	return s.derive(sel)
}

// selOps are the goquery functions one Selection method maps to, by the
// kind of its argument: a selector string, a Selection, or nodes (an
// Element).
type selOps struct {
	str   func(*goquery.Selection, string) *goquery.Selection
	sel   func(*goquery.Selection, *goquery.Selection) *goquery.Selection
	nodes func(*goquery.Selection, ...*html.Node) *goquery.Selection
}

var (
	addOps     = selOps{(*goquery.Selection).Add, (*goquery.Selection).AddSelection, (*goquery.Selection).AddNodes}
	findOps    = selOps{(*goquery.Selection).Find, (*goquery.Selection).FindSelection, (*goquery.Selection).FindNodes}
	closestOps = selOps{(*goquery.Selection).Closest, (*goquery.Selection).ClosestSelection, (*goquery.Selection).ClosestNodes}
	hasOps     = selOps{(*goquery.Selection).Has, (*goquery.Selection).HasSelection, (*goquery.Selection).HasNodes}
	notOps     = selOps{(*goquery.Selection).Not, (*goquery.Selection).NotSelection, (*goquery.Selection).NotNodes}
)

// byArg applies ops by the kind of the first argument.
func (s *htmlSelection) byArg(name string, call sobek.FunctionCall, ops selOps) sobek.Value {
	v := call.Argument(0)
	switch x := v.Export().(type) {
	case string:
		return s.derive(ops.str(s.sel, x)).value()
	case *htmlSelection:
		return s.derive(ops.sel(s.sel, x.sel)).value()
	case *htmlElement:
		return s.derive(ops.nodes(s.sel, x.node)).value()
	}
	panic(s.rt.NewTypeError("%s: invalid argument, cannot use %s as a selector: want a selector string, a Selection or an Element", name, describe(v)))
}

// adjacent is a method that moves to neighbours of each node, all of
// them or those an optional selector matches.
func adjacent(all func(*goquery.Selection) *goquery.Selection, filtered func(*goquery.Selection, string) *goquery.Selection) selectionMethod {
	return func(s *htmlSelection, call sobek.FunctionCall) sobek.Value {
		if f := call.Argument(0); present(f) {
			return s.derive(filtered(s.sel, f.String())).value()
		}
		return s.derive(all(s.sel)).value()
	}
}

// untilOps are the goquery functions of a ...Until method: up to a
// selector or a Selection, with or without a filter.
type untilOps struct {
	str         func(*goquery.Selection, string) *goquery.Selection
	sel         func(*goquery.Selection, *goquery.Selection) *goquery.Selection
	filteredStr func(*goquery.Selection, string, string) *goquery.Selection
	filteredSel func(*goquery.Selection, string, *goquery.Selection) *goquery.Selection
}

var (
	nextUntilOps = untilOps{(*goquery.Selection).NextUntil, (*goquery.Selection).NextUntilSelection,
		(*goquery.Selection).NextFilteredUntil, (*goquery.Selection).NextFilteredUntilSelection}
	prevUntilOps = untilOps{(*goquery.Selection).PrevUntil, (*goquery.Selection).PrevUntilSelection,
		(*goquery.Selection).PrevFilteredUntil, (*goquery.Selection).PrevFilteredUntilSelection}
	parentsUntilOps = untilOps{(*goquery.Selection).ParentsUntil, (*goquery.Selection).ParentsUntilSelection,
		(*goquery.Selection).ParentsFilteredUntil, (*goquery.Selection).ParentsFilteredUntilSelection}
)

// until is a ...Until(stop, filter) method: stop is a selector, a
// Selection or null (no stop); filter, when given, keeps the nodes it
// matches.
func until(name string, ops untilOps) selectionMethod {
	return func(s *htmlSelection, call sobek.FunctionCall) sobek.Value {
		stop, filter := call.Argument(0), call.Argument(1)
		var stopSel *goquery.Selection
		stopStr := ""
		switch x := stop.Export().(type) {
		case nil:
		case string:
			stopStr = x
		case *htmlSelection:
			stopSel = x.sel
		default:
			panic(s.rt.NewTypeError("%s: invalid argument, cannot use %s as a selector: want a selector string, a Selection or null", name, describe(stop)))
		}
		switch {
		case present(filter) && stopSel != nil:
			return s.derive(ops.filteredSel(s.sel, filter.String(), stopSel)).value()
		case present(filter):
			return s.derive(ops.filteredStr(s.sel, filter.String(), stopStr)).value()
		case stopSel != nil:
			return s.derive(ops.sel(s.sel, stopSel)).value()
		}
		return s.derive(ops.str(s.sel, stopStr)).value()
	}
}

// matcher calls fn(index, Selection) for a node and reads its answer as
// a boolean; an exception in fn (an interrupt included) propagates.
func (s *htmlSelection) matcher(fn sobek.Callable) func(int, *goquery.Selection) bool {
	return func(i int, sel *goquery.Selection) bool {
		v, err := fn(sobek.Undefined(), s.rt.ToValue(i), s.derive(sel).value())
		if err != nil {
			panic(err)
		}
		return v.ToBoolean()
	}
}

// not removes the nodes a selector, a Selection, an Element or a
// function(index, Selection) matches.
func (s *htmlSelection) not(call sobek.FunctionCall) sobek.Value {
	if fn, ok := sobek.AssertFunction(call.Argument(0)); ok {
		return s.derive(s.sel.NotFunction(s.matcher(fn))).value()
	}
	return s.byArg("not", call, notOps)
}

// single is the first node under the Selection a selector matches.
func (s *htmlSelection) single(call sobek.FunctionCall) sobek.Value {
	sel := s.sel.FindMatcher(goquery.Single(call.Argument(0).String()))
	if len(sel.Nodes) > 1 {
		sel.Nodes = sel.Nodes[:1]
	}
	return s.derive(sel).value()
}

// filter keeps the nodes a selector, a Selection or a
// function(index, Selection) matches.
func (s *htmlSelection) filter(call sobek.FunctionCall) sobek.Value {
	v := call.Argument(0)
	switch x := v.Export().(type) {
	case string:
		return s.derive(s.sel.Filter(x)).value()
	case *htmlSelection:
		return s.derive(s.sel.FilterSelection(x.sel)).value()
	}
	fn, ok := sobek.AssertFunction(v)
	if !ok {
		panic(s.rt.NewTypeError("filter: the argument must be a function, a selector or a Selection, not %s", describe(v)))
	}
	return s.derive(s.sel.FilterFunction(s.matcher(fn))).value()
}

// is reports whether a node matches a selector, a Selection or a
// function(index, Selection).
func (s *htmlSelection) is(call sobek.FunctionCall) sobek.Value {
	v := call.Argument(0)
	switch x := v.Export().(type) {
	case string:
		return s.rt.ToValue(s.sel.Is(x))
	case *htmlSelection:
		return s.rt.ToValue(s.sel.IsSelection(x.sel))
	}
	fn, ok := sobek.AssertFunction(v)
	if !ok {
		panic(s.rt.NewTypeError("is: the argument must be a function, a selector or a Selection, not %s", describe(v)))
	}
	return s.rt.ToValue(s.sel.IsFunction(s.matcher(fn)))
}

// intArg is argument i as an int (0 when absent).
func intArg(call sobek.FunctionCall, i int) int { return int(call.Argument(i).ToInteger()) }

// attr is the first node's attribute name, or the second argument (else
// undefined) when it has none.
func (s *htmlSelection) attr(call sobek.FunctionCall) sobek.Value {
	if v, ok := s.sel.Attr(call.Argument(0).String()); ok {
		return s.rt.ToValue(v)
	}
	if len(call.Arguments) > 1 {
		return call.Argument(1)
	}
	return sobek.Undefined()
}

// html is the first node's inner HTML ("" for an empty Selection, as
// k6's; undefined when it cannot be rendered).
func (s *htmlSelection) html() sobek.Value {
	h, err := s.sel.Html()
	if err != nil {
		return sobek.Undefined()
	}
	return s.rt.ToValue(h)
}

// val is the first node's form value, as a browser submits it: an input's
// value ("on" for a checkbox or radio without one), a textarea's content,
// an option's value or text, a select's selected option(s).
func (s *htmlSelection) val() sobek.Value {
	switch goquery.NodeName(s.sel) {
	case "input":
		if v, ok := s.sel.Attr("value"); ok {
			return s.rt.ToValue(v)
		}
		if t := s.sel.AttrOr("type", ""); t == "checkbox" || t == "radio" {
			return s.rt.ToValue("on")
		}
		return s.rt.ToValue("")
	case "button":
		return s.rt.ToValue(s.sel.AttrOr("value", ""))
	case "textarea":
		return s.html()
	case "option":
		return s.rt.ToValue(valueOrHTML(s.sel))
	case "select":
		selected := s.sel.First().Find("option[selected]")
		if _, multiple := s.sel.Attr("multiple"); multiple {
			return s.rt.ToValue(selected.Map(func(_ int, o *goquery.Selection) string { return valueOrHTML(o) }))
		}
		return s.rt.ToValue(valueOrHTML(selected))
	}
	return sobek.Undefined()
}

// valueOrHTML is a node's value attribute, or else its inner HTML.
func valueOrHTML(sel *goquery.Selection) string {
	if v, ok := sel.Attr("value"); ok {
		return v
	}
	h, _ := sel.Html()
	return h
}

// each calls fn(index, Element) for each node and returns the Selection.
func (s *htmlSelection) each(call sobek.FunctionCall) sobek.Value {
	fn, ok := sobek.AssertFunction(call.Argument(0))
	if !ok {
		panic(s.rt.NewTypeError("each: the argument must be a function, not %s", describe(call.Argument(0))))
	}
	for i := range s.sel.Nodes {
		if _, err := fn(call.Argument(0), s.rt.ToValue(i), s.element(i)); err != nil {
			panic(err)
		}
	}
	return s.value()
}

// mapSel calls fn(index, Selection) for each node and returns an array of
// its answers.
func (s *htmlSelection) mapSel(call sobek.FunctionCall) sobek.Value {
	fn, ok := sobek.AssertFunction(call.Argument(0))
	if !ok {
		panic(s.rt.NewTypeError("map: the argument must be a function, not %s", describe(call.Argument(0))))
	}
	out := make([]any, 0, len(s.sel.Nodes))
	for i := range s.sel.Nodes {
		v, err := fn(call.Argument(0), s.rt.ToValue(i), s.derive(s.sel.Eq(i)).value())
		if err != nil {
			panic(err)
		}
		out = append(out, v)
	}
	return s.rt.NewArray(out...)
}

// slice is the nodes from start up to end (the last node when end is
// absent or past it).
func (s *htmlSelection) slice(call sobek.FunctionCall) sobek.Value {
	n := s.sel.Length()
	start, end := clamp(intArg(call, 0), n), n
	if e := call.Argument(1); present(e) {
		end = clamp(int(e.ToInteger()), n)
	}
	if end < start {
		end = start
	}
	return s.derive(s.sel.Slice(start, end)).value()
}

// clamp is a JavaScript slice index i (negative counts from the end)
// within 0..n.
func clamp(i, n int) int {
	if i < 0 {
		i += n
	}
	return max(0, min(i, n))
}

// get is the Element at an index (negative counts from the end;
// undefined out of range), or an array of all of them.
func (s *htmlSelection) get(call sobek.FunctionCall) sobek.Value {
	n := s.sel.Length()
	if !present(call.Argument(0)) {
		return s.elements()
	}
	i := intArg(call, 0)
	if i <= -n || i >= n {
		return sobek.Undefined()
	}
	if i < 0 {
		i += n
	}
	return s.element(i)
}

// toArray is an array of one-node Selections.
func (s *htmlSelection) toArray(sobek.FunctionCall) sobek.Value {
	out := make([]any, len(s.sel.Nodes))
	for i := range s.sel.Nodes {
		out[i] = s.derive(s.sel.Eq(i)).value()
	}
	return s.rt.NewArray(out...)
}

// index is the position of the first node among its siblings, or of a
// selector's, Selection's or Element's node in this Selection (-1 when
// absent).
func (s *htmlSelection) index(call sobek.FunctionCall) sobek.Value {
	if !present(call.Argument(0)) {
		return s.rt.ToValue(s.sel.Index())
	}
	switch x := call.Argument(0).Export().(type) {
	case string:
		return s.rt.ToValue(s.sel.IndexSelector(x))
	case *htmlSelection:
		return s.rt.ToValue(s.sel.IndexOfSelection(x.sel))
	case *htmlElement:
		return s.rt.ToValue(s.sel.IndexOfNode(x.node))
	}
	return s.rt.ToValue(-1)
}

// data is the first node's data-* attributes as an object (names in
// camelCase, values converted as jQuery's data() does), or the one a
// camelCase key names.
func (s *htmlSelection) data(call sobek.FunctionCall) sobek.Value {
	if s.sel.Length() == 0 || len(s.sel.Nodes[0].Attr) == 0 {
		return sobek.Undefined()
	}
	if k := call.Argument(0); present(k) {
		if v, ok := s.sel.Attr("data-" + camelToKebab(k.String())); ok {
			return s.rt.ToValue(dataValue(v))
		}
		return sobek.Undefined()
	}
	o := s.rt.NewObject()
	for _, a := range s.sel.Nodes[0].Attr {
		if name, ok := strings.CutPrefix(a.Key, "data-"); ok && name != "" {
			set(o, kebabToCamel(name), dataValue(a.Val))
		}
	}
	return o
}

// kebabToCamel is a data-* attribute's property name: "foo-bar" is fooBar.
func kebabToCamel(s string) string {
	parts := strings.Split(s, "-")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

// camelToKebab is the attribute name of a data property: fooBar is
// "foo-bar".
func camelToKebab(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// dataValue converts a data-* attribute's text as jQuery does: JSON
// objects and arrays parsed, true/false as booleans, null and undefined
// (and empty) as undefined, a number that prints back the same as a
// number, anything else as the string.
func dataValue(v string) any {
	switch v {
	case "", "null", "undefined":
		return sobek.Undefined()
	case "true":
		return true
	case "false":
		return false
	}
	if v[0] == '{' || v[0] == '[' {
		var x any
		if json.Unmarshal([]byte(v), &x) == nil {
			return x
		}
		return v
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == v {
		return f
	}
	return v
}

// formField is one name=value a form would submit.
type formField struct {
	name  string
	value sobek.Value
}

// formFields are the fields the Selection (a form, or fields themselves)
// would submit: named inputs, selects, textareas and keygens that are not
// disabled, not buttons, images or files, and checked if they are
// checkboxes or radios.
func (s *htmlSelection) formFields() []formField {
	const submittable = "input,select,textarea,keygen"
	var fields *goquery.Selection
	if s.sel.Is("form") {
		fields = s.sel.Find(submittable)
	} else {
		fields = s.sel.Filter(submittable)
	}
	fields = fields.FilterFunction(func(_ int, f *goquery.Selection) bool {
		typ := f.AttrOr("type", "")
		switch {
		case f.AttrOr("name", "") == "", f.AttrOr("disabled", "") == "disabled":
			return false
		case typ == "submit", typ == "button", typ == "reset", typ == "image", typ == "file":
			return false
		case typ == "checkbox" || typ == "radio":
			return f.AttrOr("checked", "") == "checked"
		}
		return true
	})
	out := make([]formField, len(fields.Nodes))
	fields.Each(func(i int, f *goquery.Selection) {
		out[i] = formField{name: f.AttrOr("name", ""), value: s.derive(f).val()}
	})
	return out
}

// serialize is the form's fields URL-encoded, as a browser submits them.
func (s *htmlSelection) serialize() string {
	form := url.Values{}
	for _, f := range s.formFields() {
		switch v := f.value.Export().(type) {
		case string:
			form.Set(f.name, v)
		case []string:
			form[f.name] = v
		}
	}
	return form.Encode()
}

// serializeArray is the form's fields as [{name, value}].
func (s *htmlSelection) serializeArray(sobek.FunctionCall) sobek.Value {
	fields := s.formFields()
	out := make([]any, len(fields))
	for i, f := range fields {
		o := s.rt.NewObject()
		set(o, "name", f.name)
		set(o, "value", f.value)
		out[i] = o
	}
	return s.rt.NewArray(out...)
}

// serializeObject is the form's fields as {name: value}.
func (s *htmlSelection) serializeObject(sobek.FunctionCall) sobek.Value {
	o := s.rt.NewObject()
	for _, f := range s.formFields() {
		set(o, f.name, f.value)
	}
	return o
}

// element is the Element of node i (undefined out of range).
func (s *htmlSelection) element(i int) sobek.Value {
	if i < 0 || i >= len(s.sel.Nodes) {
		return sobek.Undefined()
	}
	return newElement(s.derive(s.sel.Eq(i)))
}

// elements is an array of the Selection's Elements.
func (s *htmlSelection) elements() sobek.Value {
	out := make([]any, len(s.sel.Nodes))
	for i := range s.sel.Nodes {
		out[i] = s.element(i)
	}
	return s.rt.NewArray(out...)
}

// sortedKeys are a table's names, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
