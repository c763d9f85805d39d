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
