package js

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// loadTS loads main from dir and makes VU 1.
func loadTS(t *testing.T, dir, main string) (*VU, *Shared, error) {
	t.Helper()
	sh, err := NewShared(SharedOptions{Console: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	prog, err := Load(filepath.Join(dir, main))
	if err != nil {
		return nil, sh, err
	}
	vu, err := NewVU(context.Background(), 1, prog, sh)
	return vu, sh, err
}

const tsLib = `type N = number;
export interface Named {
  name: string;
}
export function helper(n: N): void {
  if (n > 0) {
    throw new Error('boom ' + n);
  }
}
`

func TestTypeScriptErrorsPointIntoTheTSFile(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		iter  bool     // the error is an iteration's, not the load's
		want  []string // substrings of the error
	}{
		{"exception in an iteration, through an imported .ts module", map[string]string{
			"script.ts": "import { helper, Named } from './lib.ts';\n\nconst who: Named = { name: 'x' };\n\nexport default function (): void {\n  helper(who.name.length);\n}\n",
			"lib.ts":    tsLib},
			true, []string{"lib.ts:7:11: iteration: Error: boom 1", "at helper (", "lib.ts:7:11)", "script.ts:6:3)"}},
		{"exception in init", map[string]string{
			"script.ts": "enum Color { Red, Green }\nconst c: Color = Color.Green;\nif (c === Color.Green) {\n    throw new TypeError(`green ${c}`);\n}\nexport default function () {}\n"},
			false, []string{"script.ts:4:11: init: TypeError: green 1"}},
		{"syntax error", map[string]string{
			"script.ts": "interface A { x: number }\nexport default function (a: A) {\n  const y: number = ;\n}\n"},
			false, []string{"script.ts:3:21", "SyntaxError", "Unexpected \";\"", "  const y: number = ;\n\t                    ^"}},
		{"syntax error in an imported .ts module", map[string]string{
			"script.ts": "import { f } from './lib.ts';\nexport default function () { f(); }\n",
			"lib.ts":    "export function f(: number) {}\n"},
			false, []string{"lib.ts:1:19", "SyntaxError"}},
		{"a .js import of a .ts file", map[string]string{
			"script.ts": "import { helper } from './lib.js';\nexport default function () {\n  helper(2);\n}\n",
			"lib.ts":    tsLib},
			true, []string{"lib.ts:7:11: iteration: Error: boom 2"}},
		{"a directory with a space", map[string]string{
			"script.ts":      "import { helper } from './sub dir/lib.ts';\nexport default function () {\n  helper(3);\n}\n",
			"sub dir/lib.ts": tsLib},
			true, []string{"sub dir/lib.ts:7:11: iteration: Error: boom 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, src := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			vu, _, err := loadTS(t, dir, "script.ts")
			if tt.iter {
				if err != nil {
					t.Fatal(err)
				}
				it := runDefault(context.Background(), t, vu)
				if it.Err == nil {
					t.Fatal("the iteration passed, want it to throw")
				}
				err = it.Err
			}
			if _, ok := errors.AsType[*ScriptError](err); !ok {
				t.Fatalf("got error %v (%T), want a *ScriptError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestTypeScriptRunsWithoutTypeChecksAndLowersWhatSobekLacks(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.ts": `import { check } from 'k6';
// A type error: esbuild strips types and does not check them, as k6.
const n: number = 'not a number' as unknown as number;

async function* count(limit: number): AsyncGenerator<number> {
  for (let i = 0; i < limit; i++) {
    yield i;
  }
}

class Box<T> {
  #value: T;
  static made = 0;
  constructor(v: T) { this.#value = v; Box.made++; }
  get value(): T { return this.#value; }
}

export let total = 0;

export default async function (): Promise<void> {
  for await (const i of count(4)) {
    total += i;
  }
  const b = new Box<string>(n);
  check(b, { 'value kept': (x) => x.value === 'not a number' && Box.made === 1 });
  check(total, { 'summed': (s) => s === 6 });
}
`})
	vu, sh, err := loadTS(t, dir, "script.ts")
	if err != nil {
		t.Fatal(err)
	}
	if it := runDefault(context.Background(), t, vu); it.Err != nil {
		t.Fatal(it.Err)
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	if c := sum.Custom(MetricChecks, recording.TagFilter{}); c == nil || c.Count != 2 || c.Passes != 2 {
		t.Errorf("got checks %+v, want 2 passed", c)
	}
}

func TestShiftMappings(t *testing.T) {
	for _, in := range [][]int{{0}, {15, -3, 1024, -1025, 7}} {
		got, err := decodeVLQ(encodeVLQ(in))
		if err != nil || !slices.Equal(got, in) {
			t.Errorf("round trip of %v: got %v, %v", in, got, err)
		}
	}
	// Line 1: a segment at generated column 2 from source column 4, then
	// one 3 columns on from 1 column on; line 2 empty; line 3 one segment
	// at 0 from 2 columns back.
	in := encodeVLQ([]int{2, 0, 0, 4}) + "," + encodeVLQ([]int{3, 0, 0, 1}) + ";;" + encodeVLQ([]int{0, 0, 1, -2})
	got, err := shiftMappings(in)
	if err != nil {
		t.Fatal(err)
	}
	want := encodeVLQ([]int{3, 0, 0, 5}) + "," + encodeVLQ([]int{3, 0, 0, 1}) + ";;" + encodeVLQ([]int{1, 0, 1, -2})
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := shiftMappings("A!"); err == nil {
		t.Error("a bad VLQ digit was accepted")
	}
}
