package js

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/grafana/sobek"
	"golang.org/x/net/html"
)

// htmlElement is one node of a k6/html page as k6's Element shows it: the
// DOM-like methods of elementMethods, and those of its tag
// (elementKinds, html_elements.go). A sobek.DynamicObject, read-only,
// belonging to its VU's runtime.
type htmlElement struct {
	s    *htmlSelection // the node alone
	node *html.Node
}

var _ sobek.DynamicObject = (*htmlElement)(nil)

// elementMethod is one method of an Element.
type elementMethod func(e *htmlElement, call sobek.FunctionCall) sobek.Value

// newElement is the Element of a one-node Selection (undefined when it is
// empty).
func newElement(s *htmlSelection) sobek.Value {
	if s.sel.Length() == 0 {
		return sobek.Undefined()
	}
	return s.rt.NewDynamicObject(&htmlElement{s: s, node: s.sel.Nodes[0]})
}

// nodeElement is the Element of n, a node of the same page (undefined
// for nil).
func (e *htmlElement) nodeElement(n *html.Node) sobek.Value {
	if n == nil {
		return sobek.Undefined()
	}
	return newElement(e.s.only(n))
}

// method is the element's method key: its tag's first, then the
// generic ones.
func (e *htmlElement) method(key string) (elementMethod, bool) {
	if e.node.Type == html.ElementNode {
		if m, ok := elementKinds[e.node.Data][key]; ok {
			return m, true
		}
	}
	m, ok := elementMethods[key]
	return m, ok
}

// Get returns a method of the element.
func (e *htmlElement) Get(key string) sobek.Value {
	m, ok := e.method(key)
	if !ok {
		return nil
	}
	return e.s.rt.ToValue(func(call sobek.FunctionCall) sobek.Value { return m(e, call) })
}

// Set refuses: an Element is read-only.
func (e *htmlElement) Set(string, sobek.Value) bool { return false }

// Has reports whether key is a method of the element.
func (e *htmlElement) Has(key string) bool {
	_, ok := e.method(key)
	return ok
}

// Delete refuses: an Element is read-only.
func (e *htmlElement) Delete(string) bool { return false }

// Keys lists the element's methods.
func (e *htmlElement) Keys() []string {
	keys := sortedKeys(elementMethods)
	if e.node.Type == html.ElementNode {
		for _, k := range sortedKeys(elementKinds[e.node.Data]) {
			if _, generic := elementMethods[k]; !generic {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// DOM node types, as nodeType() gives them.
const (
	domElementNode  = 1
	domTextNode     = 3
	domCommentNode  = 8
	domDocumentNode = 9
	domDoctypeNode  = 10
)

// ret wraps a Go value as a method's result.
func (e *htmlElement) ret(v any) sobek.Value { return e.s.rt.ToValue(v) }

// list is an array of the Elements of a Selection of the page.
func (e *htmlElement) list(sel *goquery.Selection) sobek.Value { return e.s.derive(sel).elements() }

// elementMethods are the methods every Element has, as k6's.
var elementMethods = map[string]elementMethod{
	"getAttribute": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		return e.s.attr(sobek.FunctionCall{Arguments: c.Arguments[:min(len(c.Arguments), 1)]})
	},
	"getAttributeNode": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		name := c.Argument(0).String()
		for _, a := range e.node.Attr {
			if a.Key == name {
				return e.attribute(a)
			}
		}
		return sobek.Undefined()
	},
	"hasAttribute":  func(e *htmlElement, c sobek.FunctionCall) sobek.Value { return e.ret(e.has(c.Argument(0).String())) },
	"hasAttributes": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(len(e.node.Attr) > 0) },
	"attributes": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		o := e.s.rt.NewObject()
		for _, a := range e.node.Attr {
			set(o, a.Key, e.attribute(a))
		}
		return o
	},
	"toString": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if e.node.Type == html.ElementNode {
			return e.ret("[object html.Node]")
		}
		return e.ret(fmt.Sprintf("[object %s]", goquery.NodeName(e.s.sel)))
	},
	"hasChildNodes": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.node.FirstChild != nil) },
	"textContent":   func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.s.sel.Text()) },
	"id":            func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.attrString("id")) },
	"isEqualNode": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		o, ok := c.Argument(0).Export().(*htmlElement)
		if !ok {
			return e.ret(false)
		}
		a, errA := e.s.sel.Html()
		b, errB := o.s.sel.Html()
		return e.ret(errA == nil && errB == nil && a == b)
	},
	"isSameNode": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		o, ok := c.Argument(0).Export().(*htmlElement)
		return e.ret(ok && o.node == e.node)
	},
	"selection": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.s.value() },
	"getElementsByClassName": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		return e.list(e.s.sel.Find("." + c.Argument(0).String()))
	},
	"getElementsByTagName": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		return e.list(e.s.sel.Find(c.Argument(0).String()))
	},
	"querySelector": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		return newElement(e.s.derive(e.s.sel.Find(c.Argument(0).String()).First()))
	},
	"querySelectorAll": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		return e.list(e.s.sel.Find(c.Argument(0).String()))
	},
	"nodeName":        func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(goquery.NodeName(e.s.sel)) },
	"firstChild":      func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.nodeElement(e.node.FirstChild) },
	"lastChild":       func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.nodeElement(e.node.LastChild) },
	"previousSibling": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.nodeElement(e.node.PrevSibling) },
	"nextSibling":     func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.nodeElement(e.node.NextSibling) },
	"parentNode":      func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.nodeElement(e.node.Parent) },
	"firstElementChild": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return newElement(e.s.derive(e.s.sel.Children().First()))
	},
	"lastElementChild": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return newElement(e.s.derive(e.s.sel.Children().Last()))
	},
	"previousElementSibling": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return newElement(e.s.derive(e.s.sel.Prev()))
	},
	"nextElementSibling": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return newElement(e.s.derive(e.s.sel.Next()))
	},
	"parentElement": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return newElement(e.s.derive(e.s.sel.Parent()))
	},
	"childNodes":        func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Contents()) },
	"children":          func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Children()) },
	"childElementCount": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.s.sel.Children().Length()) },
	"classList": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.strings(strings.Fields(e.attrString("class")))
	},
	"className": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if v, ok := e.s.sel.Attr("class"); ok {
			return e.ret(v)
		}
		return sobek.Undefined()
	},
	"lang": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		for _, a := range e.node.Attr {
			if a.Key == "lang" && a.Namespace == "" {
				return e.ret(a.Val)
			}
		}
		return sobek.Undefined()
	},
	"ownerDocument": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		for n := e.node; n != nil; n = n.Parent {
			if n.Type == html.DocumentNode {
				return e.nodeElement(n)
			}
		}
		return sobek.Undefined()
	},
	"namespaceURI":       func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(namespaceURI(e.node.Namespace)) },
	"isDefaultNamespace": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.node.Namespace == "") },
	"innerHTML":          func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.s.html() },
	"nodeType": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		switch e.node.Type {
		case html.TextNode:
			return e.ret(domTextNode)
		case html.DocumentNode:
			return e.ret(domDocumentNode)
		case html.ElementNode:
			return e.ret(domElementNode)
		case html.CommentNode:
			return e.ret(domCommentNode)
		case html.DoctypeNode:
			return e.ret(domDoctypeNode)
		}
		return sobek.Undefined()
	},
	"nodeValue": func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if e.node.Type == html.TextNode || e.node.Type == html.CommentNode {
			return e.ret(e.node.Data)
		}
		return sobek.Undefined()
	},
	"contains": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		o, ok := c.Argument(0).Export().(*htmlElement)
		// The DOM's contains() is false for the node itself (goquery's is true).
		return e.ret(ok && o.node != e.node && e.s.sel.Contains(o.node))
	},
	"matches": func(e *htmlElement, c sobek.FunctionCall) sobek.Value {
		return e.ret(e.s.sel.Is(c.Argument(0).String()))
	},
}

