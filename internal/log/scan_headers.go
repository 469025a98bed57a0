package log

import (
	"fmt"
	"os"
)

// scanWindow is how many bytes ScanHeaders reads at a time: enough to hold
// the headers of many small batches, so a log of small batches costs one
// read per window rather than one per batch.
const scanWindow = 64 << 10

// ScanHeaders calls fn with the header of every batch from the one holding
// offset from to the log end as of the call, in offset order, until fn
// returns false. A from below the log start offset starts at the log start.
// Only headers are read, never record data, and the headers are returned
// as stored (offsets and, for LogAppendTime topics, timestamps stamped by
// the broker).
//
// Like Read, it copies the segment views under the lock and reads the
// files without it, so appends proceed during a scan; batches appended
// after the call are not visited. A segment deleted by retention during
// the scan stays readable for FileDeleteDelay.
func (l *Log) ScanHeaders(from int64, fn func(BatchHeader) bool) error {
	vs, from, err := l.viewsFrom(from)
	if err != nil || len(vs) == 0 {
		return err
	}
	return scanViews(vs, from, false, func(h *BatchHeader, _ *Marker) bool { return fn(*h) })
}

// ScanMarkers is ScanHeaders that also decodes the transaction marker of
// every control batch (m is nil for data batches): what a replay of
// producer state, or a cleaner looking for markers, needs. Control
// batches are read whole; they are a few dozen bytes.
func (l *Log) ScanMarkers(from int64, fn func(h *BatchHeader, m *Marker) bool) error {
	vs, from, err := l.viewsFrom(from)
	if err != nil || len(vs) == 0 {
		return err
	}
	return scanViews(vs, from, true, fn)
}

// viewsFrom copies the views of the segments from the one holding from
// (raised to the log start) to the end; none when from is at the end.
func (l *Log) viewsFrom(from int64) ([]view, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() {
		return nil, from, ErrClosed
	}
	from = max(from, l.logStart)
	if from >= l.leo {
		return nil, from, nil
	}
	i := l.segmentFor(from)
	vs := make([]view, 0, len(l.segs)-i)
	for _, s := range l.segs[i:] {
		vs = append(vs, s.view())
	}
	return vs, from, nil
}

// scanViews walks the batch headers of vs from the batch holding offset
// from, calling fn until it returns false. With markers, control batches
// are read whole and their marker decoded. It unpins vs when done.
func scanViews(vs []view, from int64, markers bool, fn func(h *BatchHeader, m *Marker) bool) error {
	defer unpinViews(vs)
	w := headerWindow{buf: make([]byte, scanWindow)}
	var buf []byte
	// One header and marker for the whole scan: fn's pointers make them
	// escape, and a variable per batch would cost an allocation each.
	var h BatchHeader
	var mk Marker
	for _, v := range vs {
		pos := int64(0)
		if from > v.base {
			p, err := v.offsetPos(from)
			if err != nil {
				return err
			}
			pos = p
		}
		f, err := v.file()
		if err != nil {
			return err
		}
		w.reset(f)
		for pos < v.size {
			raw, err := w.at(pos, v.size)
			if err != nil {
				return err
			}
			if h, err = ParseBatchHeader(raw); err != nil {
				return fmt.Errorf("log: %s at %d: %w", v.f.Name(), pos, err)
			}
			if h.Magic != 2 || int64(h.Length) > v.size-pos || h.LastOffsetDelta < 0 {
				return fmt.Errorf("log: %s: invalid batch header at %d", v.f.Name(), pos)
			}
			var m *Marker
			if markers && h.IsControl() {
				if buf, err = readBatch(v, pos, int64(h.Length), buf); err != nil {
					return fmt.Errorf("log: %s: read control batch at %d: %w", v.f.Name(), pos, err)
				}
				if mk, err = ParseMarker(buf); err != nil {
					return fmt.Errorf("log: %s: control batch at %d: %w", v.f.Name(), pos, err)
				}
				m = &mk
			}
			if !fn(&h, m) {
				return nil
			}
			w.big = int(h.Length) >= len(w.buf)
			pos += int64(h.Length)
		}
	}
	return nil
}

// headerWindow serves batch headers out of a buffered region of one file.
type headerWindow struct {
	f     *os.File
	buf   []byte
	start int64 // file position of buf[0]
	n     int   // valid bytes in buf
	big   bool  // the last batch was larger than the window
}

func (w *headerWindow) reset(f *os.File) {
	w.f, w.start, w.n, w.big = f, 0, 0, false
}

// at returns the BatchHeaderSize bytes at pos; end is where the file's
// valid data stops.
func (w *headerWindow) at(pos, end int64) ([]byte, error) {
	if end-pos < BatchHeaderSize {
		return nil, fmt.Errorf("log: %s: partial batch header at %d", w.f.Name(), pos)
	}
	if pos >= w.start && pos+BatchHeaderSize <= w.start+int64(w.n) {
		off := pos - w.start
		return w.buf[off : off+BatchHeaderSize], nil
	}
	// After a batch bigger than the window a full window would hold
	// nothing but record data; read the header alone.
	n := BatchHeaderSize
	if !w.big {
		n = int(min(int64(len(w.buf)), end-pos))
	}
	if _, err := w.f.ReadAt(w.buf[:n], pos); err != nil {
		w.n = 0
		return nil, fmt.Errorf("log: %s: read header at %d: %w", w.f.Name(), pos, err)
	}
	w.start, w.n = pos, n
	return w.buf[:BatchHeaderSize], nil
}
