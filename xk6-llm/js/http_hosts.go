package js

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// hostsMap is k6's hosts option: names (or name:port) whose connections
// go to a given IP (or IP:port) instead of what DNS says. A name may start
// with "*" to match every name that ends with the rest ("*.example.com":
// a.example.com and a.b.example.com, not example.com), as k6's does; an
// exact name wins over a pattern, a longer pattern over a shorter one.
// Read-only once made.
type hostsMap struct {
	exact    map[string]hostsTarget
	patterns []hostsPattern // longest suffix first
}

type hostsPattern struct {
	suffix string
	to     hostsTarget
}

// hostsTarget is where a name's connections go; port 0 keeps the
// request's port.
type hostsTarget struct {
	ip   net.IP
	port int
}

// hostPattern is what k6 takes as a hosts key: an optional leading "*"
// or "*.", a domain name, an optional port.
var hostPattern = regexp.MustCompile(`^(\*\.?)?((([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9]))?(:[0-9]{1,5})?$`)

// newHostsMap reads the hosts option; each error is an *HTTPOptionError
// naming the entry (hosts["a.test"]).
func newHostsMap(src map[string]string) (*hostsMap, []error) {
	if len(src) == 0 {
		return nil, nil
	}
	h := &hostsMap{exact: map[string]hostsTarget{}}
	var errs []error
	for k, v := range src {
		opt := fmt.Sprintf("hosts[%q]", k)
		name := strings.ToLower(k)
		if !hostPattern.MatchString(name) {
			errs = append(errs, &HTTPOptionError{Option: opt, Msg: ": not a host name or host:port (a leading * matches any prefix, e.g. *.example.com)"})
			continue
		}
		to, err := parseHostsTarget(v)
		if err != nil {
			errs = append(errs, &HTTPOptionError{Option: opt, Msg: fmt.Sprintf(" %q: %v", v, err)})
			continue
		}
		if suffix, ok := strings.CutPrefix(name, "*"); ok {
			h.patterns = append(h.patterns, hostsPattern{suffix: suffix, to: to})
			continue
		}
		h.exact[name] = to
	}
	// Longest first: the most specific pattern wins, as in k6's trie.
	for i := 1; i < len(h.patterns); i++ {
		for j := i; j > 0 && len(h.patterns[j].suffix) > len(h.patterns[j-1].suffix); j-- {
			h.patterns[j], h.patterns[j-1] = h.patterns[j-1], h.patterns[j]
		}
	}
	return h, errs
}

// parseHostsTarget reads "IP" or "IP:port" ("[v6]:port").
func parseHostsTarget(v string) (hostsTarget, error) {
	if ip := net.ParseIP(v); ip != nil {
		return hostsTarget{ip: ip}, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return hostsTarget{}, fmt.Errorf("want an IP address or IP:port")
	}
	ip := net.ParseIP(host)
	p, perr := strconv.Atoi(port)
	if ip == nil || perr != nil || p < 1 || p > 65535 {
		return hostsTarget{}, fmt.Errorf("want an IP address or IP:port (port 1 to 65535)")
	}
	return hostsTarget{ip: ip, port: p}, nil
}

// match is where a connection to s (a name or name:port) goes.
func (h *hostsMap) match(s string) (hostsTarget, bool) {
	if to, ok := h.exact[s]; ok {
		return to, true
	}
	for _, p := range h.patterns {
		if strings.HasSuffix(s, p.suffix) {
			return p.to, true
		}
	}
	return hostsTarget{}, false
}

// resolve is the address to dial for addr (host:port): the entry of
// host:port, else of host (with addr's port unless the entry gives one),
// else addr itself.
func (h *hostsMap) resolve(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	host = strings.ToLower(host)
	to, ok := h.match(net.JoinHostPort(host, port))
	if !ok {
		if to, ok = h.match(host); !ok {
			return addr
		}
	}
	if to.port != 0 {
		port = strconv.Itoa(to.port)
	}
	return net.JoinHostPort(to.ip.String(), port)
}

// dial wraps a dialer so that the hosts option overrides DNS (nil h:
// dial as it is).
func (h *hostsMap) dial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if h == nil {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, h.resolve(addr))
	}
}
