package client

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ackRuns is a set of offsets of one partition, each with an
// acknowledgement type, kept as sorted, disjoint runs of consecutive
// offsets; neighbouring runs of one type are merged. Records arrive in
// offset order and are acknowledged in runs, so a poll of 500 records is
// one run: delivered records and pending acknowledgements cost a few
// words per poll instead of a map entry per record, and the runs are the
// wire's acknowledgement batches as they stand.
type ackRuns []ackRun

type ackRun struct {
	first, last int64
	t           AckType
}

// find is the index of the first run ending at or after off.
func (r ackRuns) find(off int64) int {
	return sort.Search(len(r), func(i int) bool { return r[i].last >= off })
}

// get returns off's type.
func (r ackRuns) get(off int64) (AckType, bool) {
	if i := r.find(off); i < len(r) && r[i].first <= off {
		return r[i].t, true
	}
	return 0, false
}

// size is the number of offsets held.
func (r ackRuns) size() int64 {
	var n int64
	for _, x := range r {
		n += x.last - x.first + 1
	}
	return n
}

// appendRun adds x after every run of r, merging it with the last one when
// it continues it with the same type.
func (r ackRuns) appendRun(x ackRun) ackRuns {
	if n := len(r); n > 0 && r[n-1].t == x.t && r[n-1].last+1 == x.first {
		r[n-1].last = x.last
		return r
	}
	return append(r, x)
}

// set gives every offset from first to last type t; with keep, offsets
// already held keep their type (only the gaps are filled).
func (r *ackRuns) set(first, last int64, t AckType, keep bool) {
	rs := *r
	if n := len(rs); n == 0 || first > rs[n-1].last {
		*r = rs.appendRun(ackRun{first, last, t})
		return
	}
	i := rs.find(first)
	out := make(ackRuns, 0, len(rs)+2)
	out = append(out, rs[:i]...)
	cur := first
	for ; i < len(rs) && rs[i].first <= last; i++ {
		x := rs[i]
		if x.first < cur {
			out = out.appendRun(ackRun{x.first, cur - 1, x.t})
		} else if x.first > cur {
			out = out.appendRun(ackRun{cur, x.first - 1, t})
			cur = x.first
		}
		end := min(x.last, last)
		if keep {
			out = out.appendRun(ackRun{cur, end, x.t})
		} else {
			out = out.appendRun(ackRun{cur, end, t})
		}
		cur = end + 1
		if x.last > last {
			out = out.appendRun(ackRun{last + 1, x.last, x.t})
		}
	}
	if cur <= last {
		out = out.appendRun(ackRun{cur, last, t})
	}
	for ; i < len(rs); i++ {
		out = out.appendRun(rs[i])
	}
	*r = out
}

// remove takes off out of the set; false if it was not in it.
func (r *ackRuns) remove(off int64) bool {
	rs := *r
	i := rs.find(off)
	if i == len(rs) || rs[i].first > off {
		return false
	}
	x := rs[i]
	switch {
	case x.first == x.last:
		*r = slices.Delete(rs, i, i+1)
	case off == x.first:
		rs[i].first++
	case off == x.last:
		rs[i].last--
	default:
		rs[i].last = off - 1
		*r = slices.Insert(rs, i+1, ackRun{off + 1, x.last, x.t})
	}
	return true
}

// ackBatches encodes the runs as acknowledgement batches, one type each.
func ackBatches(r ackRuns) []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	if len(r) == 0 {
		return nil
	}
	out := make([]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch, len(r))
	for i, x := range r {
		out[i] = kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		out[i].FirstOffset, out[i].LastOffset, out[i].AcknowledgeTypes = x.first, x.last, []int8{int8(x.t)}
	}
	return out
}
