package js

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
)

// blockedHostError is a request to a name k6's blockHostnames option
// blocks; k6's error code 1111.
type blockedHostError struct{ host, pattern string }

func (e *blockedHostError) Error() string {
	return fmt.Sprintf("hostname (%s) is in a blocked pattern (%s)", e.host, e.pattern)
}

// blacklistedIPError is a connection to an address k6's blacklistIPs
// option forbids; k6's error code 1110.
type blacklistedIPError struct {
	ip  net.IP
	net *net.IPNet
}

func (e *blacklistedIPError) Error() string {
	return fmt.Sprintf("IP (%s) is in a blacklisted range (%s)", e.ip, e.net)
}

// k6's error codes of the two.
const (
	codeBlacklistedIP = 1110
	codeBlockedHost   = 1111
)

// dialGuard is k6's blockHostnames and blacklistIPs: names (exact, or
// "*" and a suffix, as hosts' keys) no request may go to, and ranges no
// connection may reach, whatever name led there. Read-only once made.
type dialGuard struct {
	names    map[string]bool
	suffixes []string // of "*" patterns, longest first
	nets     []*net.IPNet
}

// newDialGuard reads the two options; each error is an *HTTPOptionError
// naming the entry. Nil when both are empty.
func newDialGuard(names, cidrs []string) (*dialGuard, []error) {
	if len(names) == 0 && len(cidrs) == 0 {
		return nil, nil
	}
	g := &dialGuard{names: map[string]bool{}}
	var errs []error
	for i, n := range names {
		n = strings.ToLower(n)
		if strings.Contains(n, ":") || !hostPattern.MatchString(n) || n == "" {
			errs = append(errs, &HTTPOptionError{Option: fmt.Sprintf("blockHostnames[%d]", i),
				Msg: fmt.Sprintf(" %q: not a host name (a leading * matches any prefix, e.g. *.example.com)", n)})
			continue
		}
		if s, ok := strings.CutPrefix(n, "*"); ok {
			g.suffixes = append(g.suffixes, s)
			continue
		}
		g.names[n] = true
	}
	slices.SortFunc(g.suffixes, func(a, b string) int { return len(b) - len(a) })
	for i, c := range cidrs {
		_, ipnet, err := net.ParseCIDR(c)
		if err != nil {
			errs = append(errs, &HTTPOptionError{Option: fmt.Sprintf("blacklistIPs[%d]", i), Msg: fmt.Sprintf(" %q: want a CIDR range such as 10.0.0.0/8", c)})
			continue
		}
		g.nets = append(g.nets, ipnet)
	}
	return g, errs
}

// blocked is the pattern that blocks host ("" for none).
func (g *dialGuard) blocked(host string) string {
	host = strings.ToLower(host)
	if net.ParseIP(host) != nil {
		return ""
	}
	if g.names[host] {
		return host
	}
	for _, s := range g.suffixes {
		if strings.HasSuffix(host, s) {
			return "*" + s
		}
	}
	return ""
}

// forbidden is the error of a connection to ip under blacklistIPs (nil:
// allowed).
func (g *dialGuard) forbidden(ip net.IP) error {
	for _, n := range g.nets {
		if n.Contains(ip) {
			return &blacklistedIPError{ip: ip, net: n}
		}
	}
	return nil
}

// dialer wraps dial: a blocked name fails before any lookup, and d (the
// dialer under dial) refuses to connect to a forbidden address, whatever
// name or hosts entry resolved to it. hosts maps names between the two
// checks, as in k6. A nil guard leaves both as they are.
func (g *dialGuard) dialer(d *net.Dialer, hosts *hostsMap) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if g != nil && len(g.nets) > 0 {
		d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip != nil {
				return g.forbidden(ip)
			}
			return nil
		}
	}
	dial := hosts.dial(d.DialContext)
	if g == nil || (len(g.names) == 0 && len(g.suffixes) == 0) {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err == nil {
			if p := g.blocked(host); p != "" {
				return nil, &blockedHostError{host: host, pattern: p}
			}
		}
		return dial(ctx, network, addr)
	}
}

// resolver is the llm.Client's view of the two options and of hosts, for
// the load client's Resolve (which its event loop asks as well as
// net/http): a blocked name fails before any lookup, hosts maps the name,
// the system resolves what is still a name (IPv4 first, as Go's dialer
// for a loopback name), and an address in a blacklisted range is refused.
// Nil when none of the three is set: the client resolves as it always does.
func (g *dialGuard) resolver(hosts *hostsMap) func(ctx context.Context, hostport string) (netip.AddrPort, error) {
	if g == nil && hosts == nil {
		return nil
	}
	return func(ctx context.Context, hostport string) (netip.AddrPort, error) {
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			return netip.AddrPort{}, err
		}
		if g != nil {
			if p := g.blocked(host); p != "" {
				return netip.AddrPort{}, &blockedHostError{host: host, pattern: p}
			}
		}
		if hosts != nil {
			hostport = hosts.resolve(hostport)
		}
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			return netip.AddrPort{}, err
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("port %q: %w", port, err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			if ip, err = client.LookupIP(ctx, host); err != nil {
				return netip.AddrPort{}, err
			}
		}
		ip = ip.Unmap()
		if g != nil {
			if err := g.forbidden(ip.AsSlice()); err != nil {
				return netip.AddrPort{}, err
			}
		}
		return netip.AddrPortFrom(ip, uint16(p)), nil
	}
}
