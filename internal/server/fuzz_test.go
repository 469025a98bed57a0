package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/protocol"
)

// fuzzVersions serves every request kmsg knows at every version, except
// ApiVersions above 4 (to reach the fallback) and Produce below 3 (to reach
// the unsupported-version close).
func fuzzVersions() []APIVersionRange {
	var vs []APIVersionRange
	for key := int16(0); key < 256; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		r := APIVersionRange{Key: key, Max: req.MaxVersion()}
		switch key {
		case 0:
			r.Min = 3
		case apiVersionsKey:
			r.Max = 4
		}
		vs = append(vs, r)
	}
	return vs
}

// fuzzDispatcher answers everything at once, as acks=0 produce does with
// nothing.
var fuzzDispatcher = &fakeDispatcher{versions: fuzzVersions(), handle: func(_ context.Context, req *Request) *Reply {
	if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return NoResponse()
	}
	return Ready(req.Body.ResponseKind())
}}

func seedBatch() []byte {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("value")}
	recs := rec.AppendTo(nil)
	b := kmsg.RecordBatch{Magic: 2, NumRecords: 1, Records: recs, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}
	return b.AppendTo(nil)
}

// seedFrames are valid frames of several keys, versions and header shapes.
func seedFrames() [][]byte {
	produce := func(version, acks int16) kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		r.Version, r.Acks, r.TimeoutMillis = version, acks, 1000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = seedBatch()
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	fetch := func(version int16) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.Version = version
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "orders"
		t.Partitions = append(t.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics = append(r.Topics, t)
		return r
	}
	metadata := func(version int16) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = version
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = strp("orders")
		r.Topics = append(r.Topics, t)
		return r
	}
	apiVersions := func(version int16) kmsg.Request {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version, r.ClientSoftwareName, r.ClientSoftwareVersion = version, "fuzz", "1.0"
		return r
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "g", "consumer"
	shareFetch := kmsg.NewPtrShareFetchRequest()
	shareFetch.Version, shareFetch.GroupID = 1, strp("sg")
	var frames [][]byte
	for i, req := range []kmsg.Request{
		apiVersions(0), apiVersions(3), apiVersions(4), apiVersions(5),
		metadata(0), metadata(9), metadata(12),
		produce(3, 1), produce(9, -1), produce(9, 0), produce(2, 1),
		fetch(4), fetch(12), fetch(17),
		join, shareFetch,
		&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g"}},
		&kmsg.CreateTopicsRequest{Version: 7},
		&kmsg.ControlledShutdownRequest{Version: 0},
	} {
		frames = append(frames, reqFrame(req, int32(i), strp("fuzz")))
	}
	return frames
}

// FuzzConnStream feeds arbitrary bytes to a connection as a client's
// stream: nothing may panic, and the connection's goroutines must end.
func FuzzConnStream(f *testing.F) {
	frames := seedFrames()
	f.Add(bytes.Join(frames, nil))
	for _, fr := range frames {
		f.Add(fr)
	}
	f.Add([]byte{0, 0, 0, 0x10, 0, 3, 0, 12, 0, 0, 0, 1, 0, 0, 2, 0, 1, 9, 5, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})

	f.Fuzz(func(t *testing.T, stream []byte) {
		s, err := newServer(Config{Dispatcher: fuzzDispatcher, MaxRequestSize: 1 << 16, MaxInFlight: 4})
		if err != nil {
			t.Fatal(err)
		}
		client, srv := net.Pipe()
		s.startConn(srv)
		var wg sync.WaitGroup
		wg.Go(func() { io.Copy(io.Discard, client) })
		client.Write(stream) // fails once the server closes: fine
		client.Close()
		wg.Wait()
		joined := make(chan struct{})
		go func() { s.wg.Wait(); close(joined) }()
		select {
		case <-joined:
		case <-time.After(10 * time.Second):
			t.Fatal("connection goroutines did not end")
		}
	})
}

// FuzzDecode runs the frame decoder alone, which is much faster than a
// whole connection, and checks what it accepts re-encodes to a frame it
// accepts again.
func FuzzDecode(f *testing.F) {
	for _, fr := range seedFrames() {
		f.Add(fr[4:])
	}
	s, err := newServer(Config{Dispatcher: fuzzDispatcher})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, fr []byte) {
		h, req, clientID, err := s.decode(fr)
		if err != nil || req == nil {
			return
		}
		again := reqFrame(req, h.correlationID, &clientID)
		h2, req2, clientID2, err := s.decode(again[4:])
		if err != nil || h2 != h || clientID2 != clientID || !bytes.Equal(req2.AppendTo(nil), req.AppendTo(nil)) {
			t.Fatalf("re-encoded frame decodes differently: %v", err)
		}
	})
}

