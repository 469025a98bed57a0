package log

import "context"

// ScanRecords calls fn for every record of the log from its start to its
// end offset at the time of the call, in offset order, reading 1 MiB at a
// time; it stops at fn's first error and returns it, or ctx's. Keys and
// values alias a read buffer: fn copies what it keeps. Coordinators
// replay their internal topics with it.
func (l *Log) ScanRecords(ctx context.Context, fn func(*Record) error) error {
	return l.ScanBatchRecords(ctx, func(_ *BatchHeader, r *Record) error { return fn(r) })
}

// ScanBatchRecords is ScanRecords with the header of each record's batch
// (its producer, whether it is transactional or a control batch), for
// coordinators that replay transactional records.
func (l *Log) ScanBatchRecords(ctx context.Context, fn func(*BatchHeader, *Record) error) error {
	end := l.EndOffset()
	for off := l.StartOffset(); off < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := l.ReadBytes(off, 1<<20, end)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			h, err := ParseBatchHeader(data)
			if err != nil {
				return err
			}
			var ferr error
			if err := EachRecord(data[:h.Length], func(r *Record) bool {
				ferr = fn(&h, r)
				return ferr == nil
			}); err != nil {
				return err
			}
			if ferr != nil {
				return ferr
			}
			off = h.NextOffset()
			data = data[h.Length:]
		}
	}
	return nil
}
