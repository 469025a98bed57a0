package quorum

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestLogOpensAfterTailTruncation: a follower whose last entries a new
// leader overwrites deletes its log's tail (raft's "clearing log
// suffix"), then appends the leader's entries; after a restart every
// entry must read back. raft-wal 0.4.0 marked the truncated segment
// sealed without writing its index, and the reopened log failed every
// read in it ("sealed segment has no index block"): the node panicked in
// raft.NewRaft and could not start again (a controlled shutdown and
// restart of a cluster node did this in the compatibility suite).
func TestLogOpensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	store := func(logs interface{ StoreLogs([]*raft.Log) error }, term, from, to uint64) {
		t.Helper()
		var ls []*raft.Log
		for i := from; i <= to; i++ {
			ls = append(ls, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "t%d-%d", term, i)})
		}
		if err := logs.StoreLogs(ls); err != nil {
			t.Fatal(err)
		}
	}
	logs, meta, err := openLog(dir, walSegmentMin)
	if err != nil {
		t.Fatal(err)
	}
	store(logs, 1, 1, 10)
	if err := logs.DeleteRange(9, 10); err != nil { // the new leader never had 9 and 10
		t.Fatal(err)
	}
	store(logs, 2, 9, 12)
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}

	logs, meta, err = openLog(dir, walSegmentMin)
	if err != nil {
		t.Fatalf("reopening the log: %v", err)
	}
	defer meta.Close()
	defer logs.Close()
	for i := uint64(1); i <= 12; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d after the restart: %v", i, err)
		}
		term := uint64(1)
		if i >= 9 {
			term = 2
		}
		if want := fmt.Sprintf("t%d-%d", term, i); l.Term != term || string(l.Data) != want {
			t.Errorf("entry %d: term %d %q, want term %d %q", i, l.Term, l.Data, term, want)
		}
	}
}
