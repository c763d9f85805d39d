package k8stest

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/fields"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/resource"
)

// LoopbackTaint keeps pods off a LoopbackNode unless they tolerate it
// (Workload.Node does).
const LoopbackTaint = "llmchaos.io/loopback"

// loopbackBits is the size of a LoopbackNode's pod network: /28, 16
// addresses, which a few pods and their replacements never exhaust (kwok
// hands a deleted pod's IP to a later one).
const loopbackBits = 28

// LoopbackNode is a kwok node whose pods get their IPs from a pod CIDR on
// the loopback network (127.X.Y.Z/28), which Linux routes to this machine
// as a whole: a test that listens on those addresses (Listen) is reached
// at the pods' IPs by itself and by the processes it starts (the shards of
// a load), as a pod's container would be, without a dial hook. kwok gives
// a pod its node's pod CIDR's addresses; the API server takes loopback pod
// IPs (but not in EndpointSlices: a Service in front of these pods lists
// no endpoint, so follow them by selector).
type LoopbackNode struct {
	// Name is the node's name.
	Name string
	// CIDR is its pod network.
	CIDR netip.Prefix
}

// LoopbackNode creates a LoopbackNode for t, deleted when t ends, and
// waits until kwok has made it Ready. It skips t outside Linux, where only
// 127.0.0.1 is on the loopback interface.
func (c *Cluster) LoopbackNode(t testing.TB) LoopbackNode {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("k8stest: a loopback pod network needs Linux's 127.0.0.0/8 loopback")
	}
	client := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// One of 256*16 networks in 127.1-254.*: two tests (or test binaries)
	// that draw the same one still listen on different ports.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	base := netip.AddrFrom4([4]byte{127, byte(1 + rng.IntN(254)), byte(rng.IntN(256)), byte(rng.IntN(16) << 4)})
	n := LoopbackNode{Name: "kwok-loopback-" + kube.Token(), CIDR: netip.PrefixFrom(base, loopbackBits)}
	quantity := func(s string) resource.Quantity { return resource.MustParse(s) }
	capacity := corev1.ResourceList{corev1.ResourceCPU: quantity("32"), corev1.ResourceMemory: quantity("256Gi"), corev1.ResourcePods: quantity("110")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
			// Not type=kwok: the pods of other workloads stay off it.
			Labels: map[string]string{"type": "kwok-loopback", corev1.LabelHostname: n.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR: n.CIDR.String(), PodCIDRs: []string{n.CIDR.String()},
			Taints: []corev1.Taint{{Key: LoopbackTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.CIDR.Addr().String()}, {Type: corev1.NodeHostName, Address: n.Name}},
			Allocatable: capacity, Capacity: capacity,
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "kwok"},
		},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("k8stest: creating node %s: %v", n.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("k8stest: deleting node %s: %v", n.Name, err)
		}
	})
	lw := client.CoreV1().Nodes().ListWatch(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", n.Name).String()
	})
	if _, err := kube.WaitList(ctx, lw, func(nodes []*corev1.Node) bool {
		return len(nodes) == 1 && nodeReady(nodes[0])
	}); err != nil {
		t.Fatalf("k8stest: node %s not Ready (set by kwok): %v", n.Name, err)
	}
	return n
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Addrs returns the addresses of the node's pod network.
func (n LoopbackNode) Addrs() []netip.Addr {
	var out []netip.Addr
	for a := n.CIDR.Addr(); n.CIDR.Contains(a); a = a.Next() {
		out = append(out, a)
	}
	return out
}

// PodListener is a net.Listener on one port of every address of a
// LoopbackNode's pod network: what the node's pods would serve, here
// served by the test. It counts the connections it accepted by the
// address they were made to (a pod's IP).
type PodListener struct {
	port  int
	lns   []net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu       sync.Mutex
	accepted map[string]int
}

var _ net.Listener = (*PodListener)(nil)

// Listen listens on one port, drawn below the ephemeral range, on every
// address of the node's pod network, until t ends (or Close).
func (n LoopbackNode) Listen(t testing.TB) *PodListener {
	t.Helper()
	const lo, hi = 20000, 32768
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	var errs []error
	for range 50 {
		port := lo + rng.IntN(hi-lo)
		var lns []net.Listener
		var err error
		for _, a := range n.Addrs() {
			var ln net.Listener
			if ln, err = net.Listen("tcp", net.JoinHostPort(a.String(), strconv.Itoa(port))); err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			errs = append(errs, err)
			continue
		}
		l := &PodListener{port: port, lns: lns, conns: make(chan net.Conn), done: make(chan struct{}), accepted: map[string]int{}}
		for _, ln := range lns {
			l.wg.Go(func() { l.acceptFrom(ln) })
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	t.Fatalf("k8stest: no port free on every address of %s in 50 tries: %v", n.CIDR, errors.Join(errs...))
	return nil
}

func (l *PodListener) acceptFrom(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		if ap, err := netip.ParseAddrPort(c.LocalAddr().String()); err == nil {
			l.mu.Lock()
			l.accepted[ap.Addr().String()]++
			l.mu.Unlock()
		}
		select {
		case l.conns <- c:
		case <-l.done:
			c.Close()
			return
		}
	}
}

// Port is the port it listens on.
func (l *PodListener) Port() int { return l.port }

// Accept implements net.Listener.
func (l *PodListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: it closes every address's listener.
func (l *PodListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		for _, ln := range l.lns {
			ln.Close()
		}
		l.wg.Wait()
	})
	return nil
}

// Addr implements net.Listener: the first address's.
func (l *PodListener) Addr() net.Addr { return l.lns[0].Addr() }

// Accepted returns how many connections were made to ip.
func (l *PodListener) Accepted(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted[ip]
}
