package js

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/grafana/sobek"
)

// Groups of tags that share methods, as the DOM's element interfaces do.
const (
	hrefTags      = "a area"            // HTMLHyperlinkElementUtils
	mediaTags     = "audio video"       // HTMLMediaElement
	formFieldTags = "button input"      // form-associated, submittable
	sectionTags   = "thead tfoot tbody" // HTMLTableSectionElement
	cellTags      = "td th"             // HTMLTableCellElement
)

// attrKind is how an attribute accessor reads its attribute.
type attrKind int

const (
	attrString   attrKind = iota // the text, "" when absent
	attrURL                      // resolved against the page's URL; args[0] the default ("" or "page": the page's URL)
	attrBool                     // present or not
	attrInt                      // an integer; args[0] the default
	attrEnum                     // one of args, args[0] when absent or another value
	attrEnumNull                 // one of args, undefined otherwise
	attrConst                    // always args[0]
)

// attrAccessor is one method of the elements of some tags that reads one
// attribute.
type attrAccessor struct {
	tags, method, attr string
	kind               attrKind
	args               []string
}

// Values of the enumerated attributes; an enum's first is its default.
var (
	referrerPolicies = []string{"", "no-referrer", "no-referrer-when-downgrade", "origin", "origin-when-cross-origin", "unsafe-url"}
	autocompletes    = []string{"on", "off"}
	crossOrigins     = []string{"anonymous", "use-credentials"}
	encTypes         = []string{"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}
	inputTypes       = []string{"text", "button", "checkbox", "color", "date", "datetime-local", "email", "file", "hidden", "image",
		"month", "number", "password", "radio", "range", "reset", "search", "submit", "tel", "time", "url", "week"}
)

// attrAccessors are the attribute-reading methods of the typed Elements,
// as k6's (which follow the DOM's HTML element interfaces).
var attrAccessors = []attrAccessor{
	{hrefTags, "download", "download", attrString, nil},
	{hrefTags, "referrerPolicy", "referrerpolicy", attrEnum, referrerPolicies},
	{hrefTags, "rel", "rel", attrString, nil},
	{hrefTags, "href", "href", attrURL, []string{""}},
	{hrefTags, "target", "target", attrString, nil},
	{hrefTags, "type", "type", attrString, nil},
	{hrefTags, "accessKey", "accesskey", attrString, nil},
	{hrefTags, "hrefLang", "hreflang", attrString, nil},
	{hrefTags, "toString", "href", attrURL, []string{""}},
	{mediaTags, "autoplay", "autoplay", attrBool, nil},
	{mediaTags, "controls", "controls", attrBool, nil},
	{mediaTags, "loop", "loop", attrBool, nil},
	{mediaTags, "muted", "muted", attrBool, nil},
	{mediaTags, "defaultMuted", "muted", attrBool, nil},
	{mediaTags, "preload", "preload", attrEnum, []string{"auto", "metadata", "none"}},
	{mediaTags, "src", "src", attrURL, []string{""}},
	{mediaTags, "currentSrc", "src", attrString, nil},
	{mediaTags, "crossOrigin", "crossorigin", attrEnumNull, crossOrigins},
	{mediaTags, "mediaGroup", "mediagroup", attrString, nil},
	{"base", "href", "href", attrURL, []string{"page"}},
	{"base", "target", "target", attrString, nil},
	{"button", "accessKey", "accesskey", attrString, nil},
	{"button", "autofocus", "autofocus", attrBool, nil},
	{"button", "disabled", "disabled", attrBool, nil},
	{"button", "tabIndex", "tabindex", attrInt, []string{"0"}},
	{"button", "type", "type", attrEnum, []string{"submit", "button", "menu", "reset"}},
	{"data", "value", "value", attrString, nil},
	{"embed", "height", "height", attrString, nil},
	{"embed", "width", "width", attrString, nil},
	{"embed", "src", "src", attrString, nil},
	{"embed", "type", "type", attrString, nil},
	{"fieldset", "disabled", "disabled", attrBool, nil},
	{"fieldset", "name", "name", attrString, nil},
	{"fieldset", "type", "", attrConst, []string{"fieldset"}},
	{"form", "action", "action", attrURL, []string{""}},
	{"form", "name", "name", attrString, nil},
	{"form", "target", "target", attrString, nil},
	{"form", "enctype", "enctype", attrEnum, encTypes},
	{"form", "encoding", "enctype", attrEnum, encTypes},
	{"form", "acceptCharset", "accept-charset", attrString, nil},
	{"form", "autocomplete", "autocomplete", attrEnum, autocompletes},
	{"form", "noValidate", "novalidate", attrBool, nil},
	{"form", "method", "method", attrEnum, []string{"get", "post"}},
	{"iframe", "allowfullscreen", "allowfullscreen", attrBool, nil},
	{"iframe", "referrerPolicy", "referrerpolicy", attrEnum, referrerPolicies},
	{"iframe", "height", "height", attrString, nil},
	{"iframe", "width", "width", attrString, nil},
	{"iframe", "name", "name", attrString, nil},
	{"iframe", "src", "src", attrURL, []string{""}},
	{"img", "currentSrc", "src", attrURL, []string{""}},
	{"img", "sizes", "sizes", attrString, nil},
	{"img", "srcset", "srcset", attrString, nil},
	{"img", "alt", "alt", attrString, nil},
	{"img", "crossOrigin", "crossorigin", attrEnumNull, crossOrigins},
	{"img", "height", "height", attrInt, []string{"0"}},
	{"img", "width", "width", attrInt, []string{"0"}},
	{"img", "isMap", "ismap", attrBool, nil},
	{"img", "name", "name", attrString, nil},
	{"img", "src", "src", attrURL, []string{""}},
	{"img", "useMap", "usemap", attrString, nil},
	{"img", "referrerPolicy", "referrerpolicy", attrEnum, referrerPolicies},
	{"input", "tabIndex", "tabindex", attrInt, []string{"0"}},
	{"input", "type", "type", attrEnum, inputTypes},
	{"input", "disabled", "disabled", attrBool, nil},
	{"input", "autofocus", "autofocus", attrBool, nil},
	{"input", "required", "required", attrBool, nil},
	{"input", "value", "value", attrString, nil},
	{"input", "checked", "checked", attrBool, nil},
	{"input", "defaultChecked", "checked", attrBool, nil},
	{"input", "alt", "alt", attrString, nil},
	{"input", "src", "src", attrURL, []string{""}},
	{"input", "height", "height", attrString, nil},
	{"input", "width", "width", attrString, nil},
	{"input", "accept", "accept", attrString, nil},
	{"input", "autocomplete", "autocomplete", attrEnum, autocompletes},
	{"input", "maxLength", "maxlength", attrInt, []string{"-1"}},
	{"input", "size", "size", attrInt, []string{"0"}},
	{"input", "pattern", "pattern", attrString, nil},
	{"input", "placeholder", "placeholder", attrString, nil},
	{"input", "readonly", "readonly", attrBool, nil},
	{"input", "min", "min", attrString, nil},
	{"input", "max", "max", attrString, nil},
	{"input", "defaultValue", "value", attrString, nil},
	{"input", "dirName", "dirname", attrString, nil},
	{"input", "accessKey", "accesskey", attrString, nil},
	{"input", "multiple", "multiple", attrBool, nil},
	{"input", "step", "step", attrString, nil},
	{"keygen", "autofocus", "autofocus", attrBool, nil},
	{"keygen", "challenge", "challenge", attrString, nil},
	{"keygen", "disabled", "disabled", attrBool, nil},
	{"keygen", "keytype", "keytype", attrEnum, []string{"RSA", "DSA", "EC"}},
	{"keygen", "name", "name", attrString, nil},
	{"keygen", "type", "", attrConst, []string{"keygen"}},
	{"label", "htmlFor", "for", attrString, nil},
	{"legend", "accessKey", "accesskey", attrString, nil},
	{"li", "value", "value", attrInt, []string{"0"}},
	{"li", "type", "type", attrEnum, []string{"", "1", "a", "A", "i", "I", "disc", "square", "circle"}},
	{"link", "crossOrigin", "crossorigin", attrEnumNull, crossOrigins},
	{"link", "referrerPolicy", "referrerpolicy", attrEnum, referrerPolicies},
	{"link", "href", "href", attrURL, []string{""}},
	{"link", "hreflang", "hreflang", attrString, nil},
	{"link", "media", "media", attrString, nil},
	{"link", "rel", "rel", attrString, nil},
	{"link", "target", "target", attrString, nil},
	{"link", "type", "type", attrString, nil},
	{"map", "name", "name", attrString, nil},
	{"meta", "content", "content", attrString, nil},
	{"meta", "name", "name", attrString, nil},
	{"meta", "httpEquiv", "http-equiv", attrEnum, []string{"content-type", "default-style", "refresh"}},
	{"meter", "min", "min", attrInt, []string{"0"}},
	{"meter", "max", "max", attrInt, []string{"0"}},
	{"meter", "high", "high", attrInt, []string{"0"}},
	{"meter", "low", "low", attrInt, []string{"0"}},
	{"meter", "optimum", "optimum", attrInt, []string{"0"}},
	{"del ins", "cite", "cite", attrString, nil},
	{"del ins", "datetime", "datetime", attrString, nil},
	{"object", "data", "data", attrURL, []string{""}},
	{"object", "height", "height", attrString, nil},
	{"object", "name", "name", attrString, nil},
	{"object", "type", "type", attrString, nil},
	{"object", "tabIndex", "tabindex", attrInt, []string{"0"}},
	{"object", "typeMustMatch", "typemustmatch", attrBool, nil},
	{"object", "useMap", "usemap", attrString, nil},
	{"object", "width", "width", attrString, nil},
	{"ol", "reversed", "reversed", attrBool, nil},
	{"ol", "start", "start", attrInt, []string{"0"}},
	{"ol", "type", "type", attrEnum, []string{"1", "a", "A", "i", "I"}},
	{"optgroup", "disabled", "disabled", attrBool, nil},
	{"optgroup", "label", "label", attrString, nil},
	{"option", "defaultSelected", "selected", attrBool, nil},
	{"option", "selected", "selected", attrBool, nil},
	{"output", "htmlFor", "for", attrString, nil},
	{"output", "name", "name", attrString, nil},
	{"output", "type", "", attrConst, []string{"output"}},
	{"param", "name", "name", attrString, nil},
	{"param", "value", "value", attrString, nil},
	{"pre", "name", "name", attrString, nil},
	{"pre", "value", "value", attrString, nil},
	{"quote", "cite", "cite", attrString, nil},
	{"script", "crossOrigin", "crossorigin", attrString, nil},
	{"script", "type", "type", attrString, nil},
	{"script", "src", "src", attrURL, []string{""}},
	{"script", "charset", "charset", attrString, nil},
	{"script", "async", "async", attrBool, nil},
	{"script", "defer", "defer", attrBool, nil},
	{"script", "noModule", "nomodule", attrBool, nil},
	{"select", "autofocus", "autofocus", attrBool, nil},
	{"select", "disabled", "disabled", attrBool, nil},
	{"select", "multiple", "multiple", attrBool, nil},
	{"select", "name", "name", attrString, nil},
	{"select", "required", "required", attrBool, nil},
	{"select", "tabIndex", "tabindex", attrInt, []string{"0"}},
	{"source", "keySystem", "keysystem", attrString, nil},
	{"source", "media", "media", attrString, nil},
	{"source", "sizes", "sizes", attrString, nil},
	{"source", "src", "src", attrURL, []string{""}},
	{"source", "srcset", "srcset", attrString, nil},
	{"source", "type", "type", attrString, nil},
	{"style", "media", "media", attrString, nil},
	{"table", "sortable", "sortable", attrBool, nil},
	{cellTags, "colSpan", "colspan", attrInt, []string{"1"}},
	{cellTags, "rowSpan", "rowspan", attrInt, []string{"1"}},
	{cellTags, "headers", "headers", attrString, nil},
	{"th", "abbr", "abbr", attrString, nil},
	{"th", "scope", "scope", attrEnum, []string{"", "row", "col", "colgroup", "rowgroup"}},
	{"th", "sorted", "sorted", attrBool, nil},
	{"textarea", "type", "", attrConst, []string{"textarea"}},
	{"textarea", "value", "value", attrString, nil},
	{"textarea", "defaultValue", "value", attrString, nil},
	{"textarea", "placeholder", "placeholder", attrString, nil},
	{"textarea", "rows", "rows", attrInt, []string{"0"}},
	{"textarea", "cols", "cols", attrInt, []string{"0"}},
	{"textarea", "maxLength", "maxlength", attrInt, []string{"0"}},
	{"textarea", "tabIndex", "tabindex", attrInt, []string{"0"}},
	{"textarea", "accessKey", "accesskey", attrString, nil},
	{"textarea", "readOnly", "readonly", attrBool, nil},
	{"textarea", "required", "required", attrBool, nil},
	{"textarea", "autocomplete", "autocomplete", attrEnum, autocompletes},
	{"textarea", "autocapitalize", "autocapitalize", attrEnum, []string{"sentences", "none", "off", "characters", "words"}},
	{"textarea", "wrap", "wrap", attrEnum, []string{"soft", "hard", "off"}},
	{"time", "datetime", "datetime", attrString, nil},
	{"track", "kind", "kind", attrEnum, []string{"subtitle", "captions", "descriptions", "chapters", "metadata"}},
	{"track", "src", "src", attrURL, []string{""}},
	{"track", "srclang", "srclang", attrString, nil},
	{"track", "label", "label", attrString, nil},
	{"track", "default", "default", attrBool, nil},
	{"ul", "type", "type", attrString, nil},
	{"canvas", "width", "width", attrInt, []string{"150"}},
	{"canvas", "height", "height", attrInt, []string{"150"}},
	{"col", "span", "span", attrInt, []string{"1"}},
}

// read is the accessor's method.
func (a attrAccessor) read() elementMethod {
	return func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		switch a.kind {
		case attrURL:
			def := a.args[0]
			if def == "page" {
				def = e.s.url
			}
			return e.ret(e.attrURL(a.attr, def))
		case attrBool:
			return e.ret(e.has(a.attr))
		case attrInt:
			def, _ := strconv.Atoi(a.args[0])
			n := e.attrInt(a.attr, def)
			if a.method == "span" && n < 1 {
				n = 1
			}
			return e.ret(n)
		case attrEnum, attrEnumNull:
			v := e.attrString(a.attr)
			if a.method == "method" {
				v = strings.ToLower(v)
			}
			for _, o := range a.args {
				if v == o {
					return e.ret(v)
				}
			}
			if a.kind == attrEnumNull {
				return sobek.Undefined()
			}
			return e.ret(a.args[0])
		case attrConst:
			return e.ret(a.args[0])
		}
		return e.ret(e.attrString(a.attr))
	}
}

