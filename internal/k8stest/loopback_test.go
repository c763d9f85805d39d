package k8stest

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// The pods of a workload on a LoopbackNode get IPs from its loopback pod
// network, and a connection to a pod's IP reaches the test's PodListener,
// which counts it for that IP; the pods of other workloads stay off the
// node.
func TestLoopbackNodePodsAreReachedAtTheirIPs(t *testing.T) {
	c := Start(t)
	node := c.LoopbackNode(t)
	ns := c.Namespace(t)
	pods := c.CreateWorkload(t, ns, Workload{Name: "sim", Replicas: 2, Labels: map[string]string{"app": "sim"}, Node: node.Name})
	others := c.CreateWorkload(t, ns, Workload{Name: "other", Replicas: 2, Labels: map[string]string{"app": "other"}})
	ln := node.Listen(t)
	for _, p := range pods {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if p.Spec.NodeName != node.Name || err != nil || !node.CIDR.Contains(ip) {
			t.Fatalf("pod %s on node %s with IP %q: want node %s and an IP in %s", p.Name, p.Spec.NodeName, p.Status.PodIP, node.Name, node.CIDR)
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(p.Status.PodIP, strconv.Itoa(ln.Port())), 10*time.Second)
		if err != nil {
			t.Fatalf("dial pod %s at %s: %v", p.Name, p.Status.PodIP, err)
		}
		accepted, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got := accepted.LocalAddr().(*net.TCPAddr).IP.String(); got != p.Status.PodIP {
			t.Errorf("the connection to %s was accepted at %s", p.Status.PodIP, got)
		}
		conn.Close()
		accepted.Close()
		if n := ln.Accepted(p.Status.PodIP); n != 1 {
			t.Errorf("%d connections counted for %s, want 1", n, p.Status.PodIP)
		}
	}
	for _, p := range others {
		if p.Spec.NodeName == node.Name {
			t.Errorf("pod %s of another workload is on the loopback node", p.Name)
		}
	}
}
