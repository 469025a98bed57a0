package metadata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// A snapshot is an image written as the records that rebuild it:
//
//	magic "WEIRSNAP" | version u8 | varint offset | varint highest broker
//	epoch | uvarint record count | frames | uvarint 0
//
// Each frame is a uvarint length and a batch (EncodeBatch), so every
// chunk of records carries its own checksum and the reader never holds
// more than one frame. The records are, in order: RegisterBrokerRecord per
// broker (by id), TopicRecord and its PartitionRecords per topic (by
// name), ConfigRecord per config (by resource and key), one
// ProducerIDsRecord, AccessControlEntryRecord per ACL (by id),
// UserScramCredentialRecord per credential (by user and mechanism), and
// ClientQuotaRecord per quota (by entity and key). Loading applies them with the same checks as Apply,
// name), ConfigRecord per config (by resource and key), FeatureLevelRecord
// per finalized feature (by name), then one ProducerIDsRecord. Loading applies them with the same checks as Apply,
// so a snapshot cannot build an image that records could not.
const (
	snapshotMagic   = "WEIRSNAP"
	snapshotVersion = 0
	// snapshotFrameRecords is how many records one frame holds.
	snapshotFrameRecords = 4096
	// maxSnapshotFrame bounds one frame's length.
	maxSnapshotFrame = 64 << 20
)

