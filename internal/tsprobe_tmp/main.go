package main

import (
	"fmt"

	"github.com/grafana/sobek"
)

func main() {
	cases := map[string]string{
		"optional chaining": "let a = {}; a?.b?.c;",
		"nullish":           "let a = null ?? 1;",
		"logical assign":    "let a = null; a ??= 1; a ||= 2; a &&= 3;",
		"class fields":      "class A { x = 1; static y = 2; }",
		"private fields":    "class A { #x = 1; get() { return this.#x; } }",
		"private methods":   "class A { #m() {} g() { this.#m(); } }",
		"static block":      "class A { static { this.q = 1; } }",
		"numeric sep":       "let a = 1_000;",
		"bigint":            "let a = 10n;",
		"exponent":          "let a = 2 ** 3;",
		"async gen":         "async function* g() { yield 1; }",
		"for await":         "async function f() { for await (const x of []) {} }",
		"regex named":       "/(?<y>\\d+)/.exec('1').groups.y;",
		"regex lookbehind":  "/(?<=a)b/.test('ab');",
		"regex dotall":      "/a.b/s.test('a\\nb');",
		"regex d flag":      "/a/d.exec('a');",
		"regex v flag":      "/[\\p{L}]/v.test('a');",
		"obj spread":        "let a = {...{b:1}};",
		"optional catch":    "try {} catch {}",
		"async arrow":       "const f = async () => { await 1; };",
		"top-level await":   "await 1;",
		"class private in":  "class A { #x; static h(o) { return #x in o; } }",
		"array at":          "[1].at(-1);",
		"Object.hasOwn":     "Object.hasOwn({a:1}, 'a');",
		"hashbang":          "#!/usr/bin/env k6\nlet a = 1;",
		"import.meta":       "import.meta.url;",
		"arbitrary module ns": "export { a as 'b c' }; const a = 1;",
	}
	for name, src := range cases {
		_, err := sobek.ParseModule("x.js", src, func(any, string) (sobek.ModuleRecord, error) { return nil, nil })
		if err == nil {
			rt := sobek.New()
			if _, e2 := rt.RunString("(function(){" + src + "})()"); e2 != nil && name != "top-level await" && name != "import.meta" && name != "arbitrary module ns" && name != "hashbang" {
				fmt.Printf("RUN FAIL %-20s %v\n", name, e2)
				continue
			}
			fmt.Printf("ok   %s\n", name)
		} else {
			fmt.Printf("FAIL %-20s %v\n", name, err)
		}
	}
}