// computedMethod is one method of the elements of some tags that is
// worked out from more than one attribute or from the page.
type computedMethod struct {
	tags, method string
	fn           elementMethod
}

// computedMethods are the typed Elements' other methods, as k6's.
var computedMethods = []computedMethod{
	{hrefTags, "hash", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if f := e.href().Fragment; f != "" {
			return e.ret("#" + f)
		}
		return e.ret("")
	}},
	{hrefTags, "host", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		u := e.href()
		host, port, err := net.SplitHostPort(u.Host)
		if err == nil && port == defaultPorts[u.Scheme] {
			return e.ret(host)
		}
		return e.ret(u.Host)
	}},
	{hrefTags, "hostname", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.href().Hostname()) }},
	{hrefTags, "port", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.href().Port()) }},
	{hrefTags, "username", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.href().User.Username()) }},
	{hrefTags, "password", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		p, _ := e.href().User.Password()
		return e.ret(p)
	}},
	{hrefTags, "origin", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		u := e.href()
		switch u.Scheme {
		case "":
			return e.ret("")
		case "file":
			return e.ret(e.attrURL("href", ""))
		}
		return e.ret(u.Scheme + "://" + u.Host)
	}},
	{hrefTags, "pathname", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.href().Path) }},
	{hrefTags, "protocol", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if s := e.href().Scheme; s != "" {
			return e.ret(s)
		}
		return e.ret(":")
	}},
	{hrefTags + " link", "relList", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.strings(strings.Fields(e.attrString("rel")))
	}},
	{hrefTags, "search", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if q := e.href().RawQuery; q != "" {
			return e.ret("?" + q)
		}
		return e.ret("")
	}},
	{hrefTags + " option script title", "text", textContent},
	{formFieldTags + " fieldset keygen label legend object output select textarea", "form", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.form()
	}},
	{formFieldTags + " keygen meter output progress select textarea", "labels", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.labels()
	}},
	{formFieldTags, "name", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.attrString("name")) }},
	{formFieldTags, "formAction", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		action, ok := e.formAttr("action")
		if e.s.url == "" {
			return e.ret(action)
		}
		if !ok || action == "" {
			return e.ret(e.s.url)
		}
		if u, ok := e.resolve(action); ok {
			return e.ret(u.String())
		}
		return e.ret(action)
	}},
	{formFieldTags, "formEnctype", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		switch t, _ := e.formAttr("enctype"); t {
		case "multipart/form-data", "text/plain":
			return e.ret(t)
		}
		return e.ret("application/x-www-form-urlencoded")
	}},
	{formFieldTags, "formMethod", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if m, _ := e.formAttr("method"); strings.EqualFold(m, "post") {
			return e.ret("post")
		}
		return e.ret("get")
	}},
	{formFieldTags, "formNoValidate", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		_, ok := e.formAttr("novalidate")
		return e.ret(ok)
	}},
	{formFieldTags, "formTarget", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		t, _ := e.formAttr("target")
		return e.ret(t)
	}},
	{"button option", "value", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(valueOrHTML(e.s.sel)) }},
	{"datalist select", "options", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Find("option")) }},
	{"fieldset", "elements", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.list(e.s.sel.Find("input,select,button,textarea"))
	}},
	{"fieldset", "validity", func(*htmlElement, sobek.FunctionCall) sobek.Value { return sobek.Undefined() }},
	{"form", "elements", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.list(e.s.sel.Find(formElements))
	}},
	{"form", "length", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.ret(e.s.sel.Find(formElements).Length())
	}},
	{"input", "list", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		id := e.attrString("list")
		switch e.attrString("type") {
		case "hidden", "checkbox", "radio", "file", "button":
			return sobek.Undefined()
		}
		if id == "" {
			return sobek.Undefined()
		}
		return newElement(e.s.derive(e.root().Find(`datalist[id="` + id + `"]`).First()))
	}},
	{"label", "control", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		id, ok := e.s.sel.Attr("for")
		if !ok {
			return sobek.Undefined()
		}
		return newElement(e.s.derive(e.root().Find("#" + id).First()))
	}},
	{"map", "areas", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Find("area")) }},
	{"map", "images", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		name := e.attrString("id")
		if name == "" {
			name = e.attrString("name")
		}
		if name == "" {
			return e.s.rt.NewArray()
		}
		return e.list(e.root().Find(`img[usemap="#` + name + `"],object[usemap="#` + name + `"]`))
	}},
	{"option", "disabled", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if e.has("disabled") {
			return e.ret(true)
		}
		_, ok := e.s.sel.ParentsFiltered("optgroup").Attr("disabled")
		return e.ret(ok)
	}},
	{"option", "index", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		holder := e.s.sel.ParentsFiltered("select,datalist")
		if holder.Length() == 0 {
			return e.ret(0)
		}
		return e.ret(holder.Find("option").IndexOfSelection(e.s.sel))
	}},
	{"option", "label", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if l, ok := e.s.sel.Attr("label"); ok {
			return e.ret(l)
		}
		return e.ret(e.s.sel.Text())
	}},
	{"output", "value", textContent},
	{"output", "defaultValue", textContent},
	{"progress", "max", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.progressMax()) }},
	{"progress", "value", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.progress(0)) }},
	{"progress", "position", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.progress(-1)) }},
	{"select", "length", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.s.sel.Find("option").Length()) }},
	{"select", "selectedIndex", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		sel := e.s.sel.Find("option[selected]")
		if sel.Length() == 0 {
			return e.ret(-1)
		}
		return e.ret(e.s.sel.Find("option").IndexOfSelection(sel))
	}},
	{"select", "selectedOptions", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.list(e.s.sel.Find("option[selected]"))
	}},
	{"select", "size", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if e.has("multiple") {
			return e.ret(4)
		}
		return e.ret(1)
	}},
	{"select", "type", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if e.has("multiple") {
			return e.ret("select-multiple")
		}
		return e.ret("select")
	}},
	{"select", "value", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		sel := e.s.sel.Find("option[selected]")
		if sel.Length() == 0 {
			return e.ret("")
		}
		return e.ret(valueOrHTML(sel.First()))
	}},
	{"style", "type", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		if t := e.attrString("type"); t != "" {
			return e.ret(t)
		}
		return e.ret("text/css")
	}},
	{"table", "caption", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.child("caption") }},
	{"table", "tHead", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.child("thead") }},
	{"table", "tFoot", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.child("tfoot") }},
	{"table " + sectionTags, "rows", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Find("tr")) }},
	{"table", "tBodies", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Find("tbody")) }},
	{cellTags, "cellIndex", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.indexIn("tr", "th,td")) }},
	{"tr", "cells", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Find("th,td")) }},
	{"tr", "rowIndex", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.indexIn("table", "tr")) }},
	{"tr", "sectionRowIndex", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value {
		return e.ret(e.indexIn("thead,tbody,tfoot", "tr"))
	}},
	{"textarea", "length", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(len(e.attrString("value"))) }},
	{mediaTags, "textTracks", func(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.list(e.s.sel.Find("track")) }},
}

