package rest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTokenFileIsReadAgainAfterAMinute: a bearer token file (a projected
// service-account token, which the kubelet rotates) is read again once its
// last reading is a minute old, as client-go's; a file that disappears or
// is emptied between readings keeps the last token rather than fail.
func TestTokenFileIsReadAgainAfterAMinute(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	put := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := &tokenFile{path: path}
	step := func(want string) {
		t.Helper()
		if got, err := f.get(); err != nil || got != want {
			t.Fatalf("token %q, %v; want %q", got, err, want)
		}
	}
	age := func() { // the last reading a minute old, without waiting a minute
		f.mu.Lock()
		f.read = f.read.Add(-time.Minute - time.Second)
		f.mu.Unlock()
	}
	put("first\n")
	step("first")
	put("second\n")
	step("first") // read less than a minute ago
	age()
	step("second")
	put("\n")
	age()
	step("second")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	age()
	step("second")
	put("third")
	age()
	step("third")

	missing := &tokenFile{path: filepath.Join(t.TempDir(), "none")}
	if _, err := missing.get(); err == nil {
		t.Error("a token file that was never there: no error")
	}
	put("")
	if _, err := (&tokenFile{path: path}).get(); err == nil {
		t.Error("an empty token file, read first: no error")
	}
}
