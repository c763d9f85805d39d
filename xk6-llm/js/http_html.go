package js

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/grafana/sobek"
)

// htmlMethods gives a response k6's HTML methods: html([selector]) parses
// the body (its elements' URLs resolve against the response's URL),
// submitForm(...) and clickLink(...) send the request a browser would.
func (m *httpModule) htmlMethods(o *sobek.Object, res *httpResult) {
	rt := m.vu.rt
	var doc *htmlSelection
	page := func(what string) *htmlSelection {
		if doc != nil {
			return doc
		}
		if res.body == nil {
			panic(rt.NewTypeError("response.%s: the response has no body (the request failed, or responseType is none)", what))
		}
		d, err := parseHTML(rt, string(res.body), res.url)
		if err != nil {
			panic(rt.NewGoError(fmt.Errorf("response.%s: %w", what, err)))
		}
		doc = d
		return doc
	}
	set(o, "html", func(call sobek.FunctionCall) sobek.Value {
		d := page("html()")
		if sel := call.Argument(0); present(sel) {
			return d.derive(d.sel.Find(sel.String())).value()
		}
		return d.value()
	})
	set(o, "submitForm", func(call sobek.FunctionCall) sobek.Value {
		return m.submitForm(page("submitForm()"), res.url, call.Argument(0))
	})
	set(o, "clickLink", func(call sobek.FunctionCall) sobek.Value {
		return m.clickLink(page("clickLink()"), res.url, call.Argument(0))
	})
}

// submitForm sends the form formSelector (default "form") finds as a
// browser submits it: to its action (the page's URL without one),
// resolved against the page's URL, with its method (GET by default; a GET
// puts the fields in the query), its fields, the name and value of the
// button submitSelector (default [type="submit"]) finds, and args.fields
// over them; args.params are the request's params.
func (m *httpModule) submitForm(doc *htmlSelection, pageURL string, args sobek.Value) sobek.Value {
	rt := m.vu.rt
	formSel, submitSel := "form", `[type="submit"]`
	var fields *sobek.Object
	params := sobek.Null()
	if a, ok := args.(*sobek.Object); ok && present(args) {
		for _, k := range a.Keys() {
			switch v := a.Get(k); k {
			case "formSelector":
				formSel = v.String()
			case "submitSelector":
				submitSel = v.String()
			case "fields":
				fields, _ = v.(*sobek.Object)
			case "params":
				params = v
			}
		}
	}
	form := doc.derive(doc.sel.Find(formSel))
	if form.sel.Length() == 0 {
		panic(rt.NewGoError(fmt.Errorf("submitForm: no form found for selector '%s' in response '%s'", formSel, pageURL)))
	}
	method := http.MethodGet
	if v, ok := form.sel.Attr("method"); ok {
		method = strings.ToUpper(v)
	}
	target, err := url.Parse(pageURL)
	if err != nil {
		panic(rt.NewGoError(fmt.Errorf("submitForm: the response's URL: %w", err)))
	}
	if action, ok := form.sel.Attr("action"); ok {
		a, err := url.Parse(action)
		if err != nil {
			panic(rt.NewGoError(fmt.Errorf("submitForm: the form's action %q: %w", action, err)))
		}
		target = target.ResolveReference(a)
	}
	values := rt.NewObject()
	for _, f := range form.formFields() {
		set(values, f.name, f.value)
	}
	submit := form.derive(form.sel.Find(submitSel))
	if name, ok := submit.sel.Attr("name"); ok {
		if v := submit.val(); present(v) {
			set(values, name, v)
		}
	}
	if fields != nil {
		for _, k := range fields.Keys() {
			set(values, k, fields.Get(k))
		}
	}
	if method == http.MethodGet {
		q := url.Values{}
		for _, k := range values.Keys() {
			q.Add(k, values.Get(k).String())
		}
		target.RawQuery = q.Encode()
		return m.request(method, rt.ToValue(target.String()), sobek.Null(), params)
	}
	return m.request(method, rt.ToValue(target.String()), values, params)
}

// clickLink sends a GET to the href of the link selector (default
// a[href]) finds first, resolved against the page's URL; args.params are
// the request's params.
func (m *httpModule) clickLink(doc *htmlSelection, pageURL string, args sobek.Value) sobek.Value {
	rt := m.vu.rt
	selector := "a[href]"
	params := sobek.Null()
	if a, ok := args.(*sobek.Object); ok && present(args) {
		for _, k := range a.Keys() {
			switch v := a.Get(k); k {
			case "selector":
				selector = v.String()
			case "params":
				params = v
			}
		}
	}
	link := doc.sel.Find(selector)
	if link.Length() == 0 {
		panic(rt.NewGoError(fmt.Errorf("clickLink: no element found for selector '%s' in response '%s'", selector, pageURL)))
	}
	href, ok := link.Attr("href")
	if !ok {
		panic(rt.NewGoError(fmt.Errorf("clickLink: no valid href attribute value found for selector '%s' in response '%s'", selector, pageURL)))
	}
	base, err := url.Parse(pageURL)
	if err != nil {
		panic(rt.NewGoError(fmt.Errorf("clickLink: the response's URL: %w", err)))
	}
	ref, err := url.Parse(href)
	if err != nil {
		panic(rt.NewGoError(fmt.Errorf("clickLink: the link's href %q: %w", href, err)))
	}
	return m.request(http.MethodGet, rt.ToValue(base.ResolveReference(ref).String()), sobek.Null(), params)
}
