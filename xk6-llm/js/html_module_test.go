package js

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTMLModuleRefusesBadInputWithItsName: res.html() of a response
// with no body, a Selection method given the wrong kind of argument, and
// submitForm or clickLink on a page without what they look for each throw
// an error naming the method, as k6's do; a page's Selection is not
// writable.
func TestHTMLModuleRefusesBadInputWithItsName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<html><body><p class="x">one</p><p>two</p></body></html>`))
	}))
	defer srv.Close()
	cases := []struct{ name, code, want string }{
		{"no body", `http.get(URL, { responseType: 'none' }).html()`, "response.html(): the response has no body"},
		{"failed request", `http.get('http://127.0.0.1:1/').html()`, "response.html(): the response has no body"},
		{"find with a number", `parseHTML('<p></p>').find(3)`, "find: invalid argument, cannot use a int64 as a selector"},
		{"filter with an object", `parseHTML('<p></p>').find('p').filter({})`, "filter: the argument must be a function, a selector or a Selection"},
		{"map without a function", `parseHTML('<p></p>').find('p').map(1)`, "map: the argument must be a function"},
		{"no form", `http.get(URL).submitForm()`, "submitForm: no form found for selector 'form' in response '" + srv.URL + "/'"},
		{"no link", `http.get(URL).clickLink({ selector: 'a.none' })`, "clickLink: no element found for selector 'a.none'"},
		{"callback throws", `parseHTML('<p></p>').find('p').each(() => { throw new Error('boom in each'); })`, "boom in each"},
		{"read-only", `'use strict'; const s = parseHTML('<p></p>'); s.find = 1`, "'Set' on a dynamic object returned false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeScripts(t, map[string]string{"script.js": `import http from 'k6/http';
import { parseHTML } from 'k6/html';
const URL = '` + srv.URL + `/';
export default function () { ` + tc.code + `; }
`})
			vu, _, err := loadVU(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			it := runDefault(context.Background(), t, vu)
			if it.Err == nil || !strings.Contains(it.Err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", it.Err, tc.want)
			}
		})
	}
}

// TestHTMLSelectionKeepsItsPage: two pages parsed in one
// iteration keep their own nodes and URLs (a Selection derived from one
// never sees the other's), and parseHTML in the init code works, as k6's.
func TestHTMLSelectionKeepsItsPage(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `import { parseHTML } from 'k6/html';
const initDoc = parseHTML('<ul><li>a</li><li>b</li></ul>');
function eq(got, want, what) { if (got !== want) throw new Error(what + ': got ' + got + ', want ' + want); }
export default function () {
  const other = parseHTML('<ul><li>x</li></ul>');
  eq(initDoc.find('li').size(), 2, 'init page');
  eq(other.find('li').size(), 1, 'other page');
  eq(initDoc.find('li').add(other.find('li')).text(), 'abx', 'add across pages');
  eq(initDoc.find('li').first().text(), 'a', 'first');
  eq(initDoc.find('li').text(), 'ab', 'unchanged by first()');
  eq(Object.keys(initDoc).includes('find'), true, 'keys list the methods');
  eq(initDoc.url, '', 'a parsed string has no URL');
}
`})
	vu, _, err := loadVU(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
}

// TestHTMLValuesAsK6ReadsThem: data() converts as jQuery's data() (a
// number only when it prints back the same, JSON objects parsed, empty as
// undefined), val() reads form fields as a browser submits them, an empty
// Selection's html() is "" and map() gives a real array of strings.
func TestHTMLValuesAsK6ReadsThem(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `import { parseHTML } from 'k6/html';
function eq(got, want, what) { if (got !== want) throw new Error(what + ': got ' + got + ', want ' + want); }
const doc = parseHTML(` + "`" + `<div id="d" data-n="42" data-f="0.25" data-padded="0.50" data-exp="2e3" data-obj='{"k":[1,2]}' data-empty="" data-yes="true" data-long-name-here="x"></div>
<form><input id="plain" name="a"><input id="cb" type="checkbox" name="c"><button id="b" name="b">Send</button>
<select id="one" name="one"><option>first</option><option selected>second</option></select>
<select id="many" name="many" multiple><option value="1" selected>x</option><option value="2">y</option><option value="3" selected>z</option></select>
<textarea name="t">some text</textarea></form>` + "`" + `);
export default function () {
  const d = doc.find('#d');
  eq(d.data('n'), 42, 'integer');
  eq(d.data('f'), 0.25, 'float');
  eq(d.data('padded'), '0.50', 'a number that does not print back stays a string');
  eq(d.data('exp'), '2e3', 'exponent form stays a string');
  eq(d.data('obj').k[1], 2, 'JSON object');
  eq(d.data('empty'), undefined, 'empty');
  eq(d.data('yes'), true, 'boolean');
  eq(d.data('longNameHere'), 'x', 'camelCase key');
  eq(Object.keys(d.data()).sort().join(), 'empty,exp,f,longNameHere,n,obj,padded,yes', 'all data keys');
  eq(doc.find('#plain').val(), '', 'input without a value');
  eq(doc.find('#cb').val(), 'on', 'checkbox without a value');
  eq(doc.find('#b').val(), '', 'button without a value');
  eq(doc.find('#one').val(), 'second', 'select: the selected option text');
  eq(doc.find('#many').val().join(), '1,3', 'multiple select: the selected values');
  eq(doc.find('textarea').val(), 'some text', 'textarea');
  eq(doc.find('#nothing').html(), '', 'empty selection html()');
  const m = doc.find('option').map((i, s) => s.text());
  eq(Array.isArray(m) && typeof m[0] === 'string', true, 'map gives an array of strings');
  eq(doc.find('form').serialize(), 'a=&many=1&many=3&one=second&t=some+text', 'serialize');
}
`})
	vu, _, err := loadVU(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
}
