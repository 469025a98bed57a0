package quorum

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/internal/testfs"
	"weir/internal/testport"
)

// listFSM records every applied entry; its snapshot is the list.
type listFSM struct {
	mu      sync.Mutex
	entries []string
}

func (f *listFSM) Apply(_ uint64, data []byte) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, string(data))
	return len(f.entries)
}

func (f *listFSM) Snapshot() (func(io.Writer) error, error) {
	f.mu.Lock()
	captured := append([]string(nil), f.entries...)
	f.mu.Unlock()
	return func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(captured, "\n"))
		return err
	}, nil
}

func (f *listFSM) Restore(r io.Reader) error {
	var entries []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		entries = append(entries, sc.Text())
	}
	f.mu.Lock()
	f.entries = entries
	f.mu.Unlock()
	return sc.Err()
}

func (f *listFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.entries...)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return testport.Addr(t)
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func propose(t *testing.T, n *Node, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := n.Propose(ctx, []byte(s)); err != nil {
		t.Fatalf("propose %q: %v", s, err)
	}
}

func TestSingleVoterSurvivesRestart(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	cfg := Config{ID: 1, Dir: dir, Addr: addr, Bootstrap: []Peer{{1, addr}}}
	fsm := &listFSM{}
	n, err := Open(cfg, fsm)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "single voter leads", n.IsLeader)
	for i := range 50 {
		propose(t, n, fmt.Sprint("e", i))
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	for i := 50; i < 60; i++ {
		propose(t, n, fmt.Sprint("e", i))
	}
	n.Close()

	fsm2 := &listFSM{}
	n, err = Open(cfg, fsm2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	eventually(t, 5*time.Second, "restarted voter leads", n.IsLeader)
	eventually(t, 5*time.Second, "state restored from snapshot and log", func() bool { return len(fsm2.list()) == 60 })
	if got := fsm2.list(); got[0] != "e0" || got[59] != "e59" {
		t.Fatalf("restored %v", got)
	}
}

type cluster struct {
	nodes []*Node
	fsms  []*listFSM
	cfgs  []Config
}

func startCluster(t *testing.T, voters int) *cluster {
	t.Helper()
	return startClusterWith(t, voters, nil)
}

// startClusterWith is startCluster with each node's Config changed by
// change (when given) before it opens.
func startClusterWith(t *testing.T, voters int, change func(i int, cfg *Config)) *cluster {
	t.Helper()
	c := &cluster{}
	var peers []Peer
	for i := range voters {
		peers = append(peers, Peer{ID: int32(i + 1), Addr: freeAddr(t)})
	}
	for i := range voters {
		cfg := Config{ID: int32(i + 1), Dir: t.TempDir(), Addr: peers[i].Addr, Bootstrap: peers, TrailingLogs: 5, SnapshotThreshold: 20}
		if change != nil {
			change(i, &cfg)
		}
		fsm := &listFSM{}
		n, err := Open(cfg, fsm)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes, c.fsms, c.cfgs = append(c.nodes, n), append(c.fsms, fsm), append(c.cfgs, cfg)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return c
}

func (c *cluster) leader(t *testing.T) int {
	t.Helper()
	idx := -1
	eventually(t, 10*time.Second, "a leader is elected", func() bool {
		for i, n := range c.nodes {
			if n != nil && n.IsLeader() {
				idx = i
				return true
			}
		}
		return false
	})
	return idx
}

func TestThreeVotersFailoverAndCatchUp(t *testing.T) {
	c := startCluster(t, 3)
	l := c.leader(t)
	for i := range 30 {
		propose(t, c.nodes[l], fmt.Sprint("a", i))
	}
	for i, f := range c.fsms {
		eventually(t, 5*time.Second, fmt.Sprint("node ", i+1, " applies 30"), func() bool { return len(f.list()) == 30 })
	}
	// A follower refuses to propose and names the leader.
	follower := (l + 1) % 3
	_, _, err := c.nodes[follower].Propose(context.Background(), []byte("x"))
	var nl *ErrNotLeader
	if !errorsAs(err, &nl) || nl.LeaderID != int32(l+1) {
		t.Fatalf("propose on a follower: %v", err)
	}

	// The leader dies; another takes over and keeps the log.
	start := time.Now()
	c.nodes[l].Close()
	c.nodes[l] = nil
	nl2 := c.leader(t)
	took := time.Since(start)
	propose(t, c.nodes[nl2], "after-failover")
	t.Logf("new leader node %d after %v", nl2+1, took)

	// The old leader returns on its data and catches up, by snapshot or log.
	c.fsms[l] = &listFSM{} // a restarted process starts with empty state
	n, err := Open(c.cfgs[l], c.fsms[l])
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[l] = n
	for i := range 40 {
		propose(t, c.nodes[nl2], fmt.Sprint("b", i))
	}
	want := 30 + 1 + 40
	for i, f := range c.fsms {
		eventually(t, 10*time.Second, fmt.Sprint("node ", i+1, " converges"), func() bool { return len(f.list()) == want })
	}
	for i, f := range c.fsms {
		got := f.list()
		if got[30] != "after-failover" || got[want-1] != "b39" {
			t.Fatalf("node %d log differs: %v", i+1, got[28:33])
		}
	}
}

func TestNonvoterFollowsFromSnapshot(t *testing.T) {
	c := startCluster(t, 1)
	l := c.leader(t)
	for i := range 60 {
		propose(t, c.nodes[l], fmt.Sprint("s", i))
	}
	if err := c.nodes[l].Snapshot(); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	fsm := &listFSM{}
	n, err := Open(Config{ID: 9, Dir: t.TempDir(), Addr: addr}, fsm)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := c.nodes[l].AddNonvoter(9, addr); err != nil {
		t.Fatal(err)
	}
	propose(t, c.nodes[l], "tail")
	eventually(t, 10*time.Second, "non-voter catches up", func() bool { return len(fsm.list()) == 61 })
	if n.IsLeader() {
		t.Fatal("a non-voter became leader")
	}
}

// A node opens in a data directory with far less free space than raft-wal's
// 64 MiB segments (its segments shrink to fit) and says clearly when
// there is too little to start at all.
func TestOpenInASmallDirectory(t *testing.T) {
	dir := testfs.Small(t, 12<<20)
	n, err := Open(Config{ID: 1, Dir: dir + "/a", Bootstrap: []Peer{{1, "n1"}}}, &listFSM{})
	if err != nil {
		t.Fatalf("open with 12 MiB free: %v", err)
	}
	eventually(t, 5*time.Second, "leads", n.IsLeader)
	propose(t, n, "x")
	n.Close()

	tiny := testfs.Small(t, 2<<20)
	_, err = Open(Config{ID: 1, Dir: tiny + "/a", Bootstrap: []Peer{{1, "n1"}}}, &listFSM{})
	if err == nil || !strings.Contains(err.Error(), "free; the metadata log needs at least") {
		t.Fatalf("open with 2 MiB free: %v", err)
	}
}

// TestFollowersApplyWithoutWaitingForCommitTimeout: raft's leader tells
// a follower of a commit only with an append, sent idle every
// CommitTimeout; the barrier that follows each proposal (nudge) carries
// it at once. With a 10 s CommitTimeout, every follower applies each of
// a run of proposals well within it (without the barrier: 10 to 20 s).
func TestFollowersApplyWithoutWaitingForCommitTimeout(t *testing.T) {
	c := startClusterWith(t, 3, func(_ int, cfg *Config) { cfg.CommitTimeout = 10 * time.Second })
	l := c.leader(t)
	for i := range 3 {
		entry := fmt.Sprint("e", i)
		propose(t, c.nodes[l], entry)
		start := time.Now()
		for j, f := range c.fsms {
			eventually(t, 2*time.Second, fmt.Sprintf("node %d applies %s", j+1, entry), func() bool {
				got := f.list()
				return len(got) == i+1 && got[i] == entry
			})
		}
		t.Logf("%s applied on every node %v after its commit", entry, time.Since(start))
	}
	// Proposals in parallel share barriers, and all of them arrive too.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			propose(t, c.nodes[l], fmt.Sprint("p", i))
		}()
	}
	wg.Wait()
	for j, f := range c.fsms {
		eventually(t, 2*time.Second, fmt.Sprintf("node %d applies the 20 parallel proposals", j+1), func() bool { return len(f.list()) == 23 })
	}
}