// formElements are the elements a form's elements() lists.
const formElements = "input,select,button,textarea,fieldset"

// defaultPorts are the ports a URL's host() leaves out.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ftp": "21"}

// textContent is a method that returns the element's text.
func textContent(e *htmlElement, _ sobek.FunctionCall) sobek.Value { return e.ret(e.s.sel.Text()) }

// href is the element's href, resolved against the page's URL (an empty
// URL when absent or invalid).
func (e *htmlElement) href() *url.URL {
	v, ok := e.s.sel.Attr("href")
	if !ok {
		return &url.URL{}
	}
	u, ok := e.resolve(v)
	if !ok {
		return &url.URL{}
	}
	return u
}

// formAttr is the field's form<name> attribute, or else its form's
// <name> attribute.
func (e *htmlElement) formAttr(name string) (string, bool) {
	if v, ok := e.s.sel.Attr("form" + name); ok {
		return v, true
	}
	f, ok := e.ownerForm()
	if !ok {
		return "", false
	}
	return f.Attr(name)
}

// progressMax is a progress element's max (1 when absent or invalid).
func (e *htmlElement) progressMax() float64 {
	m, err := strconv.ParseFloat(e.attrString("max"), 64)
	if err != nil || m < 0 {
		return 1
	}
	return m
}

