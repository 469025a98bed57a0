package splice

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"

	wlog "weir/internal/log"
	"weir/internal/server"
)

// MarkerLen is the length of a Marker.
const MarkerLen = 16

// Marker stands for a partition's records in an encoded response.
type Marker [MarkerLen]byte

// NewMarker returns a random marker: 128 random bits do not occur in an
// encoding by chance.
func NewMarker() Marker {
	var m Marker
	_, _ = rand.Read(m[:])
	return m
}

// Piece is a file range, or Bytes when it is not nil.
type Piece struct {
	File  wlog.FileRange
	Bytes []byte
}

// Part is one partition's records: the marker that stands for them in
// the encoding and what replaces it, Size bytes in all: Pieces, then
// Ranges (a log read's file ranges, taken as they are so that a Fetch
// copies no slice per partition).
type Part struct {
	Marker Marker
	Pieces []Piece
	Ranges []wlog.FileRange
	Size   int64
}

// FromRanges is a part of the file ranges a log read returned (size
// bytes in all), with a new marker.
func FromRanges(ranges []wlog.FileRange, size int64) *Part {
	return &Part{Marker: NewMarker(), Ranges: ranges, Size: size}
}

// ErrMissingMarker means a part's marker is not in the encoding, in the
// order given: the response was built wrong, nothing is sent.
var ErrMissingMarker = errors.New("splice: a records marker is missing from the encoding")

// Body cuts enc, the encoding of a response body whose records fields
// hold the parts' markers in the order of parts, into the body the server
// sends: each marker, with the length prefix kmsg gave it (an int32 16,
// or in flexible versions the one-byte compact length 17), is replaced
// by the part's own length prefix and pieces.
func Body(enc []byte, flexible bool, parts []*Part) (*server.Body, error) {
	prefix := 4
	if flexible {
		prefix = 1
	}
	body := &server.Body{}
	pos := 0
	for _, p := range parts {
		i := bytes.Index(enc[pos:], p.Marker[:])
		if i < prefix {
			return nil, ErrMissingMarker
		}
		at := pos + i
		body.AppendBytes(enc[pos : at-prefix])
		if flexible {
			body.AppendBytes(binary.AppendUvarint(nil, uint64(p.Size)+1))
		} else {
			body.AppendBytes(binary.BigEndian.AppendUint32(nil, uint32(p.Size)))
		}
		for _, pc := range p.Pieces {
			if pc.Bytes != nil {
				body.AppendBytes(pc.Bytes)
			} else {
				body.AppendFile(pc.File.File, pc.File.Pos, pc.File.Len)
			}
		}
		for _, fr := range p.Ranges {
			body.AppendFile(fr.File, fr.Pos, fr.Len)
		}
		pos = at + MarkerLen
	}
	body.AppendBytes(enc[pos:])
	return body, nil
}
