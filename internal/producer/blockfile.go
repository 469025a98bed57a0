package producer

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// BlockFileName is the file in which a FileReserver keeps its high-water
// mark.
const BlockFileName = "producer-id-block"

const blockFileHeader = "weir producer id block v1"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// FileReserver reserves producer id blocks for a single node, persisting
// the high-water mark (the first id not yet reserved) in a directory. A
// reservation is durable before it is returned: the new mark is written to
// a temporary file, fsynced, renamed over the old one and the directory
// fsynced, so a crash at any point leaves either the old mark or the new
// one, and never lets an id be reserved twice. A multi-node cluster needs
// a Reserver backed by the controller instead, so that nodes do not share
// ids. FileReserver is safe for concurrent use.
type FileReserver struct {
	path string
	mu   sync.Mutex
	next int64
}

// OpenFileReserver opens the reserver kept in dir, creating dir if needed.
// A missing file starts at id 0; a file that does not parse is an error,
// never a silent restart at 0 that would reuse ids.
func OpenFileReserver(dir string) (*FileReserver, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &FileReserver{path: filepath.Join(dir, BlockFileName)}
	_ = os.Remove(r.path + ".tmp") // left by a crash mid-write
	b, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return r, nil
	case err != nil:
		return nil, err
	}
	next, err := decodeBlockFile(b)
	if err != nil {
		return nil, fmt.Errorf("producer: %s: %w", r.path, err)
	}
	r.next = next
	return r, nil
}

// Reserve implements Reserver.
func (r *FileReserver) Reserve(n int64) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := checkBlock(r.next, n); err != nil {
		return 0, err
	}
	if err := r.persist(r.next + n); err != nil {
		return 0, fmt.Errorf("producer: persist id block: %w", err)
	}
	first := r.next
	r.next += n
	return first, nil
}

func (r *FileReserver) persist(next int64) error {
	tmp := r.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(encodeBlockFile(next)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(r.path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// The file is three lines of text: a header naming the format, the mark,
// and a CRC-32C of the first two lines.
func encodeBlockFile(next int64) []byte {
	body := fmt.Sprintf("%s\nnext %d\n", blockFileHeader, next)
	return fmt.Appendf(nil, "%scrc32c %08x\n", body, crc32.Checksum([]byte(body), crcTable))
}

func decodeBlockFile(b []byte) (int64, error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] != blockFileHeader {
		return 0, errors.New("not a producer id block file")
	}
	body := lines[0] + "\n" + lines[1] + "\n"
	if lines[2] != fmt.Sprintf("crc32c %08x", crc32.Checksum([]byte(body), crcTable)) {
		return 0, errors.New("checksum mismatch")
	}
	v, ok := strings.CutPrefix(lines[1], "next ")
	if !ok {
		return 0, errors.New("no high-water mark")
	}
	next, err := strconv.ParseInt(v, 10, 64)
	if err != nil || next < 0 {
		return 0, fmt.Errorf("bad high-water mark %q", v)
	}
	return next, nil
}
