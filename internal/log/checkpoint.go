package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkpointFile holds, in one line of text, the recovery point (every
// batch below it was fsynced, so recovery trusts it without checking CRCs)
// and the log start offset (raised by retention and DeleteRecords).
const checkpointFile = "checkpoint"

type checkpoint struct {
	recoveryPoint  int64
	logStartOffset int64
}

func readCheckpoint(dir string) (checkpoint, bool) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		return checkpoint{}, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 3 || fields[0] != "v1" {
		return checkpoint{}, false
	}
	rp, err1 := strconv.ParseInt(fields[1], 10, 64)
	ls, err2 := strconv.ParseInt(fields[2], 10, 64)
	if err1 != nil || err2 != nil || rp < 0 || ls < 0 {
		return checkpoint{}, false
	}
	return checkpoint{recoveryPoint: rp, logStartOffset: ls}, true
}

// writeCheckpoint replaces the checkpoint atomically: write a temporary
// file, fsync it, rename it over the old one, fsync the directory.
func writeCheckpoint(dir string, c checkpoint) error {
	tmp := filepath.Join(dir, checkpointFile+".tmp")
	if err := writeFileSync(tmp, fmt.Appendf(nil, "v1 %d %d\n", c.recoveryPoint, c.logStartOffset)); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, checkpointFile)); err != nil {
		return err
	}
	return syncDir(dir)
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
