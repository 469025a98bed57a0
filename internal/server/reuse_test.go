package server

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reuseDispatcher lets the server reuse produce frames and keeps the
// record batches of every request it serves, to check afterwards which
// ones the server overwrote.
type reuseDispatcher struct {
	mu   sync.Mutex
	kept map[int32][]byte // correlation id -> the Records slice served
}

func (d *reuseDispatcher) Versions() []APIVersionRange { return testVersions }

func (d *reuseDispatcher) ReusesFrame(key int16) bool { return key == 0 }

func (d *reuseDispatcher) Serve(_ context.Context, req *Request) *Reply {
	var recs []byte
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		recs = r.Topics[0].Partitions[0].Records
	case *kmsg.FetchRequest:
		recs = []byte(r.Topics[0].Topic) // a string: always a copy
	}
	d.mu.Lock()
	d.kept[req.CorrelationID] = recs
	d.mu.Unlock()
	return Ready(req.Body.ResponseKind())
}

// produceFrame is a produce request whose one batch is size bytes of fill.
func produceFrame(corr int32, fill byte, size int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, 1
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "t"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = bytes.Repeat([]byte{fill}, size)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return reqFrame(req, corr, nil)
}

// TestReusedFramesServeEachRequestIntact: with produce frames reused,
// every request is decoded from its own bytes whatever size came before
// (Serve sees the right records), and a frame really is reused once
// Serve returned: the records a dispatcher wrongly kept get overwritten.
func TestReusedFramesServeEachRequestIntact(t *testing.T) {
	d := &reuseDispatcher{kept: map[int32][]byte{}}
	s := startServer(t, d, nil)
	c := dial(t, s)
	sizes := []int{100, 5000, 70_000, 20, 70_000, 300_000, 4096, 70_000}
	for range 10 { // sync.Pool may drop a buffer (the race detector makes it drop some on purpose)
		sizes = append(sizes, 70_000)
	}
	var in []byte
	for i, n := range sizes {
		in = append(in, produceFrame(int32(i), byte('a'+i), n)...)
	}
	c.send(in)
	for range sizes {
		c.readFrame()
	}
	overwritten := 0
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, n := range sizes {
		got := d.kept[int32(i)]
		if len(got) != n {
			t.Fatalf("request %d: served %d bytes of records, sent %d", i, len(got), n)
		}
		if !bytes.Equal(got, bytes.Repeat([]byte{byte('a' + i)}, n)) {
			overwritten++
		}
	}
	// The 70,000-byte requests share a class: earlier ones' buffers were
	// reused.
	if overwritten == 0 {
		t.Fatal("no produce frame was reused")
	}
}

// TestFramesNotReusedForOtherKeys: a key the dispatcher does not name
// keeps its own frame, as every key does without a FrameReuser.
func TestFramesNotReusedForOtherKeys(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions}
	s := startServer(t, d, nil)
	c := dial(t, s)
	var in []byte
	for i := range 6 {
		in = append(in, produceFrame(int32(i), byte('a'+i), 70_000)...)
	}
	c.send(in)
	for range 6 {
		c.readFrame()
	}
	for i, req := range d.served() {
		got := req.Body.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
		if !bytes.Equal(got, bytes.Repeat([]byte{byte('a' + i)}, 70_000)) {
			t.Fatalf("request %d's records were overwritten", i)
		}
	}
}

func TestFramePoolClasses(t *testing.T) {
	var p framePool
	for _, n := range []int{minFrameSize, 4096, 4097, 70_000, frameChunk} {
		b := p.get(n)
		if cap(b) < n || cap(b)&(cap(b)-1) != 0 || cap(b) > max(2*n, 4096) {
			t.Fatalf("get(%d): cap %d", n, cap(b))
		}
		p.put(b[:n])
	}
	if b := p.get(frameChunk + 1); b != nil {
		t.Fatalf("get above frameChunk gave a buffer of %d bytes", cap(b))
	}
	p.put(make([]byte, 5000)) // not a class size: dropped
}
