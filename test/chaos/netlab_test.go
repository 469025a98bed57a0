package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// netLab puts every node of a cluster in its own network namespace, so a
// test can fault the network between nodes, not only the processes:
//
//	test process (root namespace)  10.A.B.1 on bridge wcXXXbr
//	   └─ veth wcXXXvN ── eth0 10.A.B.(10+N) in namespace wcXXXnN, node N
//
// Clients run in the root namespace and reach every node; faults are
// nftables rules in a node's namespace (table inet weirfault): a
// symmetric partition (nothing to or from the other nodes), a one-way one
// (nothing from them), random drops; and latency, which this kernel has
// no netem for: the node's connections with the others are redirected
// (nftables DNAT in every node's namespace, table ip weirdelay) through
// delaying proxies in the root namespace, existing ones cut (ss -K) so
// that they reconnect through them.
type netLab struct {
	t      *testing.T
	prefix string // names: bridge prefix+"br", namespaces prefix+"n1", ...
	net    string // "10.A.B."
	n      int

	proxies []*delayProxy // per node: Kafka port, raft port
}

const (
	labKafkaPort = 9092
	labRaftPort  = 9093
)

// newNetLab builds the namespaces and the bridge, or skips the test
// saying what is missing. Everything is removed when the test ends.
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	for _, tool := range []string{"ip", "nft", "ss"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("network faults need %s (apt-get install -y iproute2 nftables; scripts/chaos installs them): %v", tool, err)
		}
	}
	a, b := 100+rand.IntN(100), rand.IntN(250)
	l := &netLab{t: t, prefix: fmt.Sprintf("wc%03x", rand.IntN(0xfff)), net: fmt.Sprintf("10.%d.%d.", a, b), n: n}
	if err := l.ip("link", "add", l.prefix+"br", "type", "bridge"); err != nil {
		t.Skipf("network faults need network namespaces and bridges (CAP_NET_ADMIN): %v", err)
	}
	t.Cleanup(l.teardown)
	steps := [][]string{
		{"ip", "addr", "add", l.host() + "/24", "dev", l.prefix + "br"},
		{"ip", "link", "set", l.prefix + "br", "up"},
	}
	for i := 1; i <= n; i++ {
		ns, veth := l.ns(i), l.prefix+"v"+strconv.Itoa(i)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p"},
			[]string{"ip", "link", "set", veth + "p", "netns", ns},
			[]string{"ip", "link", "set", veth, "master", l.prefix + "br"},
			[]string{"ip", "link", "set", veth, "up"},
			[]string{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
			[]string{"ip", "netns", "exec", ns, "ip", "link", "set", veth + "p", "name", "eth0"},
			[]string{"ip", "netns", "exec", ns, "ip", "addr", "add", l.addr(i) + "/24", "dev", "eth0"},
			[]string{"ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			t.Skipf("network faults: could not build the namespaces: %v", err)
		}
	}
	for i := 1; i <= n; i++ {
		for _, port := range []int{labKafkaPort, labRaftPort} {
			p, err := newDelayProxy(l.host()+":0", net.JoinHostPort(l.addr(i), strconv.Itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			l.proxies = append(l.proxies, p)
		}
	}
	t.Logf("network lab %s: nodes at %s11..%s%d, in namespaces %s1..%s%d", l.prefix, l.net, l.net, 10+n, l.ns(0)[:len(l.ns(0))-1], l.ns(0)[:len(l.ns(0))-1], n)
	return l
}

func (l *netLab) host() string      { return l.net + "1" }
func (l *netLab) addr(i int) string { return l.net + strconv.Itoa(10+i) }
func (l *netLab) ns(i int) string   { return l.prefix + "n" + strconv.Itoa(i) }

func (l *netLab) hosts() []string {
	var out []string
	for i := 1; i <= l.n; i++ {
		out = append(out, l.addr(i))
	}
	return out
}

func (l *netLab) namespaces() []string {
	var out []string
	for i := 1; i <= l.n; i++ {
		out = append(out, l.ns(i))
	}
	return out
}

func (l *netLab) teardown() {
	for _, p := range l.proxies {
		p.close()
	}
	for i := 1; i <= l.n; i++ {
		run("ip", "netns", "del", l.ns(i))
	}
	run("ip", "link", "del", l.prefix+"br")
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (l *netLab) ip(args ...string) error { return run(append([]string{"ip"}, args...)...) }

// nft runs an nftables script in node i's namespace.
func (l *netLab) nft(i int, script string) error {
	cmd := exec.Command("ip", "netns", "exec", l.ns(i), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft in %s: %v: %s\n%s", l.ns(i), err, strings.TrimSpace(string(out)), script)
	}
	return nil
}

// peers are the addresses of every node but i, as an nftables set.
func (l *netLab) peers(i int) string {
	var out []string
	for j := 1; j <= l.n; j++ {
		if j != i {
			out = append(out, l.addr(j))
		}
	}
	return "{ " + strings.Join(out, ", ") + " }"
}

// The network faults a round injects on one node.
const (
	faultPartition = "partition" // nothing to or from the other nodes
	faultOneWay    = "one-way"   // nothing from the other nodes
	faultDrops     = "drops"     // a share of packets with them lost
	faultDelay     = "delay"     // connections with them through delaying proxies
)

var netFaults = []string{faultPartition, faultOneWay, faultDrops, faultDelay}

// inject puts fault on node i (drops: pct percent; delay: d each way).
func (l *netLab) inject(i int, fault string, pct int, d time.Duration) error {
	peers := l.peers(i)
	switch fault {
	case faultPartition:
		return l.nft(i, fmt.Sprintf(`table inet weirfault {
	chain in { type filter hook input priority 0; ip saddr %s drop; }
	chain out { type filter hook output priority 0; ip daddr %s drop; }
}`, peers, peers))
	case faultOneWay:
		return l.nft(i, fmt.Sprintf(`table inet weirfault {
	chain in { type filter hook input priority 0; ip saddr %s drop; }
}`, peers))
	case faultDrops:
		return l.nft(i, fmt.Sprintf(`table inet weirfault {
	chain in { type filter hook input priority 0; ip saddr %s numgen random mod 100 < %d drop; }
	chain out { type filter hook output priority 0; ip daddr %s numgen random mod 100 < %d drop; }
}`, peers, pct, peers, pct))
	case faultDelay:
		for _, p := range l.proxies {
			p.delay.Store(int64(d))
		}
		// Node i's connections to the others, and theirs to it, go
		// through the proxy of the destination's port.
		for j := 1; j <= l.n; j++ {
			var rules []string
			for k := 1; k <= l.n; k++ {
				if k == j || (j != i && k != i) {
					continue
				}
				for pi, port := range []int{labKafkaPort, labRaftPort} {
					proxy := l.proxies[(k-1)*2+pi].addr()
					rules = append(rules, fmt.Sprintf("ip daddr %s tcp dport %d dnat to %s;", l.addr(k), port, proxy))
				}
			}
			if err := l.nft(j, "table ip weirdelay {\n\tchain out { type nat hook output priority -100; "+strings.Join(rules, " ")+" }\n}"); err != nil {
				return err
			}
		}
		return l.cut(i)
	}
	return fmt.Errorf("unknown fault %q", fault)
}

// cut closes node i's connections with the other nodes, and theirs with
// it, so that they are made again (through the proxies, or directly once
// healed).
func (l *netLab) cut(i int) error {
	var errs []error
	for j := 1; j <= l.n; j++ {
		targets := []string{l.host()}
		if j == i {
			for k := 1; k <= l.n; k++ {
				if k != i {
					targets = append(targets, l.addr(k))
				}
			}
		} else {
			targets = append(targets, l.addr(i))
		}
		for _, dst := range targets {
			if err := run("ip", "netns", "exec", l.ns(j), "ss", "-K", "dst", dst); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// heal removes every fault of node i.
func (l *netLab) heal(i int, fault string) error {
	if fault != faultDelay {
		return run("ip", "netns", "exec", l.ns(i), "nft", "delete", "table", "inet", "weirfault")
	}
	for j := 1; j <= l.n; j++ {
		run("ip", "netns", "exec", l.ns(j), "nft", "delete", "table", "ip", "weirdelay")
	}
	for _, p := range l.proxies {
		p.delay.Store(0)
	}
	return l.cut(i)
}

// delayProxy forwards TCP connections to target, holding every chunk of
// bytes, in both directions, for delay before passing it on.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func newDelayProxy(listen, target string) (*delayProxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &delayProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *delayProxy) addr() string { return p.ln.Addr().String() }

func (p *delayProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			t, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				return
			}
			if !p.track(t) {
				t.Close()
				return
			}
			defer p.untrack(t)
			done := make(chan struct{}, 2)
			go func() { p.copyDelayed(t, c); done <- struct{}{} }()
			go func() { p.copyDelayed(c, t); done <- struct{}{} }()
			<-done
			c.Close()
			t.Close()
			<-done
		}()
	}
}

func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *delayProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// copyDelayed copies src to dst, each chunk written delay after it was
// read (chunks keep their order; the pipe is not slowed by the delay).
func (p *delayProxy) copyDelayed(dst, src net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 256)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if d := time.Until(c.at); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			for range ch {
			}
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func (p *delayProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
