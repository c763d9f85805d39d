package network

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Fault type names of the kernel-level faults, as written in an experiment
// file's `type:` field.
const (
	TypeNetnsLoss      = "network.loss"
	TypeNetnsPartition = "network.partition"
	TypeNetnsBandwidth = "network.bandwidth"
	TypeNetnsDelay     = "network.delay"
)

// RevertSpec kinds of the kernel-level faults (faults.RevertSpec.Kind).
const (
	// KindNFTTable reverts an nftables table that llmchaos created: its data
	// is an nftTableSpec naming the namespace and the table.
	KindNFTTable = "nft-table"
	// KindTCQdisc reverts a root qdisc that llmchaos added: its data is a
	// qdiscSpec naming the namespace, the interface, the handle and the
	// parameters that prove the qdisc is still ours.
	KindTCQdisc = "tc-qdisc"
)

// netnsRunDir is where `ip netns` keeps its named namespaces.
const netnsRunDir = "/var/run/netns"

// ifNameMax is IFNAMSIZ-1: the longest interface name Linux accepts.
const ifNameMax = 15

// KernelReverters returns the Reverter of each RevertSpec kind that the
// kernel-level faults write (KindNFTTable, KindTCQdisc). The map is new on
// every call, so the caller may merge it into its own registry.
func KernelReverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{
		KindNFTTable: revertNFTTable,
		KindTCQdisc:  revertQdisc,
	}
}

// ErrNoNetem says that the kernel has no sch_netem qdisc, so network.delay
// cannot be injected there; the proxy's latency fault works everywhere.
var ErrNoNetem = errors.New("kernel has no sch_netem; use the proxy latency fault (network.latency) instead")

// NetnsTarget names where a kernel-level fault acts: a network namespace and
// optionally one interface in it. A fault never acts on the namespace
// llmchaos itself runs in unless AllowRootNamespace says so explicitly.
type NetnsTarget struct {
	// Netns is a namespace name as `ip netns` knows it (a file under
	// /var/run/netns) or an absolute path to a namespace file, such as
	// /proc/PID/ns/net. Empty means llmchaos's own namespace, which needs
	// AllowRootNamespace.
	Netns string `json:"netns,omitempty" doc:"network namespace: a name under /var/run/netns or a path such as /proc/PID/ns/net"`
	// Interface restricts the fault to one interface of the namespace. The
	// qdisc faults need it; for the nftables faults empty means every
	// interface but loopback.
	Interface string `json:"interface,omitempty" doc:"interface in the namespace (network.bandwidth and network.delay need it; else every interface but loopback)"`
	// AllowRootNamespace permits an empty Netns.
	AllowRootNamespace bool `json:"allow_root_namespace,omitempty" doc:"permit an empty netns: act in llmchaos's own namespace" default:"false"`
}

// Validate reports every problem with the target at once. It does not look
// at the system: whether the namespace and the interface exist is checked by
// Inject.
func (t NetnsTarget) Validate() error {
	return t.problems(false).Err()
}

// problems lists what is wrong with t; needIface makes Interface required.
func (t NetnsTarget) problems(needIface bool) field.Problems {
	var ps field.Problems
	switch {
	case t.Netns == "" && !t.AllowRootNamespace:
		ps.AddNamed("netns", ": required; name the target's network namespace "+
			"(set %s: true to act on the namespace llmchaos runs in)", field.Path("allow_root_namespace"))
	case t.Netns != "" && t.AllowRootNamespace:
		ps.AddNamed("allow_root_namespace", ": only meaningful with an empty netns; remove one of them")
	case strings.HasPrefix(t.Netns, "/"):
		if filepath.Clean(t.Netns) != t.Netns {
			ps.AddNamed("netns", ": path %q is not clean; write %q", t.Netns, filepath.Clean(t.Netns))
		}
	case t.Netns != "":
		if strings.ContainsAny(t.Netns, "/\x00") || t.Netns == "." || t.Netns == ".." {
			ps.AddNamed("netns", ": %q is neither a namespace name (no '/') nor an absolute path", t.Netns)
		}
	}
	switch {
	case t.Interface == "" && needIface:
		ps.AddNamed("interface", ": required; name the interface in the namespace whose egress is shaped")
	case len(t.Interface) > ifNameMax:
		ps.AddNamed("interface", ": %q is longer than %d characters, the Linux limit", t.Interface, ifNameMax)
	case strings.ContainsAny(t.Interface, "/ \t\n\x00:"):
		ps.AddNamed("interface", ": %q contains a character Linux does not allow in interface names", t.Interface)
	}
	return ps
}

// nsPath is the namespace file the target names; "" for llmchaos's own.
func (t NetnsTarget) nsPath() string {
	if t.Netns == "" || strings.HasPrefix(t.Netns, "/") {
		return t.Netns
	}
	return filepath.Join(netnsRunDir, t.Netns)
}

// label names the target for errors and reports. (Not String: the target is
// embedded in the params structs, which would then print as their target.)
func (t NetnsTarget) label() string {
	ns := t.Netns
	if ns == "" {
		ns = "(own namespace)"
	}
	if t.Interface == "" {
		return "netns " + ns
	}
	return "netns " + ns + " dev " + t.Interface
}

// kernelUndo makes revert an idempotent faults.Undo: once revert has
// succeeded, later calls return nil without acting; a failed revert may be
// retried. Calls are serialised.
func kernelUndo(revert func(ctx context.Context) error) faults.Undo {
	var (
		mu   sync.Mutex
		done bool
	)
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return nil
		}
		if err := revert(ctx); err != nil {
			return err
		}
		done = true
		return nil
	}
}

// netlinkTimeout bounds one netlink exchange when ctx has no deadline, so
// that a stuck kernel socket cannot hang a revert forever.
const netlinkTimeout = 10 * time.Second

// netlinkDeadline is the deadline for the netlink sockets of one operation.
func netlinkDeadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(netlinkTimeout)
}
