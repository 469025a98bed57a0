package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// indexEntry marks the start of one batch in a segment: the batch's base
// offset relative to the segment, its byte position, and the largest batch
// max timestamp of every batch before it (so a timestamp search can skip
// straight to the first batch that may hold a later timestamp).
type indexEntry struct {
	rel      uint32
	pos      uint32
	maxTsBef int64
}

const (
	offsetEntrySize = 8  // rel uint32, pos uint32
	timeEntrySize   = 16 // maxTsBefore int64, rel uint32, pos uint32
)

// index is a segment's sparse index, kept in memory and written to the
// .index and .timeindex files when the segment is flushed or sealed.
//
// Readers copy the slice header under the log lock and then read without
// it: entries below a published length are never written again (truncation
// replaces the backing array instead of shrinking it in place).
type index struct {
	entries []indexEntry
	// aborted is the segment's aborted-transaction index (txnindex.go),
	// under the same rule: appended to, never rewritten below a published
	// length.
	aborted []AbortedTxn
}

// floor returns the last entry whose relative offset is <= rel, or false.
func floorEntry(entries []indexEntry, rel uint32) (indexEntry, bool) {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].rel > rel })
	if i == 0 {
		return indexEntry{}, false
	}
	return entries[i-1], true
}

// floorTime returns the last entry whose maxTsBef is < ts: every batch
// before its position has timestamps below ts.
func floorTime(entries []indexEntry, ts int64) (indexEntry, bool) {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].maxTsBef >= ts })
	if i == 0 {
		return indexEntry{}, false
	}
	return entries[i-1], true
}

// truncateAt drops entries at or past position pos, copying so that
// readers holding the old slice never see it change.
func (ix *index) truncateAt(pos uint32) {
	n := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].pos >= pos })
	kept := make([]indexEntry, n, n+64)
	copy(kept, ix.entries[:n])
	ix.entries = kept
}

func (ix *index) encodeOffsets() []byte {
	b := make([]byte, 0, len(ix.entries)*offsetEntrySize)
	for _, e := range ix.entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	return b
}

func (ix *index) encodeTimes() []byte {
	b := make([]byte, 0, len(ix.entries)*timeEntrySize)
	for _, e := range ix.entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.maxTsBef))
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	return b
}

var errStaleIndex = errors.New("log: index does not match its segment")

// loadIndex reads a segment's index files and checks them against the
// segment: same entries in both files, strictly increasing offsets and
// positions, every position inside the log file. Anything else is stale
// and the caller rebuilds the index by scanning the segment.
func loadIndex(offPath, timePath string, logSize int64) (index, error) {
	ob, err := os.ReadFile(offPath)
	if err != nil {
		return index{}, err
	}
	tb, err := os.ReadFile(timePath)
	if err != nil {
		return index{}, err
	}
	if len(ob)%offsetEntrySize != 0 || len(tb)%timeEntrySize != 0 || len(ob)/offsetEntrySize != len(tb)/timeEntrySize {
		return index{}, fmt.Errorf("%w: sizes %d and %d", errStaleIndex, len(ob), len(tb))
	}
	n := len(ob) / offsetEntrySize
	ix := index{entries: make([]indexEntry, n, n+64)}
	for i := range n {
		e := indexEntry{
			rel: binary.BigEndian.Uint32(ob[i*offsetEntrySize:]),
			pos: binary.BigEndian.Uint32(ob[i*offsetEntrySize+4:]),
		}
		t := tb[i*timeEntrySize:]
		e.maxTsBef = int64(binary.BigEndian.Uint64(t))
		if binary.BigEndian.Uint32(t[8:]) != e.rel || binary.BigEndian.Uint32(t[12:]) != e.pos {
			return index{}, fmt.Errorf("%w: entry %d differs between files", errStaleIndex, i)
		}
		if int64(e.pos) >= logSize {
			return index{}, fmt.Errorf("%w: entry %d points past the log", errStaleIndex, i)
		}
		if i > 0 {
			p := ix.entries[i-1]
			if e.rel <= p.rel || e.pos <= p.pos || e.maxTsBef < p.maxTsBef {
				return index{}, fmt.Errorf("%w: entry %d out of order", errStaleIndex, i)
			}
		}
		ix.entries[i] = e
	}
	return ix, nil
}