// EachRecord calls fn with the records that rebuild img, in snapshot
// order, until fn returns an error, which it returns.
func (img *Image) EachRecord(fn func(Record) error) error {
	for _, b := range img.Brokers() {
		r := RegisterBrokerRecord(*b)
		r.Endpoints = slices.Clone(b.Endpoints)
		if err := fn(&r); err != nil {
			return err
		}
	}
	for _, t := range img.Topics() {
		if err := fn(&TopicRecord{Name: t.name, ID: t.id}); err != nil {
			return err
		}
		var err error
		t.EachPartition(func(p int32, s Partition) bool {
			err = fn(s.Record(t.id, p))
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	for _, res := range img.ConfigResources() {
		m, _ := img.configs.get(res)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := fn(&ConfigRecord{Resource: res.Type, Name: res.Name, Key: k, Value: m[k]}); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(img.features)) {
		if err := fn(&FeatureLevelRecord{Name: name, Level: img.features[name]}); err != nil {
			return err
		}
	}
	if img.nextPID > 0 {
		if err := fn(&ProducerIDsRecord{BrokerID: 0, BrokerEpoch: 0, Next: img.nextPID}); err != nil {
			return err
		}
	}
	return img.securityRecords(fn)
}

// numRecords is how many records EachRecord yields.
func (img *Image) numRecords() int {
	n := len(img.brokers) + img.topics.len() + img.partitions
	img.configs.each(func(_ ConfigResource, m map[string]string) bool { n += len(m); return true })
	n += len(img.features)
	if img.nextPID > 0 {
		n++
	}
	return n + img.numSecurityRecords()
}

// WriteSnapshot writes img to w. Images are immutable, so it may run
// while the owner goes on applying batches to newer images.
func WriteSnapshot(w io.Writer, img *Image) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	hdr := append([]byte(snapshotMagic), snapshotVersion)
	hdr = binary.AppendVarint(hdr, img.offset)
	hdr = binary.AppendVarint(hdr, img.brokerEpoch)
	hdr = binary.AppendUvarint(hdr, uint64(img.numRecords()))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	var (
		frame []Record
		buf   []byte
	)
	flush := func() error {
		buf = AppendBatch(buf[:0], frame)
		frame = frame[:0]
		var n [binary.MaxVarintLen64]byte
		if _, err := bw.Write(n[:binary.PutUvarint(n[:], uint64(len(buf)))]); err != nil {
			return err
		}
		_, err := bw.Write(buf)
		return err
	}
	err := img.EachRecord(func(r Record) error {
		frame = append(frame, r)
		if len(frame) == snapshotFrameRecords {
			return flush()
		}
		return nil
	})
	if err == nil && len(frame) > 0 {
		err = flush()
	}
	if err != nil {
		return err
	}
	if err := bw.WriteByte(0); err != nil {
		return err
	}
	return bw.Flush()
}

// ReadSnapshot loads an image written by WriteSnapshot. It reads r to its
// end, which must follow the last frame. Whatever the bytes, it returns
// an error rather than panic or build an image records could not.
func ReadSnapshot(r io.Reader) (*Image, error) {
	src := &ioErrReader{r: r}
	br := bufio.NewReaderSize(src, 1<<16)
	snapshotErr := func(err error) error {
		if src.err != nil {
			return fmt.Errorf("metadata: reading snapshot: %w", src.err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: snapshot truncated", ErrCorrupt)
		}
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	magic := make([]byte, len(snapshotMagic)+1)
	if _, err := io.ReadFull(br, magic); err != nil {
		return nil, snapshotErr(err)
	}
	if string(magic[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	if magic[len(snapshotMagic)] != snapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d", ErrUnsupportedVersion, magic[len(snapshotMagic)])
	}
	offset, err1 := binary.ReadVarint(br)
	epoch, err2 := binary.ReadVarint(br)
	count, err3 := binary.ReadUvarint(br)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, snapshotErr(err)
	}
	if offset < -1 || epoch < 0 {
		return nil, fmt.Errorf("%w: snapshot offset %d, broker epoch %d", ErrCorrupt, offset, epoch)
	}
	b := NewBuilder(Empty())
	var (
		seen  uint64
		frame bytes.Buffer
	)
	for {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, snapshotErr(err)
		}
		if n == 0 {
			break
		}
		if n > maxSnapshotFrame {
			return nil, fmt.Errorf("%w: snapshot frame of %d bytes", ErrCorrupt, n)
		}
		frame.Reset()
		// CopyN grows the buffer as bytes arrive: a lying length costs
		// no more memory than the bytes really there.
		if _, err := io.CopyN(&frame, br, int64(n)); err != nil {
			return nil, snapshotErr(err)
		}
		recs, err := DecodeBatch(frame.Bytes())
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if err := loadRecord(b, rec); err != nil {
				return nil, fmt.Errorf("snapshot record %d: %w", seen, err)
			}
			seen++
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: bytes after the snapshot's last frame", ErrCorrupt)
	}
	if seen != count {
		return nil, fmt.Errorf("%w: snapshot holds %d records, its header says %d", ErrCorrupt, seen, count)
	}
	if epoch < b.img.brokerEpoch {
		return nil, fmt.Errorf("%w: snapshot broker epoch %d is below a registration's %d", ErrCorrupt, epoch, b.img.brokerEpoch)
	}
	b.img.offset, b.img.brokerEpoch = offset, epoch
	return b.Image(), nil
}

// loadRecord applies a snapshot record: only the kinds a snapshot holds.
func loadRecord(b *Builder, r Record) error {
	switch r := r.(type) {
	case *RegisterBrokerRecord, *TopicRecord, *PartitionRecord, *ProducerIDsRecord,
		*AccessControlEntryRecord, *UserScramCredentialRecord, *FeatureLevelRecord:
	case *ConfigRecord:
		if r.Delete {
			return fmt.Errorf("%w: config deletion in a snapshot", ErrInvalidRecord)
		}
	case *ClientQuotaRecord:
		if r.Remove {
			return fmt.Errorf("%w: client quota removal in a snapshot", ErrInvalidRecord)
		}
	default:
		return fmt.Errorf("%w: %s record in a snapshot", ErrInvalidRecord, r.Kind())
	}
	return b.Apply(r)
}

// ioErrReader remembers the first error of the underlying reader other
// than io.EOF, to tell a failing disk from a corrupt snapshot.
type ioErrReader struct {
	r   io.Reader
	err error
}

func (e *ioErrReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}
