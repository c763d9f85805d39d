package network

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/faults"
)

// TestToxicActedCounts: a proxy counts, per L7 toxic, the requests it
// acted on (the answers an http.error made, the streams a stream.cut cut),
// and still says so once the toxic is removed; in this process and in a
// proxy child, through its control socket.
func TestToxicActedCounts(t *testing.T) {
	srv := sseUpstream(t, nil)
	upstream := strings.TrimPrefix(srv.URL, "http://")
	inProcess := startProxy(t, upstream, ModeHTTP)
	ctx := context.Background()
	child, err := StartProxyProcess(ctx, faults.NopLog{}, ProcessConfig{
		Proxy:   Config{Upstream: upstream, Mode: ModeHTTP},
		Control: filepath.Join(t.TempDir(), "p.sock"),
	}, ProcessOptions{Command: helperCommand(), Env: helperEnv(), Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Stop(ctx) })
	for _, tc := range []struct {
		name string
		px   interface {
			Toxics
			Addr() string
		}
	}{{"in process", inProcess}, {"child", child}} {
		t.Run(tc.name, func(t *testing.T) {
			errs, err := NewToxic("errs", tc.px, &HTTPErrorParams{RequestMatch: RequestMatch{Path: "/v1/models"}}, 1)
			if err != nil {
				t.Fatal(err)
			}
			cut, err := NewToxic("cut", tc.px, &CutParams{RequestMatch: RequestMatch{Path: "/v1/chat/"}, AfterTokens: 1}, 1)
			if err != nil {
				t.Fatal(err)
			}
			var undos []faults.Undo
			for _, f := range []*ToxicFault{errs, cut} {
				u, err := f.Inject(ctx, faults.NopLog{})
				if err != nil {
					t.Fatal(err)
				}
				undos = append(undos, u)
			}
			c := httpClient(t)
			base := "http://" + tc.px.Addr()
			for range 3 {
				resp, err := c.Get(base + "/v1/models")
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(FaultHeader) != "errs" {
					t.Fatalf("answer %d with %s %q, want 503 made by errs", resp.StatusCode, FaultHeader, resp.Header.Get(FaultHeader))
				}
			}
			for range 2 {
				if _, _, _, err := stream(t, c, base, 5); err == nil {
					t.Fatal("a stream through stream.cut ended whole")
				}
			}
			for _, u := range undos {
				if err := u(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for f, want := range map[*ToxicFault]int64{errs: 3, cut: 2} {
				if got, err := f.Acted(ctx); err != nil || got != want {
					t.Errorf("%s acted on %d requests (%v) once removed, want %d", f.Spec().Name, got, err, want)
				}
			}
		})
	}
}
