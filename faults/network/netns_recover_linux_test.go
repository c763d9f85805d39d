//go:build linux

package network

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/netnstest"
)

// TestKernelRecover is the path `llmchaos recover` takes after a crash: the
// fault is injected, then reverted by the Reverter of its RevertSpec alone
// (fresh state, no in-memory handle). It also checks that the spec is
// written before the change (write-ahead) and that both Undo and the
// Reverter stay idempotent afterwards.
func TestKernelRecover(t *testing.T) {
	l := nsPair(t)
	ctx := t.Context()

	type exists func(t *testing.T, spec faults.RevertSpec) bool
	tableExists := func(t *testing.T, s faults.RevertSpec) bool {
		var spec nftTableSpec
		nsDecodeSpec(t, s, KindNFTTable, &spec)
		return slices.Contains(nsTables(t, l.B), spec.Table)
	}
	qdiscExists := func(t *testing.T, s faults.RevertSpec) bool {
		var spec qdiscSpec
		nsDecodeSpec(t, s, KindTCQdisc, &spec)
		return nsHasQdisc(t, l.B, spec.Link, spec.Handle)
	}
	mustFault := func(f faults.Fault, err error) faults.Fault {
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tests := []struct {
		name   string
		fault  faults.Fault
		exists exists
	}{
		{"loss", mustFault(NewNetnsLoss("rec-loss", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: l.B.Name}, Percent: 30})), tableExists},
		{"partition", mustFault(NewNetnsPartition("rec-part", NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: l.B.Path, Interface: l.BName}})), tableExists},
		{"bandwidth", mustFault(NewNetnsBandwidth("rec-bw", NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: l.BName}, Rate: Mbit})), qdiscExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &nsSpecLog{}
			log.onWill = func(s faults.RevertSpec) error {
				if tt.exists(t, s) {
					t.Errorf("the change existed when its revert spec was logged: the log must come first")
				}
				return nil
			}
			undo, err := tt.fault.Inject(ctx, log)
			if err != nil {
				t.Fatal(err)
			}
			spec := log.only(t)
			if !tt.exists(t, spec) {
				t.Fatalf("after Inject the change is not there (spec %s)", spec.Data)
			}
			revert := KernelReverters()[spec.Kind]
			if err := revert(ctx, spec.Data); err != nil {
				t.Fatalf("revert from spec: %v", err)
			}
			if tt.exists(t, spec) {
				t.Fatalf("after the Reverter the change is still there (spec %s)", spec.Data)
			}
			if err := revert(ctx, spec.Data); err != nil {
				t.Errorf("second revert: %v, want nil (idempotent)", err)
			}
			if err := undo(ctx); err != nil {
				t.Errorf("Undo after recover: %v, want nil (already reverted)", err)
			}
		})
	}
}

// TestKernelRevertVanished: a namespace deleted, or replaced by a new one
// under the same name, counts as reverted, and the new one is left alone.
func TestKernelRevertVanished(t *testing.T) {
	ctx := t.Context()
	for _, renew := range []bool{false, true} {
		t.Run(fmt.Sprintf("renew=%v", renew), func(t *testing.T) {
			l := nsPair(t)
			c := l.A
			f, err := NewNetnsLoss("gone", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: c.Name}, Percent: 50})
			if err != nil {
				t.Fatal(err)
			}
			log := &nsSpecLog{}
			undo, err := f.Inject(ctx, log)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewNetnsBandwidth("gone", NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: c.Name, Interface: l.AName}, Rate: Mbit})
			if err != nil {
				t.Fatal(err)
			}
			qundo, err := b.Inject(ctx, log)
			if err != nil {
				t.Fatal(err)
			}
			if renew {
				c.Renew(t)
			} else {
				c.Delete(t)
			}
			for _, s := range log.specs {
				if err := KernelReverters()[s.Kind](ctx, s.Data); err != nil {
					t.Errorf("revert %s in a vanished namespace: %v, want nil", s.Kind, err)
				}
			}
			if err := undo(ctx); err != nil {
				t.Errorf("loss Undo: %v", err)
			}
			if err := qundo(ctx); err != nil {
				t.Errorf("bandwidth Undo: %v", err)
			}
			if renew {
				if got := nsTables(t, c); len(got) != 0 {
					t.Errorf("tables in the new namespace: %v, want none", got)
				}
			}
		})
	}
}

