package broker

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/server"
)

// ShareFetch responses carry records from segment files the way Fetch
// responses do (fetch_body.go): kmsg encodes the response with a marker
// in each partition's Records, and the encoding is cut at the markers.
// ShareFetch is flexible in every version, so a marker's length prefix is
// the one-byte compact length 17.

// shareRecords is one partition's records in a ShareFetch answer: pieces
// of segment files (whole log batches, sent without a copy) and, for a
// batch only part of which was acquired, a trimmed copy in memory
// (share_trim.go).
type shareRecords struct {
	marker [markerLen]byte
	pieces []sharePiece
	size   int64
}

// sharePiece is a file range, or bytes when data is not nil.
type sharePiece struct {
	file wlog.FileRange
	data []byte
}

// addFile appends a file range, merging it with the previous piece when
// it continues it.
func (r *shareRecords) addFile(fr wlog.FileRange) {
	if n := len(r.pieces); n > 0 {
		last := &r.pieces[n-1]
		if last.data == nil && last.file.File == fr.File && last.file.Pos+last.file.Len == fr.Pos {
			last.file.Len += fr.Len
			r.size += fr.Len
			return
		}
	}
	r.pieces = append(r.pieces, sharePiece{file: fr})
	r.size += fr.Len
}

// addBytes appends bytes the answer owns.
func (r *shareRecords) addBytes(b []byte) {
	r.pieces = append(r.pieces, sharePiece{data: b})
	r.size += int64(len(b))
}

var errShareMarker = errors.New("broker: share fetch marker missing from the encoding")

func encodeShareFetchBody(resp *kmsg.ShareFetchResponse, version int16, recs []*shareRecords) (*server.Body, error) {
	resp.SetVersion(version)
	enc := resp.AppendTo(nil)
	body := &server.Body{}
	pos := 0
	for _, r := range recs {
		i := bytes.Index(enc[pos:], r.marker[:])
		if i < 1 {
			return nil, errShareMarker
		}
		at := pos + i
		body.AppendBytes(enc[pos : at-1])
		body.AppendBytes(binary.AppendUvarint(nil, uint64(r.size)+1))
		for _, pc := range r.pieces {
			if pc.data != nil {
				body.AppendBytes(pc.data)
			} else {
				body.AppendFile(pc.file.File, pc.file.Pos, pc.file.Len)
			}
		}
		pos = at + markerLen
	}
	body.AppendBytes(enc[pos:])
	return body, nil
}
