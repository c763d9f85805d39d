package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/faults"
)

// Chain names inside an llmchaos table.
const (
	nftChainIngress = "ingress"
	nftChainEgress  = "egress"
)

// injectNFT records a KindNFTTable spec, then creates the plan's table,
// chains and rules in one nftables transaction (all or nothing).
func injectNFT(ctx context.Context, log faults.RevertLog, plan nftPlan) (faults.Undo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := plan.target.nsPath()
	ns, err := openTarget(plan.target)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	if plan.target.Interface != "" {
		if err := checkLink(ctx, ns, plan.target.Interface); err != nil {
			return nil, err
		}
	}
	name, err := newTableName(plan.fault)
	if err != nil {
		return nil, err
	}
	spec := nftTableSpec{Netns: path, NetnsID: ns.UniqueId(), Family: "inet", Table: name}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("revert spec: %w", err)
	}
	if err := log.Will(faults.RevertSpec{Kind: KindNFTTable, Data: data}); err != nil {
		return nil, fmt.Errorf("journal before creating table %s: %w", name, err)
	}

	conn, err := nftConn(ctx, ns)
	if err != nil {
		return nil, err
	}
	table := conn.CreateTable(&nftables.Table{Name: name, Family: nftables.TableFamilyINet})
	for _, r := range nftRules(conn, table, plan) {
		conn.AddRule(r)
	}
	if err := conn.Flush(); err != nil {
		err = fmt.Errorf("create table %s: %w", name, err)
		if errors.Is(err, unix.EEXIST) {
			return nil, err // the name is taken: the table is not ours to delete
		}
		// The transaction is atomic, but a timeout may hide a commit: make
		// sure nothing is left before reporting the failure.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return nil, errors.Join(err, deleteNFTTable(rctx, spec))
	}
	return kernelUndo(func(ctx context.Context) error { return deleteNFTTable(ctx, spec) }), nil
}

// checkLink fails with a clear message when ns has no interface called name.
func checkLink(ctx context.Context, ns netns.NsHandle, name string) error {
	h, err := netlinkAt(ctx, ns)
	if err != nil {
		return err
	}
	defer h.Close()
	_, err = linkByName(h, name)
	return err
}

// linkByName returns the interface called name, or an error that says how
// to list the namespace's interfaces when there is none.
func linkByName(h *netlink.Handle, name string) (netlink.Link, error) {
	link, err := h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("no interface %q in the namespace (see `ip -n NS link`)", name)
		}
		return nil, fmt.Errorf("interface %q: %w", name, err)
	}
	return link, nil
}

// nftConn opens an nftables connection into ns whose sockets give up at
// ctx's deadline.
func nftConn(ctx context.Context, ns netns.NsHandle) (*nftables.Conn, error) {
	dl := netlinkDeadline(ctx)
	conn, err := nftables.New(
		nftables.WithNetNSFd(int(ns)),
		nftables.WithSockOptions(func(c *mdnetlink.Conn) error { return c.SetDeadline(dl) }),
	)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return conn, nil
}

// nftRules adds the plan's chains to table and returns their rules.
func nftRules(conn *nftables.Conn, table *nftables.Table, plan nftPlan) []*nftables.Rule {
	accept := nftables.ChainPolicyAccept
	var rules []*nftables.Rule
	add := func(chainName string, hook *nftables.ChainHook, ingress bool) {
		chain := conn.AddChain(&nftables.Chain{
			Name:     chainName,
			Table:    table,
			Type:     nftables.ChainTypeFilter,
			Hooknum:  hook,
			Priority: nftables.ChainPriorityRaw, // before conntrack: dropped packets leave no state
			Policy:   &accept,
		})
		for _, match := range matchExprs(plan.target.Interface, plan.match, ingress) {
			rules = append(rules, &nftables.Rule{
				Table: table,
				Chain: chain,
				Exprs: append(match, dropExprs(plan.permyriad)...),
			})
		}
	}
	if plan.match.Direction != PacketEgress {
		add(nftChainIngress, nftables.ChainHookInput, true)
	}
	if plan.match.Direction != PacketIngress {
		add(nftChainEgress, nftables.ChainHookOutput, false)
	}
	return rules
}

