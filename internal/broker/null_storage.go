package broker

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
	"weir/internal/splice"
)

// nullBatch is a partition's template in NullStorage mode (a benchmarking
// mode measuring the ceiling of a client and loopback, never for data):
// a copy of the produced batch holding the most records, which consumer
// fetches repeat with their base offsets rewritten.
type nullBatch struct {
	batch   []byte
	records int64
}

// keepNullBatch keeps a copy of batch, holding n records, as p's template
// unless the template holds as many already. The copy carries p's leader
// epoch as a stored batch would.
func (p *partition) keepNullBatch(batch []byte, n int64) {
	if cur := p.nullBatch.Load(); cur != nil && cur.records >= n {
		return
	}
	c := slices.Clone(batch)
	binary.BigEndian.PutUint32(c[12:16], uint32(p.leaderEpoch.Load()))
	p.nullBatch.Store(&nullBatch{batch: c, records: n})
}

// readNullPartition answers one partition of a consumer's fetch in
// NullStorage mode, where nothing was stored: from the fetch offset up to
// the offsets produce handed out, it repeats the partition's template
// batch with the base offset rewritten (the CRC does not cover it), within
// the byte budget (the first partition with data may exceed it by one
// batch, as for a stored log). The last batch may run past the offsets
// handed out by less than one batch; a fetch at or past them reads
// nothing. The load is served from memory, so what a consumer reaches
// here is its own ceiling on this machine.
func readNullPartition(p *partition, rp *fetchsession.PartitionData, sp *kmsg.FetchResponseTopicPartition, budget int64, first bool) (int16, *splice.Part) {
	if code := checkLeaderEpoch(p, rp.LeaderEpoch); code != 0 {
		return code, nil
	}
	end := p.nullEnd.Load()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = end, end, 0
	if rp.FetchOffset < 0 {
		return kerr.OffsetOutOfRange.Code, nil
	}
	sp.RecordBatches = []byte{}
	t := p.nullBatch.Load()
	limit := min(int64(rp.MaxBytes), budget)
	if t == nil || rp.FetchOffset >= end || (limit <= 0 && !first) {
		return 0, nil
	}
	size := int64(len(t.batch))
	n := min((end-rp.FetchOffset+t.records-1)/t.records, limit/size)
	if n <= 0 && first {
		n = 1
	}
	if n <= 0 {
		return 0, nil
	}
	// Each batch goes out as its own 8-byte base offset followed by the
	// template's remainder, shared: the writev gathers them, so serving
	// a fetch copies nothing in user space, as sendfile does for a log.
	offsets := make([]byte, 8*n)
	fr := &splice.Part{Marker: splice.NewMarker(), Pieces: make([]splice.Piece, 0, 2*n), Size: n * size}
	for i := range n {
		o := offsets[8*i : 8*i+8]
		binary.BigEndian.PutUint64(o, uint64(rp.FetchOffset+i*t.records))
		fr.Pieces = append(fr.Pieces, splice.Piece{Bytes: o}, splice.Piece{Bytes: t.batch[8:]})
	}
	sp.RecordBatches = fr.Marker[:]
	return 0, fr
}
