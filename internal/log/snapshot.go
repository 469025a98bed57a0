package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Producer state snapshots. A roll and Close write the producer state as
// of the log end to NNNN….snapshot (the offset zero padded to 20 digits,
// as segments are named), so that recovery replays only the batches after
// the newest usable one instead of the whole log (Kafka's .snapshot files;
// the encoding of the state inside is the ProducerState's own). The
// file: version int16 (1), CRC-32C uint32 of everything after it, the
// offset int64 (it must match the name), the state. Snapshots below the
// first segment or past the log end are deleted at recovery, rolls,
// truncation and retention; a file that fails its checks is skipped.
const (
	snapshotSuffix     = ".snapshot"
	snapshotVersion    = 1
	snapshotHeaderSize = 2 + 4 + 8
	snapshotMaxSize    = 256 << 20
)

var errBadSnapshot = errors.New("log: producer snapshot does not check out")

func snapshotPath(dir string, offset int64) string {
	return segmentPrefix(dir, offset) + snapshotSuffix
}

func encodeSnapshot(offset int64, state []byte) []byte {
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(state))
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint64(b[6:], uint64(offset))
	b = append(b, state...)
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeSnapshot checks a snapshot file's framing and returns the state
// inside. It never panics.
func decodeSnapshot(b []byte, offset int64) ([]byte, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", errBadSnapshot, len(b))
	}
	if v := binary.BigEndian.Uint16(b); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errBadSnapshot, v)
	}
	if crc32.Checksum(b[6:], castagnoli) != binary.BigEndian.Uint32(b[2:]) {
		return nil, fmt.Errorf("%w: CRC mismatch", errBadSnapshot)
	}
	if got := int64(binary.BigEndian.Uint64(b[6:])); got != offset {
		return nil, fmt.Errorf("%w: holds offset %d, named %d", errBadSnapshot, got, offset)
	}
	return b[snapshotHeaderSize:], nil
}

func readSnapshot(dir string, offset int64) ([]byte, error) {
	path := snapshotPath(dir, offset)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > snapshotMaxSize {
		return nil, fmt.Errorf("%w: %d bytes", errBadSnapshot, fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeSnapshot(b, offset)
}

// writeSnapshot replaces the snapshot at offset: a temporary file renamed
// over it, fsynced (file and directory) when sync is set.
func writeSnapshot(dir string, offset int64, state []byte, sync bool) error {
	path := snapshotPath(dir, offset)
	tmp := path + tmpSuffix
	b := encodeSnapshot(offset, state)
	var err error
	if sync {
		err = writeFileSync(tmp, b)
	} else {
		err = os.WriteFile(tmp, b, 0o644)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if sync {
		return syncDir(dir)
	}
	return nil
}

// listSnapshots returns the offsets of the snapshot files in dir, in
// increasing order.
func listSnapshots(dir string) []int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	return snapshotsIn(entries)
}

// snapshotsIn returns the offsets of the snapshot files among entries, in
// increasing order.
func snapshotsIn(entries []os.DirEntry) []int64 {
	var out []int64
	for _, e := range entries {
		if off, ok := parseSnapshotName(e.Name()); ok {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func parseSnapshotName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, snapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil && off >= 0
}

// removeSnapshotsOutside deletes snapshots below lo or past hi.
func removeSnapshotsOutside(dir string, lo, hi int64) { cleanDir(dir, lo, hi, false) }

// cleanDir deletes snapshots below lo or past hi and, with temps, the
// temporary snapshot and aborted-transaction index files a crash left
// behind. Only recovery may ask for temps: while the log runs, a flush
// may be about to rename one.
func cleanDir(dir string, lo, hi int64, temps bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	cleanEntries(dir, entries, lo, hi, temps)
}

// cleanEntries is cleanDir over entries read from dir.
func cleanEntries(dir string, entries []os.DirEntry, lo, hi int64, temps bool) {
	for _, e := range entries {
		name := e.Name()
		off, ok := parseSnapshotName(name)
		stale := ok && (off < lo || off > hi)
		temp := temps && (strings.HasSuffix(name, snapshotSuffix+tmpSuffix) || strings.HasSuffix(name, txnIndexSuffix+tmpSuffix))
		if stale || temp {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}