// TestKernelInjectAllOrNothing: when Inject fails, nothing is left behind
// and the error says what was wrong.
func TestKernelInjectAllOrNothing(t *testing.T) {
	l := nsPair(t)
	ctx := t.Context()
	refuse := func(faults.RevertSpec) error { return errors.New("disk full") }
	tests := []struct {
		name    string
		inject  func(log faults.RevertLog) error
		onWill  func(faults.RevertSpec) error
		wantErr string
	}{
		{"no such interface", func(log faults.RevertLog) error {
			f, _ := NewNetnsLoss("x", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: "nope0"}, Percent: 5})
			_, err := f.Inject(ctx, log)
			return err
		}, nil, `no interface "nope0"`},
		{"no such namespace", func(log faults.RevertLog) error {
			f, _ := NewNetnsPartition("x", NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: l.B.Name + "-missing"}})
			_, err := f.Inject(ctx, log)
			return err
		}, nil, "network namespace is gone"},
		{"journal refuses nft", func(log faults.RevertLog) error {
			f, _ := NewNetnsLoss("x", NetnsLossParams{NetnsTarget: NetnsTarget{Netns: l.B.Name}, Percent: 5})
			_, err := f.Inject(ctx, log)
			return err
		}, refuse, "disk full"},
		{"journal refuses qdisc", func(log faults.RevertLog) error {
			f, _ := NewNetnsBandwidth("x", NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: l.BName}, Rate: Mbit})
			_, err := f.Inject(ctx, log)
			return err
		}, refuse, "disk full"},
		{"burst below a frame", func(log faults.RevertLog) error {
			f, err := NewNetnsBandwidth("x", NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: l.BName},
				Rate: Mbit, BurstBytes: 1000})
			if err != nil {
				return err
			}
			_, err = f.Inject(ctx, log)
			return err
		}, nil, "below one frame"},
		{"qdisc on missing interface", func(log faults.RevertLog) error {
			f, _ := NewNetnsBandwidth("x", NetnsBandwidthParams{NetnsTarget: NetnsTarget{Netns: l.B.Name, Interface: "nope0"}, Rate: Mbit})
			_, err := f.Inject(ctx, log)
			return err
		}, nil, `no interface "nope0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &nsSpecLog{onWill: tt.onWill}
			err := tt.inject(log)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an error mentioning %q", err, tt.wantErr)
			}
			if got := nsTables(t, l.B); len(got) != 0 {
				t.Errorf("tables left: %v", got)
			}
			if q := nsRootQdisc(t, l.B, l.BName); q != nil && q.Attrs().Handle != 0 {
				t.Errorf("qdisc left: %s %s", q.Type(), handleString(q.Attrs().Handle))
			}
		})
	}
}

// TestNFTRevertLeavesForeignTables: a table llmchaos did not create is never
// deleted, even when a spec names it.
func TestNFTRevertLeavesForeignTables(t *testing.T) {
	a := netnstest.New(t)
	conn, err := nftables.New(nftables.WithNetNSFd(int(nsOpen(t, a))))
	if err != nil {
		t.Fatal(err)
	}
	conn.AddTable(&nftables.Table{Name: "filter", Family: nftables.TableFamilyINet})
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	data := fmt.Appendf(nil, `{"netns":%q,"family":"inet","table":"filter"}`, a.Path)
	if err := KernelReverters()[KindNFTTable](t.Context(), data); err == nil {
		t.Error("reverter accepted a spec naming a foreign table")
	}
	if got := nsTables(t, a); !slices.Equal(got, []string{"filter"}) {
		t.Errorf("tables after the refused revert: %v, want [filter]", got)
	}
}

// TestQdiscOwnership: NetnsBandwidth never replaces a root qdisc someone else
// added, never deletes a qdisc that took over its handle, and leaves its own
// alone (with an error) once someone changed its parameters.
func TestQdiscOwnership(t *testing.T) {
	l := nsPair(t)
	ctx := t.Context()
	h := nsNetlink(t, l.B)
	link, err := h.LinkByName(l.BName)
	if err != nil {
		t.Fatal(err)
	}
	target := NetnsTarget{Netns: l.B.Name, Interface: l.BName}
	bw, err := NewNetnsBandwidth("own", NetnsBandwidthParams{NetnsTarget: target, Rate: 2 * Mbit})
	if err != nil {
		t.Fatal(err)
	}
	tbfAt := func(handle uint32, rate uint64) *netlink.Tbf {
		return &netlink.Tbf{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: handle, Parent: netlink.HANDLE_ROOT},
			Rate:       rate, Limit: 100000, Buffer: netlink.Xmittime(rate, 10000),
		}
	}

	t.Run("foreign root qdisc", func(t *testing.T) {
		foreign := tbfAt(netlink.MakeHandle(1, 0), 1000000)
		if err := h.QdiscAdd(foreign); err != nil {
			t.Fatal(err)
		}
		defer h.QdiscDel(foreign)
		log := &nsSpecLog{}
		if _, err := bw.Inject(ctx, log); err == nil || !strings.Contains(err.Error(), "refusing to replace") {
			t.Fatalf("Inject over a foreign root qdisc: %v, want a refusal", err)
		}
		if len(log.specs) != 0 {
			t.Errorf("a refused Inject logged %v", log.specs)
		}
		if q := nsRootQdisc(t, l.B, l.BName); q == nil || q.Attrs().Handle != foreign.Handle {
			t.Errorf("the foreign qdisc was touched: root is now %v", q)
		}
	})

	t.Run("changed parameters", func(t *testing.T) {
		log := &nsSpecLog{}
		if _, err := bw.Inject(ctx, log); err != nil {
			t.Fatal(err)
		}
		var spec qdiscSpec
		nsDecodeSpec(t, log.only(t), KindTCQdisc, &spec)
		if err := h.QdiscChange(tbfAt(spec.Handle, 12345)); err != nil {
			t.Fatal(err)
		}
		err := KernelReverters()[KindTCQdisc](ctx, log.only(t).Data)
		if !errors.Is(err, errQdiscChanged) {
			t.Fatalf("revert of a changed qdisc: %v, want errQdiscChanged", err)
		}
		if !nsHasQdisc(t, l.B, l.BName, spec.Handle) {
			t.Fatal("the changed qdisc was deleted")
		}
		if err := h.QdiscDel(tbfAt(spec.Handle, 12345)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("handle taken over", func(t *testing.T) {
		log := &nsSpecLog{}
		undo, err := bw.Inject(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		var spec qdiscSpec
		nsDecodeSpec(t, log.only(t), KindTCQdisc, &spec)
		q := nsRootQdisc(t, l.B, l.BName)
		if q == nil || q.Type() != "tbf" || q.(*netlink.Tbf).Rate != (2*Mbit).bytesPerSecond() {
			t.Fatalf("root qdisc after Inject: %+v, want our tbf at 250000 B/s", q)
		}
		if err := h.QdiscDel(q); err != nil {
			t.Fatal(err)
		}
		other := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: spec.Handle, Parent: netlink.HANDLE_ROOT})
		if err := h.QdiscAdd(other); err != nil {
			t.Fatal(err)
		}
		defer h.QdiscDel(other)
		if err := undo(ctx); err != nil {
			t.Fatalf("Undo with our handle taken by an htb: %v, want nil (ours is gone)", err)
		}
		if q := nsRootQdisc(t, l.B, l.BName); q == nil || q.Type() != "htb" {
			t.Fatalf("the htb that took our handle is gone: root is %v", q)
		}
	})
}

// TestKernelOwnNamespace: llmchaos's own namespace (and the host's) is a
// target only when allow_root_namespace says so, however it is named. The
// allowed case runs on a thread moved into a test namespace, so that "own
// namespace" is that one and the host is never touched.
func TestKernelOwnNamespace(t *testing.T) {
	l := nsPair(t)
	ctx := t.Context()
	for _, path := range []string{"/proc/self/ns/net", hostNetnsFile} {
		t.Run(path, func(t *testing.T) {
			if h, err := netns.GetFromPath(path); err != nil {
				t.Skipf("cannot open %s here (%v), so it cannot be a target either", path, err)
			} else {
				h.Close()
			}
			f, err := NewNetnsPartition("host", NetnsPartitionParams{NetnsTarget: NetnsTarget{Netns: path, Interface: "lo"}})
			if err != nil {
				t.Fatal(err)
			}
			log := &nsSpecLog{}
			_, err = f.Inject(ctx, log)
			if err == nil || !strings.Contains(err.Error(), "allow_root_namespace") {
				t.Fatalf("Inject on %s: %v, want a refusal naming allow_root_namespace", path, err)
			}
			if len(log.specs) != 0 {
				t.Errorf("a refused Inject logged %v", log.specs)
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		f, err := NewNetnsLoss("own", NetnsLossParams{
			NetnsTarget: NetnsTarget{AllowRootNamespace: true, Interface: l.BName}, Percent: 50})
		if err != nil {
			t.Fatal(err)
		}
		log := &nsSpecLog{}
		nsDo(t, l.B, func() error {
			_, err := f.Inject(ctx, log)
			return err
		})
		var spec nftTableSpec
		nsDecodeSpec(t, log.only(t), KindNFTTable, &spec)
		if spec.Netns != "" || !slices.Contains(nsTables(t, l.B), spec.Table) {
			t.Fatalf("spec %+v, tables %v: want the table in the thread's namespace, recorded as own", spec, nsTables(t, l.B))
		}
		revert := KernelReverters()[KindNFTTable]
		if err := revert(ctx, log.only(t).Data); err == nil || !strings.Contains(err.Error(), "run the revert from the namespace") {
			t.Errorf("revert from another namespace: %v, want a refusal (the table is not known to be gone)", err)
		}
		nsDo(t, l.B, func() error { return revert(ctx, log.only(t).Data) })
		if got := nsTables(t, l.B); len(got) != 0 {
			t.Errorf("tables after revert: %v", got)
		}
	})
}
