package network

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// segsIn returns how many TCP segments c has received (tcpi_segs_in).
func segsIn(c net.Conn) (uint32, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return 0, err
	}
	if ierr != nil {
		return 0, ierr
	}
	return info.Segs_in, nil
}

// TestHTTPRequestGoesUpstreamInOneWrite: a request whose head and body
// reach the proxy together, and two pipelined requests that do (whether
// the proxy rewrites their Host or not), reach the upstream whole and in
// one TCP segment, as they would without the proxy: the HTTP
// layer rewrites the Host header, and writing the head and the body apart
// made the upstream wake twice for one request (a wake-up is about 0.2 ms
// on a 2-core VM; in five benchmark runs each way the idle proxy's p99
// TTFT less the server's wait, over a bare relay's, was +1.45 ms before
// and +0.28 ms after, docs/performance.md). The upstream counts the segments it
// received (tcpi_segs_in) from before the requests were sent until all of
// their bytes arrived.
func TestHTTPRequestGoesUpstreamInOneWrite(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}],"stream":true}`
	// Request i names its number in its path, so that a head overwritten
	// by the next one before it went upstream shows.
	req := func(host string, i int) string {
		return fmt.Sprintf("POST /v1/chat/completions?n=%d HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\n\r\n%s", i, host, len(body), body)
	}
	for _, tc := range []struct {
		n int
		// upstreamHost: the requests name the upstream already, so the
		// proxy passes their heads on as they came.
		upstreamHost bool
	}{{1, false}, {2, false}, {2, true}} {
		n := tc.n
		t.Run(fmt.Sprintf("%d requests, Host the upstream's %v", n, tc.upstreamHost), func(t *testing.T) {
			t.Parallel()
			type got struct {
				segs uint32
				reqs []string
				err  error
			}
			ready, result := make(chan struct{}), make(chan got, 1)
			up := startTCPServer(t, func(c net.Conn) {
				var g got
				before, err := segsIn(c)
				close(ready)
				if err != nil {
					result <- got{err: err}
					return
				}
				br := bufio.NewReader(c)
				for range n {
					r, err := http.ReadRequest(br)
					if err != nil {
						g.err = err
						break
					}
					b, err := io.ReadAll(r.Body)
					if err != nil {
						g.err = err
						break
					}
					g.reqs = append(g.reqs, r.Host+" "+r.URL.RequestURI()+" "+string(b))
				}
				after, err := segsIn(c)
				g.segs = after - before
				if g.err == nil {
					g.err = err
				}
				result <- g
				for range n {
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
				_, _ = io.Copy(io.Discard, c)
			})
			p := startProxy(t, up.addr(), ModeHTTP)
			c := dial(t, p.Addr())
			<-ready
			host := p.Addr()
			if tc.upstreamHost {
				host = up.addr()
			}
			var all strings.Builder
			for i := range n {
				all.WriteString(req(host, i))
			}
			if _, err := io.WriteString(c, all.String()); err != nil {
				t.Fatal(err)
			}
			g := <-result
			if g.err != nil {
				t.Fatalf("upstream: %v", g.err)
			}
			for i, r := range g.reqs {
				if want := fmt.Sprintf("%s /v1/chat/completions?n=%d %s", up.addr(), i, body); r != want {
					t.Errorf("request %d reached the upstream as %q, want %q", i, r, want)
				}
			}
			if g.segs != 1 {
				t.Errorf("%d request(s) sent in one write reached the upstream in %d segments, want 1", n, g.segs)
			}
			br := bufio.NewReader(c)
			for i := range n {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("response %d: %v", i, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
