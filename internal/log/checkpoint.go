package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkpointFile holds, in one line of text, the recovery point (every
// batch below it was fsynced, so recovery trusts it without checking CRCs),
// the log start offset (raised by retention and DeleteRecords) and, from
// version 2, the high watermark the replica last noted (-1: none), so that
// a restarted replica does not take its log end for committed. Version 1
// lines (no high watermark) are still read.
const checkpointFile = "checkpoint"

type checkpoint struct {
	recoveryPoint  int64
	logStartOffset int64
	highWatermark  int64 // -1 when unknown
}

func readCheckpoint(dir string) (checkpoint, bool) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		return checkpoint{}, false
	}
	return parseCheckpoint(b)
}

// parseCheckpoint decodes a checkpoint line; it never panics.
func parseCheckpoint(b []byte) (checkpoint, bool) {
	fields := strings.Fields(string(b))
	var want int
	switch {
	case len(fields) == 3 && fields[0] == "v1":
		want = 3
	case len(fields) == 4 && fields[0] == "v2":
		want = 4
	default:
		return checkpoint{}, false
	}
	n := make([]int64, 0, 3)
	for _, f := range fields[1:want] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return checkpoint{}, false
		}
		n = append(n, v)
	}
	c := checkpoint{recoveryPoint: n[0], logStartOffset: n[1], highWatermark: -1}
	if want == 4 {
		c.highWatermark = n[2]
	}
	if c.recoveryPoint < 0 || c.logStartOffset < 0 || c.highWatermark < -1 {
		return checkpoint{}, false
	}
	return c, true
}

func (c checkpoint) encode() []byte {
	return fmt.Appendf(nil, "v2 %d %d %d\n", c.recoveryPoint, c.logStartOffset, c.highWatermark)
}

// writeCheckpoint replaces the checkpoint atomically.
func writeCheckpoint(dir string, c checkpoint) error {
	return WriteFileAtomic(filepath.Join(dir, checkpointFile), c.encode())
}

// WriteFileAtomic replaces the file at path so that a crash leaves the
// old content or the new: write a temporary file, fsync it, rename it
// over the old one, fsync the directory.
func WriteFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := writeFileSync(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