// progress is a progress element's value over its max, def when it has
// no valid value.
func (e *htmlElement) progress(def float64) float64 {
	v, err := strconv.ParseFloat(e.attrString("value"), 64)
	if err != nil || v < 0 {
		return def
	}
	return v / e.progressMax()
}

// child is the Element of the element's first child tag (undefined for
// none).
func (e *htmlElement) child(tag string) sobek.Value {
	return newElement(e.s.derive(e.s.sel.ChildrenFiltered(tag).First()))
}

// indexIn is the element's position among the items of its nearest
// container (-1 outside one).
func (e *htmlElement) indexIn(container, items string) int {
	c := e.s.sel.ParentsFiltered(container)
	if c.Length() == 0 {
		return -1
	}
	return c.First().Find(items).IndexOfSelection(e.s.sel)
}

// elementKinds are the typed Elements' methods by tag, built from
// attrAccessors and computedMethods.
var elementKinds = buildElementKinds()

func buildElementKinds() map[string]map[string]elementMethod {
	kinds := map[string]map[string]elementMethod{}
	add := func(tags, method string, fn elementMethod) {
		for _, tag := range strings.Fields(tags) {
			if kinds[tag] == nil {
				kinds[tag] = map[string]elementMethod{}
			}
			kinds[tag][method] = fn
		}
	}
	for _, a := range attrAccessors {
		add(a.tags, a.method, a.read())
	}
	for _, c := range computedMethods {
		add(c.tags, c.method, c.fn)
	}
	return kinds
}
