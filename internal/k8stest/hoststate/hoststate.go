// Package hoststate records the host-wide state that the test node of
// scripts/k8s-node.sh changes while it runs (sysctls, iptables rules, its
// bridge, nftables tables, cgroups, mounts), so that a state taken before
// a start and one taken after the stop can be compared. It imports only the
// standard library: the node test runner (internal/k8stest/nodetests)
// builds in moments.
package hoststate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Facts are the host-wide names a node uses (scripts/k8s-node.sh facts):
// what Take looks at.
type Facts struct {
	Bridge, PodCIDR, ServiceIP, CgroupRoot string
}

// nodeSysctls are the host-wide sysctls a node may change: the kubelet's
// (setupKernelTunables in Kubernetes' pkg/kubelet/cm) and the forwarding
// the CNI bridge turns on. Listed here, not taken from the script, so that
// a script that forgets one is caught.
var nodeSysctls = []string{
	"kernel.panic", "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
	"vm.overcommit_memory", "vm.panic_on_oom", "net.ipv4.ip_forward",
}

// Take returns, one a line and sorted, the host-wide state that a node
// changes while it runs: the sysctls above, the iptables rules and chains
// that name its pod network, bridge, Service address or the CNI's and
// Kubernetes' chains, its bridge and the links on it, the nftables tables,
// its cgroups, and the mounts under dir (the node's directory). Docker's
// rules and links are left out: other tests change them meanwhile. Two
// states taken before a node starts and after it stops must be equal.
func Take(ctx context.Context, f Facts, dir string) ([]string, error) {
	var lines []string
	for _, k := range nodeSysctls {
		b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))
		if err != nil {
			return nil, fmt.Errorf("hoststate: sysctl %s: %w", k, err)
		}
		lines = append(lines, "sysctl "+k+"="+strings.Join(strings.Fields(string(b)), " "))
	}
	cidr := strings.TrimSuffix(f.PodCIDR, "/24")
	cidr = cidr[:strings.LastIndexByte(cidr, '.')+1] // "10.88.0."
	keep := func(l string) bool {
		return strings.Contains(l, cidr) || strings.Contains(l, f.ServiceIP) || strings.Contains(l, f.Bridge) ||
			strings.Contains(l, "CNI-") || strings.Contains(l, "KUBE-") || strings.Contains(l, "cni0")
	}
	for _, c := range []struct {
		what string
		args []string
		keep func(string) bool
	}{
		{"iptables", []string{"iptables-save"}, keep},
		{"ip link", []string{"ip", "-o", "link", "show"}, keep},
		{"ip route", []string{"ip", "-o", "route", "show"}, keep},
		{"nft table", []string{"nft", "list", "tables"}, func(string) bool { return true }},
	} {
		out, err := exec.CommandContext(ctx, c.args[0], c.args[1:]...).Output()
		if err != nil {
			return nil, fmt.Errorf("hoststate: %s: %w", strings.Join(c.args, " "), err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "#") || !c.keep(l) {
				continue
			}
			if c.what == "ip link" {
				// "12: name: <flags> ... link/ether ..": the index and
				// counters change; the name and master do not.
				fs := strings.Fields(l)
				l = fs[1]
				if i := slices.Index(fs, "master"); i >= 0 && i+1 < len(fs) {
					l += " master " + fs[i+1]
				}
			}
			lines = append(lines, c.what+" "+l)
		}
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*" + f.CgroupRoot)
	if _, err := os.Stat("/sys/fs/cgroup" + f.CgroupRoot); err == nil {
		roots = append(roots, "/sys/fs/cgroup"+f.CgroupRoot)
	}
	for _, r := range roots {
		lines = append(lines, "cgroup "+r)
	}
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return nil, fmt.Errorf("hoststate: %w", err)
	}
	for l := range strings.Lines(string(mounts)) {
		if dir != "" && strings.Contains(l, dir) {
			lines = append(lines, "mount "+strings.TrimSpace(l))
		}
	}
	slices.Sort(lines)
	return lines, nil
}

// Diff describes how after differs from before ("" when equal).
func Diff(before, after []string) string {
	var b strings.Builder
	for _, l := range before {
		if !slices.Contains(after, l) {
			fmt.Fprintf(&b, "  gone:  %s\n", l)
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			fmt.Fprintf(&b, "  added: %s\n", l)
		}
	}
	return b.String()
}

// ReadFacts runs the node script's facts.
func ReadFacts(ctx context.Context, script string) (Facts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", script, "facts").CombinedOutput()
	if err != nil {
		return Facts{}, fmt.Errorf("hoststate: %s facts: %w\n%s", script, err, out)
	}
	env := map[string]string{}
	for l := range strings.Lines(string(out)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			env[k] = v
		}
	}
	return Facts{Bridge: env["BRIDGE"], PodCIDR: env["POD_CIDR"], ServiceIP: env["SERVICE_IP"], CgroupRoot: env["CGROUP_ROOT"]}, nil
}
