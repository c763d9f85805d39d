package js

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConsoleDebugOnlyWhenAsked: console.debug lines are left out unless
// the run shows them (k6 shows them with --verbose); the other levels
// always print, tagged with their level and VU.
func TestConsoleDebugOnlyWhenAsked(t *testing.T) {
	dir := writeScripts(t, map[string]string{"script.js": `
export default function () {
  console.log('l', 1);
  console.debug('d', 2);
  console.info('i');
  console.warn('w');
  console.error('e', { a: 1 });
}
`})
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, debug := range []bool{false, true} {
		var out strings.Builder
		var mu sync.Mutex
		sh, err := NewShared(SharedOptions{Console: lockedWriter{&mu, &out}, ConsoleDebug: debug})
		if err != nil {
			t.Fatal(err)
		}
		vu, err := NewVU(context.Background(), 1, prog, sh)
		if err != nil {
			t.Fatal(err)
		}
		if it := runDefault(context.Background(), t, vu); it.Err != nil {
			t.Fatal(it.Err)
		}
		sh.Close()
		mu.Lock()
		got := out.String()
		mu.Unlock()
		want := "log [vu 1] l 1\n"
		if debug {
			want += "debug [vu 1] d 2\n"
		}
		want += "info [vu 1] i\nwarn [vu 1] w\nerror [vu 1] e {\"a\":1}\n"
		if got != want {
			t.Errorf("debug shown %v: got\n%s\nwant\n%s", debug, got, want)
		}
	}
}
