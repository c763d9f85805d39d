package benchserver

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// TestFloorCountsEveryEvent checks the floor client against the handler:
// every request's data events (role, tokens, finish, usage, [DONE]) are
// counted once, over reused connections, whether the events come in one
// write or split across reads.
func TestFloorCountsEveryEvent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the floor client uses epoll (Linux only)")
	}
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, c := range []struct {
		name   string
		header http.Header
	}{
		{"unpaced", nil},
		{"paced", http.Header{"X-Bench-ITL": {"1ms"}}},
		{"stepped", http.Header{"X-Bench-ITL": {"1ms"}, StepHeader: {"1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const streams, perReq, requests = 3, 20, 10
			events, err := Floor(srv.URL+"/v1", c.header, streams, perReq, requests)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(requests * (perReq + 4)); events != want {
				t.Fatalf("counted %d data events, want %d", events, want)
			}
		})
	}
}
