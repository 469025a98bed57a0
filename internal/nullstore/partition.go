package nullstore

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"weir/internal/splice"
)

// Partition is one partition in null-storage mode. The zero value has
// handed out no offsets and holds no template.
type Partition struct {
	end     atomic.Int64
	tmpl    atomic.Pointer[Template]
	keep    *os.File // Writing's file, nil when nothing is kept
	keepErr error    // why Writing could not open it
}

// Writing is a Partition that also keeps every produced batch's bytes
// in the file at path (created, or appended to), written and never
// synced: a baseline that pays what putting the bytes in the page cache
// costs this machine, and nothing else a log does (no validation,
// index, offsets in the file or reads from it). Close closes the file.
// The directory is made if missing. If the file cannot be opened, Err
// says why and every Keep fails with it.
func Writing(path string) *Partition {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return &Partition{keepErr: err}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return &Partition{keepErr: err}
	}
	return &Partition{keep: f}
}

// Err is why Writing could not open its file, nil otherwise.
func (p *Partition) Err() error { return p.keepErr }

// Keep writes batch to the Writing file; it does nothing on a
// Partition that keeps nothing. Concurrent calls each append whole
// (the file is opened O_APPEND).
func (p *Partition) Keep(batch []byte) error {
	if p.keep == nil {
		return p.keepErr
	}
	_, err := p.keep.Write(batch)
	return err
}

// Close closes the Writing file, if any; Keep fails afterwards.
func (p *Partition) Close() error {
	if p.keep == nil {
		return nil
	}
	return p.keep.Close()
}

// Template is the batch a partition's fetches repeat: a copy of the
// produced batch holding the most records. It is never modified.
type Template struct {
	Batch   []byte
	Records int64
}

// leaderEpochAt is where a v2 record batch holds its partition leader
// epoch, after the base offset and the length.
const leaderEpochAt = 12

// Append hands out records offsets to a produced batch and returns the
// first and last of them. It keeps a copy of batch, stamped with
// leaderEpoch, as the template unless the template holds as many
// records already. batch must be exactly one v2 record batch, its
// header checked.
func (p *Partition) Append(batch []byte, records int64, leaderEpoch int32) (base, last int64) {
	last = p.end.Add(records) - 1
	if cur := p.tmpl.Load(); cur == nil || cur.Records < records {
		c := slices.Clone(batch)
		binary.BigEndian.PutUint32(c[leaderEpochAt:leaderEpochAt+4], uint32(leaderEpoch))
		p.tmpl.Store(&Template{Batch: c, Records: records})
	}
	return last - records + 1, last
}

// End is the offset the next produced record gets: the high watermark,
// last stable offset and log end a fetch answers with.
func (p *Partition) End() int64 { return p.end.Load() }

// Template is the batch fetches repeat, nil before the first produce.
func (p *Partition) Template() *Template { return p.tmpl.Load() }

// Read is what a fetch reads of a partition.
type Read struct {
	// End is the partition's End when it was read.
	End int64
	// Part is the records, nil when there is nothing to read: for each
	// batch a piece of its base offset (8 bytes) and a piece of the
	// template's remainder, which every batch shares.
	Part *splice.Part
}

// Read reads from offset up to the offsets handed out, in whole
// template batches, within limit bytes, except that the first partition
// of a response with data (first) gets one batch over the limit as a
// stored log would answer. The last batch may run past the offsets
// handed out by less than one batch; a read at or past them reads
// nothing. ok is false for a negative offset: Kafka's
// OFFSET_OUT_OF_RANGE.
func (p *Partition) Read(offset, limit int64, first bool) (r Read, ok bool) {
	r.End = p.end.Load()
	if offset < 0 {
		return r, false
	}
	t := p.tmpl.Load()
	if t == nil || offset >= r.End || (limit <= 0 && !first) {
		return r, true
	}
	size := int64(len(t.Batch))
	n := min((r.End-offset+t.Records-1)/t.Records, limit/size)
	if n <= 0 && first {
		n = 1
	}
	if n <= 0 {
		return r, true
	}
	offsets := make([]byte, 8*n)
	r.Part = &splice.Part{Marker: splice.NewMarker(), Pieces: make([]splice.Piece, 0, 2*n), Size: n * size}
	for i := range n {
		o := offsets[8*i : 8*i+8]
		binary.BigEndian.PutUint64(o, uint64(offset+i*t.Records))
		r.Part.Pieces = append(r.Part.Pieces, splice.Piece{Bytes: o}, splice.Piece{Bytes: t.Batch[8:]})
	}
	return r, true
}
