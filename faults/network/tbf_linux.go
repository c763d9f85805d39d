package network

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/faults"
)

// injectQdisc records a KindTCQdisc spec, then adds plan (a qdiscTBF or a
// qdiscNetem) at the root of target's interface under a fresh handle.
func injectQdisc(ctx context.Context, log faults.RevertLog, target NetnsTarget, plan any) (faults.Undo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := target.nsPath()
	ns, err := openTarget(target)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	h, err := netlinkAt(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	link, err := linkByName(h, target.Interface)
	if err != nil {
		return nil, err
	}
	if q, err := rootQdisc(h, link); err != nil {
		return nil, err
	} else if q != nil && q.Attrs().Handle != 0 {
		// Handle 0 is the kernel's default qdisc, which it restores itself
		// when ours goes; any other was put there by someone, and deleting
		// ours later could not give it back.
		return nil, fmt.Errorf("interface %q already has a root qdisc %s %s that llmchaos did not add; "+
			"refusing to replace it", target.Interface, q.Type(), handleString(q.Attrs().Handle))
	}
	major, err := newQdiscMajor()
	if err != nil {
		return nil, err
	}
	attrs := netlink.QdiscAttrs{
		LinkIndex: link.Attrs().Index,
		Handle:    netlink.MakeHandle(major, 0),
		Parent:    netlink.HANDLE_ROOT,
	}
	spec := qdiscSpec{Netns: path, NetnsID: ns.UniqueId(), Link: target.Interface, Handle: attrs.Handle}
	var qd netlink.Qdisc
	switch p := plan.(type) {
	case qdiscTBF:
		// tbf drops a packet larger than its bucket (it only splits GSO
		// packets): a burst below one frame would be a black hole.
		if frame := link.Attrs().MTU + ethHeaderLen; int(p.burst) < frame {
			return nil, fmt.Errorf("burst_bytes %d is below one frame on %q (MTU %d + %d bytes of header): "+
				"tbf would drop every full-size packet; use at least %d", p.burst, target.Interface, link.Attrs().MTU, ethHeaderLen, frame)
		}
		spec.QdiscKind, spec.Rate, spec.Limit = "tbf", p.rate, p.limit
		qd = &netlink.Tbf{QdiscAttrs: attrs, Rate: p.rate, Limit: p.limit, Buffer: netlink.Xmittime(p.rate, p.burst)}
	case qdiscNetem:
		n := netlink.NewNetem(attrs, netlink.NetemQdiscAttrs{Latency: p.latencyUs, Jitter: p.jitterUs, Limit: p.limit})
		spec.QdiscKind, spec.Limit = "netem", n.Limit
		qd = n
	default:
		return nil, fmt.Errorf("qdisc plan %T", plan)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("revert spec: %w", err)
	}
	if err := log.Will(faults.RevertSpec{Kind: KindTCQdisc, Data: data}); err != nil {
		return nil, fmt.Errorf("journal before adding qdisc: %w", err)
	}
	if err := h.QdiscAdd(qd); err != nil {
		if spec.QdiscKind == "netem" && errors.Is(err, unix.ENOENT) {
			// The kernel answers "Specified qdisc kind is unknown" with ENOENT
			// after it failed to load sch_netem.
			return nil, fmt.Errorf("%w (%v)", ErrNoNetem, err)
		}
		err = fmt.Errorf("add %s qdisc %s on %q: %w", spec.QdiscKind, handleString(spec.Handle), target.Interface, err)
		if errors.Is(err, unix.EEXIST) {
			return nil, err // someone else's qdisc got there first: not ours to delete
		}
		// A timed-out request may still have been applied: make sure.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return nil, errors.Join(err, deleteQdisc(rctx, spec))
	}
	return kernelUndo(func(ctx context.Context) error { return deleteQdisc(ctx, spec) }), nil
}

// ethHeaderLen is the Ethernet header tbf counts on top of the MTU.
const ethHeaderLen = 14

// netlinkAt opens a rtnetlink handle into ns whose sockets give up at ctx's
// deadline.
func netlinkAt(ctx context.Context, ns netns.NsHandle) (*netlink.Handle, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink in namespace: %w", err)
	}
	to := time.Until(netlinkDeadline(ctx))
	if to < time.Millisecond {
		to = time.Millisecond
	}
	if err := h.SetSocketTimeout(to); err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink timeout: %w", err)
	}
	return h, nil
}