// attribute is an Attr object: name, value, owner_element, and
// localName(), prefix(), namespaceURI() as k6's.
func (e *htmlElement) attribute(a html.Attribute) sobek.Value {
	rt := e.s.rt
	o := rt.NewObject()
	set(o, "name", a.Key)
	set(o, "value", a.Val)
	set(o, "owner_element", rt.NewDynamicObject(e))
	set(o, "localName", func() string { return a.Key })
	set(o, "prefix", func() string { return a.Namespace })
	set(o, "namespaceURI", func() string { return namespaceURI(a.Namespace) })
	return o
}

// namespaceURI is the namespace of a node's prefix.
func namespaceURI(prefix string) string {
	switch prefix {
	case "svg":
		return "http://www.w3.org/2000/svg"
	case "math":
		return "http://www.w3.org/1998/Math/MathML"
	}
	return "http://www.w3.org/1999/xhtml"
}

// has reports whether the element has attribute name.
func (e *htmlElement) has(name string) bool {
	_, ok := e.s.sel.Attr(name)
	return ok
}

// attrString is attribute name ("" when absent).
func (e *htmlElement) attrString(name string) string { return e.s.sel.AttrOr(name, "") }

// attrInt is attribute name as an integer, or def when absent or not one.
func (e *htmlElement) attrInt(name string, def int) int {
	n, err := strconv.Atoi(e.attrString(name))
	if err != nil {
		return def
	}
	return n
}

// resolve is ref resolved against the page's URL.
func (e *htmlElement) resolve(ref string) (*url.URL, bool) {
	base, err := url.Parse(e.s.url)
	if err != nil {
		return nil, false
	}
	u, err := url.Parse(ref)
	if err != nil {
		return nil, false
	}
	return base.ResolveReference(u), true
}

// attrURL is a URL attribute: as written when the page has no URL,
// resolved against it when it has, def when absent or not a URL.
func (e *htmlElement) attrURL(name, def string) string {
	v, ok := e.s.sel.Attr(name)
	if e.s.url == "" {
		return v
	}
	if !ok {
		return def
	}
	u, ok := e.resolve(v)
	if !ok {
		return def
	}
	return u.String()
}

// strings is an array of strings.
func (e *htmlElement) strings(ss []string) sobek.Value {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return e.s.rt.NewArray(out...)
}

// root is the page's topmost element, to search the whole page from.
func (e *htmlElement) root() *goquery.Selection {
	if p := e.s.sel.Parents(); p.Length() > 0 {
		return p.Last()
	}
	return e.s.sel
}

// ownerForm is the form a field belongs to: the one around it, else the
// one its form attribute names.
func (e *htmlElement) ownerForm() (*goquery.Selection, bool) {
	if f := e.s.sel.Closest("form"); f.Length() > 0 {
		return f, true
	}
	id := e.attrString("form")
	if id == "" {
		return nil, false
	}
	f := e.root().Find("#" + id)
	return f, f.Length() > 0
}

// form is the Element of the owner form (undefined for none).
func (e *htmlElement) form() sobek.Value {
	f, ok := e.ownerForm()
	if !ok {
		return sobek.Undefined()
	}
	return newElement(e.s.derive(f.Eq(0)))
}

// labels are the labels around the element and those naming its id.
func (e *htmlElement) labels() sobek.Value {
	labels := e.s.sel.Closest("label")
	if id := e.attrString("id"); id != "" {
		labels = labels.AddSelection(e.root().Find(`label[for="` + id + `"]`))
	}
	return e.list(labels)
}
