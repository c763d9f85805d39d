package network

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// cuttingControl listens on a unix socket like a proxy's control socket
// and closes the first cuts connections as soon as a request arrives,
// without answering (a proxy that dies while it answers); later requests
// get a 204 while answer is true, and the listener closes instead when it
// is false (the proxy gone).
func cuttingControl(t *testing.T, cuts int, answer bool) (path string, seen *atomic.Int32) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "control.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	seen = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := seen.Add(1)
			buf := make([]byte, 4096)
			_, _ = c.Read(buf) // the request
			switch {
			case int(n) <= cuts:
				if uc, ok := c.(*net.UnixConn); ok {
					_ = uc.CloseWrite()
				}
				c.Close()
				if int(n) == cuts && !answer {
					ln.Close() // gone: the next dial is refused
					return
				}
			default:
				_, _ = c.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
				c.Close()
			}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return path, seen
}

func toxicSpecData(t *testing.T, control string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(toxicRevert{Control: control, Toxic: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRevertToxicProxyCutThenGone: a proxy that cuts the revert request
// and is gone right after took its toxic with it: reverted, no error.
func TestRevertToxicProxyCutThenGone(t *testing.T) {
	path, seen := cuttingControl(t, 1, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := RevertToxic(ctx, toxicSpecData(t, path)); err != nil {
		t.Fatalf("revert after the proxy cut the request and went away: %v", err)
	}
	if n := seen.Load(); n != 1 {
		t.Errorf("control requests %d, want 1", n)
	}
}

// TestRevertToxicProxyCutThenAnswers: a proxy that cut one request and
// still lives is asked again and removes the toxic.
func TestRevertToxicProxyCutThenAnswers(t *testing.T) {
	path, seen := cuttingControl(t, 2, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := RevertToxic(ctx, toxicSpecData(t, path)); err != nil {
		t.Fatalf("revert: %v", err)
	}
	if n := seen.Load(); n != 3 {
		t.Errorf("control requests %d, want 3 (two cut, one answered)", n)
	}
}

// TestRevertToxicProxyAlwaysCuts: a proxy that lives but never answers is
// a failed revert after a bounded number of tries, not a success.
func TestRevertToxicProxyAlwaysCuts(t *testing.T) {
	path, seen := cuttingControl(t, 1<<30, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := RevertToxic(ctx, toxicSpecData(t, path)); err == nil {
		t.Fatal("revert against a proxy that never answers reported success")
	}
	if n := seen.Load(); n != cutRetries {
		t.Errorf("control requests %d, want %d", n, cutRetries)
	}
}
