package js

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptSourcesAreBounded: a script, a module it imports and a source
// map its sourceMappingURL names are read only from a regular file of at
// most MaxModuleSize bytes: an import of a device (reading /dev/zero would
// never end) or of a file over the bound is an error that names it, before
// anything of it is read, and a source map that is a device likewise; a
// module within the bound still loads.
func TestScriptSourcesAreBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.js")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxModuleSize+1); err != nil { // sparse
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		script string
		want   []string
	}{
		{"an import of a device", "import x from '/dev/zero';\nexport default function () {}\n",
			[]string{"read module /dev/zero: not a regular file but a device: a module is read from a file"}},
		{"an import of a file over the bound", "import x from './big.js';\nexport default function () {}\n",
			[]string{"read module " + big + ": 67108865 bytes is over the limit of 67108864 bytes (64 MiB) for one module"}},
		{"a source map that is a device", "export default function () {}\n//# sourceMappingURL=file:///dev/zero\n",
			[]string{"script.js:3:1", "/dev/zero: not a regular file but a device: a source map is read from a file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "script.js"), []byte(tt.script), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(filepath.Join(dir, "script.js"))
			if err == nil {
				t.Fatal("loaded")
			}
			if _, ok := errors.AsType[*ScriptError](err); !ok {
				t.Errorf("got error %v (%T), want a *ScriptError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
	lib := filepath.Join(dir, "lib.js")
	if err := os.WriteFile(lib, []byte("export const x = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.js"), []byte("import { x } from './lib.js';\nexport default function () {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "script.js")); err != nil {
		t.Errorf("a module within the bound: %v", err)
	}
}
