package js

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

const sharedArrayScript = `import { check } from 'k6';
import { SharedArray } from 'k6/data';
import { Counter } from 'k6/metrics';

const builds = new Counter('shared_array_builds');
const prompts = new SharedArray('prompts', function () {
  builds.add(1);
  return JSON.parse(open('./prompts.json')).map((p, i) => ({ id: i, text: p, tags: ['t' + i] }));
});

export default function () {
  const first = prompts[0];
  let threw = 0;
  for (const f of [() => { first.text = 'changed'; }, () => { first.tags.push('x'); }, () => { prompts[0] = 1; }, () => { prompts.length = 0; }]) {
    try { f(); } catch (e) { if (e instanceof TypeError) threw++; }
  }
  const ids = [];
  for (const p of prompts) ids.push(p.id);
  check(prompts, {
    'is an array': (a) => Array.isArray(a) && a.length === 3,
    'index access': (a) => a[1].text === 'two' && a[2].tags[0] === 't2',
    'out of range': (a) => a[3] === undefined && a[-1] === undefined,
    'iteration': () => ids.join(',') === '0,1,2',
    'array methods': (a) => a.map((p) => p.text).join(' ') === 'one two three' && a.filter((p) => p.id > 0).length === 2,
    'read-only': () => threw === 4 && prompts[0].text === 'one' && prompts.length === 3,
    'frozen copies': (a) => Object.isFrozen(a[0]) && Object.isFrozen(a[0].tags) && a[0] !== a[0],
  });
}
`

func TestSharedArrayIsBuiltOnceAndReadOnlyInEveryVU(t *testing.T) {
	dir := writeScripts(t, map[string]string{
		"script.js":    sharedArrayScript,
		"prompts.json": `["one", "two", "three"]`,
	})
	sh, err := NewShared(SharedOptions{Console: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	vus := make([]*VU, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { vus[i], errs[i] = NewVU(context.Background(), i+1, prog, sh) })
	}
	wg.Wait()
	for i, vu := range vus {
		if errs[i] != nil {
			t.Fatalf("VU %d: %v", i+1, errs[i])
		}
		if it := runDefault(context.Background(), t, vu); it.Err != nil {
			t.Fatalf("VU %d: %v", i+1, it.Err)
		}
	}
	sum := sh.Recorder.Finish(sh.Clock.Now())
	if got := sum.Custom("shared_array_builds", recording.TagFilter{}).Sum; got != 1 {
		t.Errorf("the SharedArray's function ran %v times for %d VUs, want once", got, n)
	}
	for _, c := range sh.Checks().Checks {
		if c.Passes != n || c.Fails != 0 {
			t.Errorf("check %q: %d passes and %d fails, want %d and 0", c.Name, c.Passes, c.Fails, n)
		}
	}
	if got := len(sh.Checks().Checks); got != 7 {
		t.Errorf("got %d checks, want 7", got)
	}
}

func TestSharedArrayMisuseIsAScriptError(t *testing.T) {
	tests := []struct {
		name   string
		script string
		iter   bool
		want   []string
	}{
		{"not an array", "import { SharedArray } from 'k6/data';\nconst a = new SharedArray('a', () => ({ x: 1 }));\nexport default function () {}\n",
			false, []string{"script.js:2:", "TypeError", "must return an array, not an Object"}},
		{"no function", "import { SharedArray } from 'k6/data';\nconst a = new SharedArray('a', [1, 2]);\nexport default function () {}\n",
			false, []string{"script.js:2:", "second argument must be a function"}},
		{"no name", "import { SharedArray } from 'k6/data';\nconst a = new SharedArray('', () => []);\nexport default function () {}\n",
			false, []string{"script.js:2:", "non-empty name"}},
		{"the function throws", "import { SharedArray } from 'k6/data';\nconst a = new SharedArray('a', () => {\n  throw new Error('no data');\n});\nexport default function () {}\n",
			false, []string{"script.js:3:", "Error: no data"}},
		{"outside init", "import { SharedArray } from 'k6/data';\nexport default function () {\n  new SharedArray('a', () => []);\n}\n",
			true, []string{"script.js:3:", "init context"}},
		{"recursive", "import { SharedArray } from 'k6/data';\nconst a = new SharedArray('a', () => [new SharedArray('a', () => [])]);\nexport default function () {}\n",
			false, []string{"creates the same SharedArray"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vu, _, err := loadVU(t, writeScripts(t, map[string]string{"script.js": tt.script}))
			if tt.iter {
				if err != nil {
					t.Fatal(err)
				}
				it := runDefault(context.Background(), t, vu)
				if it.Err == nil {
					t.Fatal("the iteration passed")
				}
				err = it.Err
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
