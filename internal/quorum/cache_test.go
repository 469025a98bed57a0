package quorum

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// countingLog counts the entries read from the log under raft's cache.
type countingLog struct {
	raft.LogStore
	reads atomic.Int64
}

func (c *countingLog) GetLog(index uint64, l *raft.Log) error {
	c.reads.Add(1)
	return c.LogStore.GetLog(index, l)
}

// TestIdleLeaderReadsNoLog: a leader whose followers have every entry
// sends them heartbeat appends every CommitTimeout, each naming the
// newest entry's term; that entry comes from memory, not from the log
// (decoding a copy of it each time was most of an idle controller's CPU
// and garbage).
func TestIdleLeaderReadsNoLog(t *testing.T) {
	logs := make([]*countingLog, 3)
	c := startClusterWith(t, 3, func(i int, cfg *Config) {
		cfg.CommitTimeout = 20 * time.Millisecond // many idle appends to count
		cfg.wrapLog = func(s raft.LogStore) raft.LogStore {
			logs[i] = &countingLog{LogStore: s}
			return logs[i]
		}
	})
	l := c.leader(t)
	big := bytes.Repeat([]byte("x"), 256<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.nodes[l].Propose(ctx, big); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "every voter applied the entry", func() bool {
		for _, f := range c.fsms {
			if len(f.list()) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond) // followers' acknowledgements settle
	before := logs[l].reads.Load()
	time.Sleep(500 * time.Millisecond) // 12 to 25 idle appends per follower
	if n := logs[l].reads.Load() - before; n > 4 {
		t.Fatalf("the idle leader read %d entries from its log in 500 ms", n)
	}
}
