package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	wlog "weir/internal/log"
)

// UndefinedEpoch and UndefinedOffset are Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET: the answer to OffsetForLeaderEpoch when the
// epoch is not known.
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCheckpointFile is the leader-epoch checkpoint in the partition
// directory, next to the log's own checkpoint.
const epochCheckpointFile = "leader-epoch-checkpoint"

// maxEpochEntries bounds what the decoder accepts: one entry per leader
// epoch that wrote data still in the log; a million is far beyond any
// real partition and keeps a hostile file from allocating without limit.
const maxEpochEntries = 1 << 20

var errBadCheckpoint = errors.New("replica: malformed leader-epoch checkpoint")

// EpochCache is a partition's leader-epoch cache: the start offset of every
// leader epoch that wrote batches still in the log, in increasing order of
// both epoch and offset. It answers OffsetForLeaderEpoch and tells a
// follower where its log diverges from the leader's.
//
// Invariant: every epoch stamped on a batch in the log has an entry, so the
// cache is written (and persisted) before the batches that need it are
// appended; entries past the log end are cut by TruncateFromEnd, which Open
// also runs after a crash.
//
// Concurrency: a leaf mutex; methods are safe for concurrent use.
type EpochCache struct {
	mu sync.Mutex
	// log is the replica's log (the checkpoint is in its directory), or
	// the blank log of a never-written one (Replica.ownLog); nil: not
	// persisted (tests).
	log atomic.Pointer[wlog.Log]
	// list holds the entries (see entries); nil while there are none, as
	// for most replicas of never-written partitions, which then save the
	// slice header.
	list *[]EpochEntry
}

// entries are the entries, oldest first. c.mu held (or c not shared).
func (c *EpochCache) entries() []EpochEntry {
	if c.list == nil {
		return nil
	}
	return *c.list
}

// setEntries replaces the entries. c.mu held (or c not shared).
func (c *EpochCache) setEntries(es []EpochEntry) {
	switch {
	case len(es) == 0:
		c.list = nil
	case c.list == nil:
		c.list = &es
	default:
		*c.list = es
	}
}

// openEpochCache loads the checkpoint in l's directory. ok is false when
// the file is missing or does not decode; the caller then rebuilds the
// cache from the log.
func openEpochCache(l *wlog.Log) (*EpochCache, bool, error) {
	c := &EpochCache{}
	ok, err := c.load(l)
	if err != nil {
		return nil, false, err
	}
	return c, ok, nil
}

// load is openEpochCache into c, which a Replica holds by value.
func (c *EpochCache) load(l *wlog.Log) (bool, error) {
	c.log.Store(l)
	b, err := os.ReadFile(filepath.Join(l.Dir(), epochCheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	entries, err := decodeEpochCheckpoint(b)
	if err != nil {
		return false, nil
	}
	c.setEntries(entries)
	return true, nil
}

// Entries returns a copy of the entries, oldest first.
func (c *EpochCache) Entries() []EpochEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]EpochEntry(nil), c.entries()...)
}

// Latest returns the newest entry; ok is false when the cache is empty.
func (c *EpochCache) Latest() (EpochEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := c.entries()
	if len(es) == 0 {
		return EpochEntry{}, false
	}
	return es[len(es)-1], true
}

// Assign records that epoch starts at startOffset. As in Kafka, nothing
// changes when the newest entry already has this epoch at an offset no
// later than startOffset; otherwise every entry with an epoch >= epoch or
// a start offset >= startOffset is replaced by the new one. Negative
// epochs (batches written without a leader epoch) are ignored.
func (c *EpochCache) Assign(epoch int32, startOffset int64) error {
	if epoch < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	es := c.entries()
	if n := len(es); n > 0 {
		last := es[n-1]
		if last.Epoch == epoch && last.StartOffset <= startOffset {
			return nil
		}
	}
	keep := len(es)
	for keep > 0 && (es[keep-1].Epoch >= epoch || es[keep-1].StartOffset >= startOffset) {
		keep--
	}
	c.setEntries(append(es[:keep:keep], EpochEntry{Epoch: epoch, StartOffset: startOffset}))
	return c.persistLocked()
}

// empty reports whether the cache holds no entry.
func (c *EpochCache) empty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list == nil
}

// assignFirst records that epoch starts at the log end when the cache
// holds no entry: the entry a leader of a never-written log holds
// implied until its first append (Replica.BecomeLeader).
func (c *EpochCache) assignFirst(epoch int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list != nil {
		return nil
	}
	c.setEntries([]EpochEntry{{Epoch: epoch, StartOffset: c.log.Load().EndOffset()}})
	return c.persistLocked()
}

// TruncateFromEnd removes the entries of epochs that start at or after
// endOffset: the log was truncated to endOffset.
func (c *EpochCache) TruncateFromEnd(endOffset int64) error {
	if endOffset < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	es := c.entries()
	keep := len(es)
	for keep > 0 && es[keep-1].StartOffset >= endOffset {
		keep--
	}
	if keep == len(es) {
		return nil
	}
	c.setEntries(es[:keep:keep])
	return c.persistLocked()
}