// rootQdisc returns the qdisc at link's root, or nil.
func rootQdisc(h *netlink.Handle, link netlink.Link) (netlink.Qdisc, error) {
	qs, err := h.QdiscList(link)
	if err != nil {
		return nil, fmt.Errorf("list qdiscs of %q: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q, nil
		}
	}
	return nil, nil
}

// newQdiscMajor picks a handle major in [minQdiscMajor, maxQdiscMajor] from
// crypto/rand: the handle tells this injection's qdisc from another's.
func newQdiscMajor() (uint16, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("qdisc handle: %w", err)
	}
	return minQdiscMajor + binary.LittleEndian.Uint16(b[:])%(maxQdiscMajor-minQdiscMajor+1), nil
}

// errQdiscChanged says the qdisc at llmchaos's handle is of the kind it added
// but no longer has its parameters: someone changed it, so it is left alone.
var errQdiscChanged = errors.New("qdisc no longer has the parameters llmchaos set; left in place")

// deleteQdisc deletes the qdisc spec names if it is still the one llmchaos
// added. A namespace, interface or qdisc that is gone counts as reverted, and
// so does another kind of qdisc at the handle (ours is gone, then).
func deleteQdisc(ctx context.Context, spec qdiscSpec) error {
	if err := spec.validate(); err != nil {
		return fmt.Errorf("%s spec: %w", KindTCQdisc, err)
	}
	return withNetns(ctx, spec.Netns, spec.NetnsID, func(ns netns.NsHandle) error { return deleteQdiscIn(ctx, ns, spec) })
}

// deleteQdiscIn deletes the qdisc spec names in ns (see deleteQdisc).
func deleteQdiscIn(ctx context.Context, ns netns.NsHandle, spec qdiscSpec) error {
	h, err := netlinkAt(ctx, ns)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(spec.Link)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("interface %q: %w", spec.Link, err)
	}
	qs, err := h.QdiscList(link)
	if err != nil {
		return fmt.Errorf("list qdiscs of %q: %w", spec.Link, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Handle != spec.Handle {
			continue
		}
		if a.Parent != netlink.HANDLE_ROOT || q.Type() != spec.QdiscKind {
			return nil
		}
		switch q := q.(type) {
		case *netlink.Tbf:
			if q.Rate != spec.Rate || q.Limit != spec.Limit {
				return fmt.Errorf("%s %s on %q (rate %d B/s, limit %d B; llmchaos set %d, %d): %w; "+
					"if it is still a leftover of llmchaos, run `tc qdisc del dev %s root`",
					q.Type(), handleString(a.Handle), spec.Link, q.Rate, q.Limit, spec.Rate, spec.Limit, errQdiscChanged, spec.Link)
			}
		case *netlink.Netem:
			if q.Limit != spec.Limit {
				return fmt.Errorf("%s %s on %q (limit %d; llmchaos set %d): %w",
					q.Type(), handleString(a.Handle), spec.Link, q.Limit, spec.Limit, errQdiscChanged)
			}
		}
		if err := h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("delete %s %s on %q: %w", q.Type(), handleString(a.Handle), spec.Link, err)
		}
		return nil
	}
	return nil
}

// revertQdisc is the Reverter of KindTCQdisc.
func revertQdisc(ctx context.Context, data json.RawMessage) error {
	var spec qdiscSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("%s spec: %w", KindTCQdisc, err)
	}
	return deleteQdisc(ctx, spec)
}
