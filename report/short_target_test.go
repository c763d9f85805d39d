package report

import "testing"

// A fault's target as the terminal shows it: each proxy by its name, and
// the proxies of numbered endpoints named once.
func TestShortTarget(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"proxy endpoint-0 127.0.0.1:46305 → 127.0.0.1:42327", "proxy endpoint-0"},
		{"proxy endpoint-0 127.0.0.1:1 → 127.0.0.1:2 proxy endpoint-1 127.0.0.1:3 → 127.0.0.1:4 proxy endpoint-2 127.0.0.1:5 → 127.0.0.1:6", "proxies endpoint-0..2"},
		{"proxy endpoint-0 proxy endpoint-2", "proxies endpoint-0,2"},
		{"proxy endpoint-0 proxy other-1", "proxy endpoint-0 proxy other-1"},
		{"container llm-0", "container llm-0"},
	} {
		if got := ShortTarget(c.in); got != c.want {
			t.Errorf("ShortTarget(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
