package scenario

// ledger records which (partition, offset) pairs were delivered, to tell
// distinct deliveries from redeliveries. One bit per offset: 250 KB for two
// million records.
type ledger struct {
	seen                [][]uint64
	counts              []int64 // distinct offsets per partition
	distinct, duplicate int64
}

func newLedger(partitions int) *ledger {
	return &ledger{seen: make([][]uint64, partitions), counts: make([]int64, partitions)}
}

// add notes a delivery and reports whether it was the first of that record.
func (l *ledger) add(partition int32, offset int64) bool {
	if partition < 0 || offset < 0 {
		return false
	}
	for int(partition) >= len(l.seen) {
		l.seen = append(l.seen, nil)
		l.counts = append(l.counts, 0)
	}
	words := l.seen[partition]
	w := int(offset / 64)
	if w >= len(words) {
		words = append(words, make([]uint64, w+1-len(words)+len(words)/2)...)
		l.seen[partition] = words
	}
	bit := uint64(1) << (offset % 64)
	if words[w]&bit != 0 {
		l.duplicate++
		return false
	}
	words[w] |= bit
	l.distinct++
	l.counts[partition]++
	return true
}

// distinctOf is the distinct offsets seen on partition.
func (l *ledger) distinctOf(partition int32) int64 {
	if partition < 0 || int(partition) >= len(l.counts) {
		return 0
	}
	return l.counts[partition]
}
