package benchserver

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Floor is the cheapest client that can read the bench server's streams:
// one epoll set of non-blocking sockets, waited on through Go's netpoller
// as the event loop waits (a thread blocked in epoll_wait would have the
// runtime's monitor wake up to hand its P off), one non-blocking
// epoll_wait and one read per ready socket per wake-up into one buffer, no
// HTTP or SSE parsing (it
// only counts "data: " events and finds the chunked body's end) and no
// timestamps or results. What it costs per token is what the kernel costs
// (system call entry, TCP receive and the ACK it sends, on this machine's
// loopback), the floor under any client's figure on the same traffic.
//
// It sends requests requests of perReq tokens over streams keep-alive
// connections to base (a URL as Start returns), with header added to each,
// and returns the data events read (content chunks plus the role, finish
// and usage events).
func Floor(base string, header http.Header, streams, perReq, requests int) (int64, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, err
	}
	addr, err := net.ResolveTCPAddr("tcp", u.Host)
	if err != nil {
		return 0, err
	}
	body := fmt.Sprintf(`{"model":"bench-model","messages":[{"role":"user","content":"go"}],"max_tokens":%d,"stream":true,"ignore_eos":true}`, perReq)
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", u.Path, u.Host, len(body))
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	req := []byte(head.String() + "\r\n" + body)

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, err
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return 0, err
	}
	epf := os.NewFile(uintptr(ep), "epoll") // non-blocking: the netpoller waits on it
	defer epf.Close()
	rc, err := epf.SyscallConn()
	if err != nil {
		return 0, err
	}
	sa := &unix.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	type conn struct {
		fd   int
		tail []byte // the last bytes read, to find markers split across reads
	}
	conns := map[int]*conn{}
	defer func() {
		for fd := range conns {
			unix.Close(fd)
		}
	}()
	sent := 0
	send := func(c *conn) error {
		sent++
		c.tail = c.tail[:0]
		_, err := unix.Write(c.fd, req) // small: the socket's buffer takes it
		return err
	}
	for range min(streams, requests) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		if err := unix.Connect(fd, sa); err != nil {
			unix.Close(fd)
			return 0, err
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return 0, err
		}
		c := &conn{fd: fd, tail: make([]byte, 0, 16)}
		conns[fd] = c
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return 0, err
		}
		if err := send(c); err != nil {
			return 0, err
		}
	}
	var events int64
	done := 0
	buf := make([]byte, 64<<10)
	var scratch [32]byte
	evs := make([]unix.EpollEvent, 256)
	dataMark, endMark := []byte("data: "), []byte("\r\n0\r\n\r\n")
	for done < requests {
		var n int
		var werr error
		if err := rc.Read(func(fd uintptr) bool {
			n, werr = unix.EpollWait(int(fd), evs, 0)
			return n != 0 || (werr != nil && werr != unix.EINTR)
		}); err != nil {
			return events, err
		}
		if werr != nil {
			return events, werr
		}
		for _, ev := range evs[:n] {
			c := conns[int(ev.Fd)]
			m, err := unix.Read(c.fd, buf)
			if err == unix.EAGAIN {
				continue
			}
			if err != nil || m == 0 {
				return events, fmt.Errorf("stream %d of %d ended early: %v", done+1, requests, err)
			}
			// Markers may straddle two reads: scan the previous read's
			// last bytes joined to this one's first ones.
			head := buf[:min(m, 16)]
			joint := append(append(scratch[:0], c.tail...), head...)
			straddling := bytes.Count(joint, dataMark) - bytes.Count(c.tail, dataMark) - bytes.Count(head, dataMark)
			events += int64(bytes.Count(buf[:m], dataMark) + straddling)
			ended := bytes.Contains(buf[:m], endMark) || bytes.Contains(joint, endMark)
			c.tail = append(c.tail[:0], buf[max(0, m-16):m]...)
			if !ended {
				continue
			}
			done++
			if sent < requests {
				if err := send(c); err != nil {
					return events, err
				}
			}
		}
	}
	return events, nil
}
