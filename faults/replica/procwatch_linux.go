//go:build linux

package replica

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// healthProbeTimeout bounds one health request to a process that was
// started again (a frozen or still loading server may not answer).
const healthProbeTimeout = time.Second

// watchProcs reports what the processes of a pid file or a command-line
// pattern do: a replica's exit, a new process (start; one that takes the
// place of a process that exited is the same replica and says which pid it
// replaces), its first answer below 500 to GET /health on a port it
// listens on (healthy), and SIGSTOP and SIGCONT (pause, unpause).
func (d *Process) watchProcs(ctx context.Context, ready func(), emit func(Event)) error {
	var tr *procTracker
	look := func() ([]procSeen, error) {
		ts, err := d.Targets(ctx)
		if err != nil {
			return nil, err
		}
		seen := make([]procSeen, 0, len(ts))
		for _, t := range ts {
			if t.StartTime == 0 {
				continue // gone
			}
			info, ok, err := readProc(t.PID)
			if err != nil || !ok || info.start != t.StartTime || !info.alive() {
				continue // exited while we looked
			}
			p := procSeen{PID: t.PID, Start: t.StartTime, PPID: info.ppid, Stopped: info.stopped()}
			if tr == nil || tr.wantsPorts(p.PID, p.Start) {
				p.Ports = listenPorts(listenAddrs(p.PID))
			}
			seen = append(seen, p)
		}
		return seen, nil
	}
	first, err := look()
	if err != nil {
		return fmt.Errorf("watch replicas: %w", err)
	}
	tr = newProcTracker(first)
	if ready != nil {
		ready()
	}
	type answer struct {
		p    procProbe
		port int
		ok   bool
		at   time.Time
	}
	answers := make(chan answer)
	inFlight := map[string]bool{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Timeout: healthProbeTimeout}
	tick := time.NewTicker(WatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case a := <-answers:
			delete(inFlight, a.p.key())
			if a.ok {
				if e, ok := tr.healthy(a.p.id, a.p.pid, a.p.start, a.port, a.at); ok {
					emit(e)
				}
			}
			continue
		case <-tick.C:
		}
		cur, err := look()
		if err != nil {
			continue // a pid file being rewritten; the next look reads it
		}
		for _, e := range tr.update(cur, time.Now()) {
			emit(e)
		}
		for _, p := range tr.probes() {
			if len(p.ports) == 0 || inFlight[p.key()] {
				continue
			}
			inFlight[p.key()] = true
			go func() {
				port, ok := probeHealth(ctx, client, p.pid)
				select {
				case answers <- answer{p: p, port: port, ok: ok, at: time.Now()}:
				case <-ctx.Done():
				}
			}()
		}
	}
}

// probeHealth asks each address process pid listens on for GET /health; it
// returns the first port that answers with a status below 500 (a server
// that loads its model answers 503; one without /health, 404).
func probeHealth(ctx context.Context, client *http.Client, pid int) (int, bool) {
	for _, a := range listenAddrs(pid) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.String()+"/health", nil)
		if err != nil {
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode < 500 {
			return a.Port, true
		}
	}
	return 0, false
}

// listenPorts returns the distinct ports of addrs, sorted.
func listenPorts(addrs []*net.TCPAddr) []int {
	var ports []int
	for _, a := range addrs {
		if !slices.Contains(ports, a.Port) {
			ports = append(ports, a.Port)
		}
	}
	slices.Sort(ports)
	return ports
}

// listenAddrs returns the TCP addresses process pid listens on, in its
// network namespace, with a wildcard address as the loopback address it
// answers on; none when they cannot be read (another user's process).
func listenAddrs(pid int) []*net.TCPAddr {
	dir := "/proc/" + strconv.Itoa(pid)
	ents, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(dir + "/fd/" + e.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	var out []*net.TCPAddr
	for _, f := range []string{"tcp", "tcp6"} {
		out = append(out, readListeners(dir+"/net/"+f, inodes)...)
	}
	return out
}

// readListeners parses a /proc/net/tcp or tcp6 table for the listening
// sockets (state 0A) whose inodes are in inodes.
func readListeners(path string, inodes map[string]bool) []*net.TCPAddr {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []*net.TCPAddr
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
			continue
		}
		if a := parseProcAddr(fs[1]); a != nil {
			out = append(out, a)
		}
	}
	return out
}

// parseProcAddr parses a local_address of /proc/net/tcp{,6}: the address
// in hex, as 32-bit words in host (little-endian) order, a colon, the port
// in hex. A wildcard address becomes the loopback address.
func parseProcAddr(s string) *net.TCPAddr {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	ip := net.IP(b)
	switch {
	case ip.IsUnspecified() && len(b) == 4:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return &net.TCPAddr{IP: ip, Port: int(port)}
}
