package log

import (
	"io"
)

// TimestampResult is the answer to a timestamp lookup (ListOffsets).
type TimestampResult struct {
	Offset    int64
	Timestamp int64
	Found     bool
}

// OffsetForTimestamp finds the first record whose timestamp is at or after
// ts, below maxOffset (the high watermark). Found is false when there is
// none; Kafka then answers offset -1.
func (l *Log) OffsetForTimestamp(ts, maxOffset int64) (TimestampResult, error) {
	views, logStart := l.views()
	defer unpinViews(views)
	for _, v := range views {
		if v.base >= maxOffset {
			break
		}
		start := int64(0)
		if e, ok := floorTime(v.entries, ts); ok {
			start = int64(e.pos)
		}
		res, err := v.firstRecordAtOrAfter(start, ts, maxOffset, logStart)
		if err != nil || res.Found {
			return res, err
		}
	}
	return TimestampResult{Offset: -1, Timestamp: -1}, nil
}

// MaxTimestamp finds the first record carrying the largest timestamp in the
// log below maxOffset (ListOffsets with timestamp -3, KIP-734).
func (l *Log) MaxTimestamp(maxOffset int64) (TimestampResult, error) {
	views, logStart := l.views()
	defer unpinViews(views)
	best := TimestampResult{Offset: -1, Timestamp: -1}
	var buf []byte
	for _, v := range views {
		var h header
		for pos := int64(0); ; pos += h.length {
			err := v.readHeader(pos, v.size, &h)
			if err == io.EOF {
				break
			}
			if err != nil {
				return best, err
			}
			if h.last >= maxOffset {
				return best, nil
			}
			if h.last < logStart || (best.Found && h.maxTs <= best.Timestamp) {
				continue
			}
			buf, err = readBatch(v, pos, h.length, buf)
			if err != nil {
				return best, err
			}
			r, err := recordAtOrAfter(buf, h.maxTs, logStart)
			if err != nil {
				return best, err
			}
			if r.Found {
				best = r
			}
		}
	}
	return best, nil
}

// views snapshots every segment for a read without the lock.
func (l *Log) views() ([]view, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]view, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.view()
	}
	return out, l.logStart
}

func readBatch(v view, pos, length int64, buf []byte) ([]byte, error) {
	if int64(cap(buf)) < length {
		buf = make([]byte, length)
	}
	buf = buf[:length]
	f, err := v.file()
	if err != nil {
		return buf, err
	}
	_, err = f.ReadAt(buf, pos)
	return buf, err
}

func (v *view) firstRecordAtOrAfter(pos, ts, maxOffset, logStart int64) (TimestampResult, error) {
	var h header
	var buf []byte
	for ; ; pos += h.length {
		err := v.readHeader(pos, v.size, &h)
		if err == io.EOF {
			return TimestampResult{}, nil
		}
		if err != nil {
			return TimestampResult{}, err
		}
		if h.last >= maxOffset {
			return TimestampResult{}, nil
		}
		if h.maxTs < ts || h.last < logStart {
			continue
		}
		buf, err = readBatch(*v, pos, h.length, buf)
		if err != nil {
			return TimestampResult{}, err
		}
		r, err := recordAtOrAfter(buf, ts, logStart)
		if err != nil || r.Found {
			return r, err
		}
	}
}

// recordAtOrAfter finds the first record of batch b at or past logStart
// whose timestamp is at least ts. LogAppendTime batches give every record
// the batch's max timestamp.
func recordAtOrAfter(b []byte, ts, logStart int64) (TimestampResult, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return TimestampResult{}, err
	}
	if h.LogAppendTime() {
		off := max(h.BaseOffset, logStart)
		if h.MaxTimestamp >= ts && off <= h.LastOffset() {
			return TimestampResult{Offset: off, Timestamp: h.MaxTimestamp, Found: true}, nil
		}
		return TimestampResult{}, nil
	}
	body := b[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		out, err := decompress(c, body)
		if err != nil {
			return TimestampResult{}, err
		}
		defer releaseBuffer(out)
		body = out.b
	}
	r := reader{b: body}
	for i := int32(0); i < h.NumRecords && !r.err; i++ {
		length := r.varint()
		end := r.p + int(length)
		if r.err || length < 0 || end > len(body) {
			break
		}
		rec := reader{b: body[:end], p: r.p}
		rec.skip(1)
		tsDelta := rec.varint()
		offDelta := rec.varint()
		r.p = end
		if rec.err {
			break
		}
		off := h.BaseOffset + offDelta
		if off >= logStart && h.BaseTimestamp+tsDelta >= ts {
			return TimestampResult{Offset: off, Timestamp: h.BaseTimestamp + tsDelta, Found: true}, nil
		}
	}
	return TimestampResult{}, nil
}