// matchExprs returns one expression list per rule needed to match m on one
// side; a port filter needs two rules (to the port, and from it).
func matchExprs(iface string, m PacketMatch, ingress bool) [][]expr.Any {
	var base []expr.Any
	if iface != "" {
		key := expr.MetaKeyOIFNAME
		if ingress {
			key = expr.MetaKeyIIFNAME
		}
		base = append(base,
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifnameBytes(iface)},
		)
	} else {
		key := expr.MetaKeyOIFTYPE
		if ingress {
			key = expr.MetaKeyIIFTYPE
		}
		base = append(base,
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint16(unix.ARPHRD_LOOPBACK)},
		)
	}
	if m.Peer != "" {
		p, _ := parsePeer(m.Peer) // validated
		base = append(base, peerExprs(p, ingress)...)
	}
	if m.Protocol == "" {
		return [][]expr.Any{base}
	}
	proto := byte(unix.IPPROTO_TCP)
	if m.Protocol == "udp" {
		proto = unix.IPPROTO_UDP
	}
	base = append(base,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	)
	if m.Port == 0 {
		return [][]expr.Any{base}
	}
	port := binaryutil.BigEndian.PutUint16(uint16(m.Port))
	const sport, dport = 0, 2
	load := func(off uint32) expr.Any {
		return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: off, Len: 2}
	}
	toPort := append(append([]expr.Any{}, base...),
		load(dport), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port})
	// From the port, unless also to it (the first rule had its chance).
	fromPort := append(append([]expr.Any{}, base...),
		load(dport), &expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: port},
		load(sport), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port})
	return [][]expr.Any{toPort, fromPort}
}

// peerExprs matches the other side's address: the source of an ingress
// packet, the destination of an egress one.
func peerExprs(p netip.Prefix, ingress bool) []expr.Any {
	a := p.Addr()
	nfproto, off := byte(unix.NFPROTO_IPV4), uint32(16) // daddr
	if ingress {
		off = 12 // saddr
	}
	if a.Is6() {
		nfproto, off = unix.NFPROTO_IPV6, 24
		if ingress {
			off = 8
		}
	}
	n := uint32(a.BitLen() / 8)
	es := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
	}
	if p.Bits() < a.BitLen() {
		mask := make([]byte, n)
		for i := 0; i < p.Bits(); i++ {
			mask[i/8] |= 0x80 >> (i % 8)
		}
		es = append(es, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)})
	}
	return append(es, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()})
}

// dropExprs drops permyriad/10000 of the packets that reach it, counting
// the drops.
func dropExprs(permyriad uint32) []expr.Any {
	var es []expr.Any
	if permyriad < 10000 {
		es = append(es,
			&expr.Numgen{Register: 1, Modulus: 10000, Type: unix.NFT_NG_RANDOM},
			// cmp compares bytes; make the number big-endian so that "<" is numeric.
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binaryutil.BigEndian.PutUint32(permyriad)},
		)
	}
	return append(es, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})
}

// ifnameBytes is name as the kernel's IFNAMSIZ buffer holds it.
func ifnameBytes(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

// deleteNFTTable deletes the table spec names; a table or namespace that is
// gone counts as deleted.
func deleteNFTTable(ctx context.Context, spec nftTableSpec) error {
	if err := spec.validate(); err != nil {
		return fmt.Errorf("%s spec: %w", KindNFTTable, err)
	}
	return withNetns(ctx, spec.Netns, spec.NetnsID, func(ns netns.NsHandle) error { return deleteNFTTableIn(ctx, ns, spec) })
}

// deleteNFTTableIn deletes the table spec names in ns.
func deleteNFTTableIn(ctx context.Context, ns netns.NsHandle, spec nftTableSpec) error {
	conn, err := nftConn(ctx, ns)
	if err != nil {
		return err
	}
	conn.DelTable(&nftables.Table{Name: spec.Table, Family: nftables.TableFamilyINet})
	if err := conn.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("delete nftables table %s in %q: %w", spec.Table, spec.Netns, err)
	}
	return nil
}

// revertNFTTable is the Reverter of KindNFTTable.
func revertNFTTable(ctx context.Context, data json.RawMessage) error {
	var spec nftTableSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("%s spec: %w", KindNFTTable, err)
	}
	return deleteNFTTable(ctx, spec)
}

// nftDrops sums the drop counters of the table spec names (tests and
// reports: how many packets the fault dropped so far).
func nftDrops(ctx context.Context, spec nftTableSpec) (uint64, error) {
	ns, err := openNetns(spec.Netns, spec.NetnsID)
	if err != nil {
		return 0, err
	}
	defer ns.Close()
	conn, err := nftConn(ctx, ns)
	if err != nil {
		return 0, err
	}
	table := &nftables.Table{Name: spec.Table, Family: nftables.TableFamilyINet}
	var n uint64
	for _, c := range []string{nftChainIngress, nftChainEgress} {
		rules, err := conn.GetRules(table, &nftables.Chain{Name: c, Table: table})
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("rules of %s/%s: %w", spec.Table, c, err)
		}
		for _, r := range rules {
			for _, e := range r.Exprs {
				if c, ok := e.(*expr.Counter); ok {
					n += c.Packets
				}
			}
		}
	}
	return n, nil
}
