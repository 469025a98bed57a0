package broker

import (
	"fmt"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
	"weir/internal/nullstore"
	"weir/internal/splice"
)

// readNullPartition answers one partition of a consumer's fetch in
// NullStorage mode (internal/nullstore), where nothing was stored: the
// partition's template batch repeated from the fetch offset up to the
// offsets produce handed out, within the byte budget, gathered by the
// writev that sends the answer. The load is served from memory, so what
// a consumer reaches here is its own ceiling on this machine.
func readNullPartition(null *nullstore.Partition, p *partition, rp *fetchsession.PartitionData, sp *kmsg.FetchResponseTopicPartition, budget int64, first bool) (int16, *splice.Part) {
	if code := checkLeaderEpoch(p, rp.LeaderEpoch); code != 0 {
		return code, nil
	}
	rd, ok := null.Read(rp.FetchOffset, min(int64(rp.MaxBytes), budget), first)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rd.End, rd.End, 0
	if !ok {
		return kerr.OffsetOutOfRange.Code, nil
	}
	sp.RecordBatches = []byte{}
	if rd.Part != nil {
		sp.RecordBatches = rd.Part.Marker[:]
	}
	return 0, rd.Part
}

// openNull makes p's store in NullStorage mode, with NullStorageWrite
// one that writes to DataDir/null-storage/<topic>-<partition>. If that
// file cannot be opened, the store refuses every produce
// (KAFKA_STORAGE_ERROR) rather than measure nothing.
func (b *Broker) openNull(p *partition) {
	null := new(nullstore.Partition)
	if b.cfg.NullStorageWrite {
		dir := filepath.Join(b.cfg.DataDir, "null-storage")
		null = nullstore.Writing(filepath.Join(dir, fmt.Sprintf("%s-%d", p.topic.name, p.index)))
		if err := null.Err(); err != nil {
			b.logger.Error("null storage: cannot open the file produced batches are written to", "topic", p.topic.name, "partition", p.index, "err", err)
		}
	}
	b.nulls.Store(p, null)
}

// closeNulls closes every NullStorageWrite file at shutdown.
func (b *Broker) closeNulls() {
	b.nulls.Range(func(_, v any) bool { v.(*nullstore.Partition).Close(); return true })
}

// nullOf is p's store in NullStorage mode, made when its replica opened.
func (b *Broker) nullOf(p *partition) *nullstore.Partition {
	v, _ := b.nulls.Load(p)
	return v.(*nullstore.Partition)
}
