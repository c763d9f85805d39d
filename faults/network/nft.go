package network

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
)

// PacketDirection says which packets of the target a packet fault acts on,
// seen from inside the target's namespace.
type PacketDirection string

// The packet directions. The zero value means PacketBoth.
const (
	// PacketIngress acts on packets delivered to the namespace (the input hook).
	PacketIngress PacketDirection = "ingress"
	// PacketEgress acts on packets sent by the namespace (the output hook).
	PacketEgress PacketDirection = "egress"
	// PacketBoth acts on both.
	PacketBoth PacketDirection = "both"
)

// PacketMatch narrows a packet fault (loss, partition) to some of the
// target's packets. The zero value matches every packet in both directions.
type PacketMatch struct {
	// Direction is ingress, egress or both (the default).
	Direction PacketDirection `json:"direction,omitempty" doc:"ingress, egress or both" default:"both"`
	// Protocol is tcp or udp; empty matches every protocol.
	Protocol string `json:"protocol,omitempty" doc:"tcp or udp (empty: every protocol)"`
	// Port matches packets from or to this port; it needs Protocol.
	Port int `json:"port,omitempty" doc:"match packets from or to this port (needs protocol)"`
	// Peer is an address or a CIDR prefix of the other side: the source of
	// ingress packets and the destination of egress packets.
	Peer string `json:"peer,omitempty" doc:"address or CIDR prefix of the other side"`
}

// withDefaults returns m with its defaults filled in.
func (m PacketMatch) withDefaults() PacketMatch {
	if m.Direction == "" {
		m.Direction = PacketBoth
	}
	return m
}

// problems lists what is wrong with m (after defaults).
func (m PacketMatch) problems() field.Problems {
	var ps field.Problems
	switch m.Direction {
	case PacketIngress, PacketEgress, PacketBoth:
	default:
		ps.AddNamed("direction", ": %q is not one of ingress, egress, both", m.Direction)
	}
	switch m.Protocol {
	case "", "tcp", "udp":
	default:
		ps.AddNamed("protocol", ": %q is not one of tcp, udp (or leave it empty for all)", m.Protocol)
	}
	if m.Port < 0 || m.Port > 65535 {
		ps.AddNamed("port", ": %d is outside 1..65535", m.Port)
	} else if m.Port != 0 && m.Protocol == "" {
		ps.AddNamed("port", ": needs protocol (tcp or udp)")
	}
	if m.Peer != "" {
		if _, err := parsePeer(m.Peer); err != nil {
			ps.AddNamed("peer", ": %w", err)
		}
	}
	return ps
}

// rootScopeProblems refuses an unbounded packet fault in llmchaos's own
// namespace: dropping every packet of the host would cut off the operator
// (and llmchaos's own load) too.
func rootScopeProblems(t NetnsTarget, m PacketMatch) field.Problems {
	if t.Netns == "" && t.AllowRootNamespace && t.Interface == "" && m.Peer == "" {
		return field.Problems{field.Errorf("", "%s, %s: in llmchaos's own namespace name an interface or a peer; "+
			"a fault on every packet of the host would cut off the operator too", field.Path("interface"), field.Path("peer"))}
	}
	return nil
}

// parsePeer reads an address or a CIDR prefix, masked to its prefix length.
func parsePeer(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an address or CIDR prefix: %w", s, err)
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q: zones are not supported", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or CIDR prefix: %w", s, err)
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q: zones are not supported", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// nftTablePrefix starts the name of every nftables table llmchaos owns; the
// reverter refuses to delete any other table.
const nftTablePrefix = "llmchaos_"

// nftTableSpec is the RevertSpec data of KindNFTTable.
type nftTableSpec struct {
	// Netns is the namespace file ("" for the namespace recover runs in).
	Netns string `json:"netns"`
	// NetnsID identifies the namespace ("dev:inode") so that a namespace
	// deleted and recreated under the same name is not mistaken for it.
	NetnsID string `json:"netns_id,omitempty"`
	// Family is the table's family; always "inet" today.
	Family string `json:"family"`
	// Table is the table's name; it starts with nftTablePrefix.
	Table string `json:"table"`
}

// validate checks that s names a table llmchaos owns.
func (s nftTableSpec) validate() error {
	var errs []error
	if !strings.HasPrefix(s.Table, nftTablePrefix) {
		errs = append(errs, fmt.Errorf("table %q does not start with %q: llmchaos deletes only its own tables", s.Table, nftTablePrefix))
	}
	if s.Family != "inet" {
		errs = append(errs, fmt.Errorf("family %q: llmchaos creates inet tables only", s.Family))
	}
	if s.Netns != "" && !strings.HasPrefix(s.Netns, "/") {
		errs = append(errs, fmt.Errorf("netns %q is not an absolute path", s.Netns))
	}
	return errors.Join(errs...)
}

// newTableName returns a fresh table name owned by llmchaos:
// llmchaos_<fault name>_<random>. The random part comes from crypto/rand: it
// is an identity, not a statistic, so it must differ between runs that share
// a seed.
func newTableName(fault string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("table name: %w", err)
	}
	return nftTablePrefix + tableNamePart(fault, 32) + "_" + hex.EncodeToString(b[:]), nil
}

// tableNamePart keeps letters, digits and underscores of s (others become
// '_'), at most max bytes; "fault" when nothing is left.
func tableNamePart(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "fault"
	}
	return b.String()
}

// nftPlan is what a packet fault asks of nftables.
type nftPlan struct {
	fault  string
	target NetnsTarget
	match  PacketMatch // defaults applied
	// permyriad is the share of matching packets dropped, in 1/10000;
	// 10000 drops all of them.
	permyriad uint32
}