// TruncateFromStart drops the entries wholly below startOffset, the new
// log start offset; the epoch that holds startOffset keeps its entry,
// moved up to startOffset.
func (c *EpochCache) TruncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := c.entries()
	if len(es) == 0 || es[0].StartOffset >= startOffset {
		return nil
	}
	// floor is the last entry starting at or below startOffset.
	floor := sort.Search(len(es), func(i int) bool { return es[i].StartOffset > startOffset }) - 1
	c.setEntries(append([]EpochEntry{{Epoch: es[floor].Epoch, StartOffset: startOffset}}, es[floor+1:]...))
	return c.persistLocked()
}

// EndOffsetFor answers OffsetForLeaderEpoch for requested, exactly as
// Kafka's cache does, given the log end offset leo:
//
//   - requested is UNDEFINED (-1), or newer than every known epoch:
//     (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
//   - requested is the newest epoch: (requested, leo), the epoch is still
//     being written to;
//   - requested is older than every known epoch: (requested, start offset
//     of the first epoch);
//   - otherwise: the largest known epoch <= requested, ending where the
//     next known epoch starts.
func (c *EpochCache) EndOffsetFor(requested int32, leo int64) (epoch int32, endOffset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return endOffsetIn(c.entries(), requested, leo)
}

// endOffsetIn is EndOffsetFor over the entries es.
func endOffsetIn(es []EpochEntry, requested int32, leo int64) (epoch int32, endOffset int64) {
	n := len(es)
	if requested == UndefinedEpoch || n == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if es[n-1].Epoch == requested {
		return requested, leo
	}
	higher := sort.Search(n, func(i int) bool { return es[i].Epoch > requested })
	if higher == n {
		return UndefinedEpoch, UndefinedOffset
	}
	if higher == 0 {
		return requested, es[0].StartOffset
	}
	return es[higher-1].Epoch, es[higher].StartOffset
}

// reset replaces the entries (rebuild from the log) and persists them.
func (c *EpochCache) reset(entries []EpochEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setEntries(entries)
	return c.persistLocked()
}

// restore sets the entries without writing the checkpoint: what the log
// already says.
func (c *EpochCache) restore(entries []EpochEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setEntries(entries)
}

// persistLocked writes the checkpoint. c.mu held, so checkpoints land in
// the order the cache changed.
func (c *EpochCache) persistLocked() error {
	l := c.log.Load()
	if l == nil {
		return nil
	}
	// The log builds the path of a never-written lazy log only when
	// asked, so the cache holds no copy of it.
	dir := l.Dir()
	if _, err := os.Stat(dir); dir == "" || errors.Is(err, os.ErrNotExist) {
		// A lazy log not written yet (internal/log Options.Lazy): there
		// is nothing the entries could describe. The next change after
		// the first append writes the file; a crash before that finds
		// batches without a checkpoint, which Open rebuilds from.
		return nil
	}
	if err := replaceFile(dir, epochCheckpointFile, encodeEpochCheckpoint(c.entries())); err != nil {
		return fmt.Errorf("replica: leader-epoch checkpoint: %w", err)
	}
	return nil
}

// encodeEpochCheckpoint writes the text format: a version line "v1", the
// entry count, then one "epoch startOffset" line per entry.
func encodeEpochCheckpoint(entries []EpochEntry) []byte {
	b := fmt.Appendf(nil, "v1\n%d\n", len(entries))
	for _, e := range entries {
		b = fmt.Appendf(b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b
}

// decodeEpochCheckpoint parses a checkpoint; it never panics and rejects
// anything but a well-formed file with strictly increasing epochs and
// offsets.
func decodeEpochCheckpoint(b []byte) ([]EpochEntry, error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) < 3 || lines[0] != "v1" || lines[len(lines)-1] != "" {
		return nil, errBadCheckpoint
	}
	lines = lines[:len(lines)-1]
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n > maxEpochEntries || n != len(lines)-2 {
		return nil, errBadCheckpoint
	}
	entries := make([]EpochEntry, 0, n)
	for _, line := range lines[2:] {
		es, offs, ok := strings.Cut(line, " ")
		if !ok {
			return nil, errBadCheckpoint
		}
		epoch, err1 := strconv.ParseInt(es, 10, 32)
		off, err2 := strconv.ParseInt(offs, 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return nil, errBadCheckpoint
		}
		e := EpochEntry{Epoch: int32(epoch), StartOffset: off}
		if k := len(entries); k > 0 && (entries[k-1].Epoch >= e.Epoch || entries[k-1].StartOffset >= e.StartOffset) {
			return nil, errBadCheckpoint
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// replaceFile replaces dir/name with b atomically and durably: a
// temporary file is written and fsynced, renamed over the old one, and the
// directory is fsynced so the rename survives a crash.
func replaceFile(dir, name string, b []byte) error {
	// Written without fsync: on every leader election of every partition
	// an fsync of the file and its directory cost more than the election
	// (bench/results/kip951-overlay-*). After a crash the file is the old
	// one or the new one (rename is atomic) and may lag the log, which
	// Open repairs from the batch headers (extendFromLog).
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
