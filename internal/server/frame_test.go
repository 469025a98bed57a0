package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

func sizePrefix(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func TestReadFrame(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, 200_000) // several growth steps
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
		err  error
	}{
		{"small", append(sizePrefix(10), payload[:10]...), payload[:10], nil},
		{"grows", append(sizePrefix(200_000), payload...), payload, nil},
		{"at the cap", append(sizePrefix(1<<20), make([]byte, 1<<20)...), make([]byte, 1<<20), nil},
		{"empty stream", nil, nil, io.EOF},
		{"short prefix", []byte{0, 0}, nil, io.ErrUnexpectedEOF},
		{"truncated payload", append(sizePrefix(100), payload[:50]...), nil, io.ErrUnexpectedEOF},
		{"truncated after a chunk", append(sizePrefix(200_000), payload[:100_000]...), nil, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tc.in), 1<<20)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
}

func TestReadFrameRejectsSizes(t *testing.T) {
	for _, size := range []int32{-1, -1 << 31, 0, minFrameSize - 1, 1<<20 + 1, 1<<31 - 1} {
		_, err := readFrame(bytes.NewReader(append(sizePrefix(size), make([]byte, 64)...)), 1<<20)
		var fse *frameSizeError
		if !errors.As(err, &fse) || fse.size != size {
			t.Errorf("size %d: err %v, want frameSizeError", size, err)
		}
	}
}

// A peer announcing the maximum and sending a trickle must not make the
// server allocate the maximum.
func TestReadFrameLyingLengthAllocatesLittle(t *testing.T) {
	in := append(sizePrefix(DefaultMaxRequestSize), make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(in), DefaultMaxRequestSize)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*frameChunk {
		t.Fatalf("allocated %d bytes for a 1000-byte trickle", got)
	}
}