// FuzzReadHeaderRest: the header parser never panics, and what it returns
// is the input's tail.
func FuzzReadHeaderRest(f *testing.F) {
	f.Add([]byte{0, 1, 'a', 0, 9}, 2)
	f.Add([]byte{0xff, 0xff, 1, 0, 1, 7}, 2)
	f.Add([]byte{0, 0}, 1)
	f.Fuzz(func(t *testing.T, in []byte, hv int) {
		hv = ((hv % 3) + 3) % 3
		_, body, err := readHeaderRest(in, hv)
		if err == nil && !bytes.HasSuffix(in, body) {
			t.Fatalf("body %x is not a suffix of %x", body, in)
		}
	})
}

// The seeds themselves must be accepted, or the fuzzers start from noise.
func TestSeedFramesDecode(t *testing.T) {
	s, err := newServer(Config{Dispatcher: fuzzDispatcher})
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range seedFrames() {
		h, req, _, err := s.decode(fr[4:])
		wantErr := h.key == 0 && h.version < 3 // Produce v2 is below min
		fallback := h.key == apiVersionsKey && h.version > 4
		switch {
		case wantErr && err == nil, !wantErr && err != nil:
			t.Errorf("seed %d (key %d v%d): err %v", i, h.key, h.version, err)
		case !wantErr && fallback != (req == nil):
			t.Errorf("seed %d (key %d v%d): fallback %v, req %v", i, h.key, h.version, fallback, req)
		}
		if int(binary.BigEndian.Uint32(fr)) != len(fr)-4 {
			t.Errorf("seed %d: bad length prefix", i)
		}
	}
}

// hostileTagCountFrame is an ApiVersions v3 frame (without its length
// prefix) whose body declares 2^32-1 top-level tagged fields and ends.
// kmsg alone would loop over every declared tag, about a minute of CPU.
func hostileTagCountFrame() []byte {
	fr := reqFrame(&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "a", ClientSoftwareVersion: "b"}, 1, nil)[4:]
	return binary.AppendUvarint(fr[:len(fr)-1], 1<<32-1) // replace the empty top-level tag section
}

// hostileArrayFrame is a Metadata v1 frame (without its length prefix)
// declaring 64 Ki topics over 64 KiB of zeros. kmsg alone would allocate
// all 64 Ki topics, about 48 bytes per frame byte, before running out of
// bytes halfway.
func hostileArrayFrame() []byte {
	const n = 64 << 10
	fr := reqFrame(&kmsg.MetadataRequest{Version: 1}, 1, nil)[4:]
	fr = binary.BigEndian.AppendUint32(fr[:len(fr)-4], n) // topics array length
	return append(fr, make([]byte, n)...)
}

// Both frames kmsg amplifies are refused by the structural check, before
// kmsg sees them, and at once.
func TestDecodeRefusesHostileFrames(t *testing.T) {
	s, err := newServer(Config{Dispatcher: fuzzDispatcher})
	if err != nil {
		t.Fatal(err)
	}
	for name, fr := range map[string][]byte{"tag count": hostileTagCountFrame(), "array length": hostileArrayFrame()} {
		start := time.Now()
		_, req, _, err := s.decode(fr)
		took := time.Since(start)
		if !errors.Is(err, protocol.ErrMalformed) || req != nil {
			t.Errorf("%s: got req %v, err %v; want protocol.ErrMalformed", name, req, err)
		}
		if took > time.Second {
			t.Errorf("%s: refusing took %v", name, took)
		}
	}
}

// BenchmarkDecodeHostileTagCount measures decode refusing a 24-byte frame
// whose body declares 2^32-1 tagged fields (hostileTagCountFrame).
func BenchmarkDecodeHostileTagCount(b *testing.B) {
	benchmarkRefusal(b, hostileTagCountFrame())
}

// BenchmarkDecodeHostileArrayLength measures decode refusing a Metadata v1
// frame declaring 64 Ki topics over 64 KiB of zeros (hostileArrayFrame):
// a topic takes at least two bytes, so the count alone is refused.
func BenchmarkDecodeHostileArrayLength(b *testing.B) {
	benchmarkRefusal(b, hostileArrayFrame())
}

func benchmarkRefusal(b *testing.B, fr []byte) {
	s, err := newServer(Config{Dispatcher: fuzzDispatcher})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := s.decode(fr); !errors.Is(err, protocol.ErrMalformed) {
			b.Fatalf("got %v, want protocol.ErrMalformed", err)
		}
	}
	b.ReportMetric(float64(len(fr)+4), "frame-bytes")
}
