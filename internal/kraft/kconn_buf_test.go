package kraft

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKconnKeepsOnlySmallRequestBuffers sends a request naming many
// partitions (as a follower's full fetch does) and then a small one over
// a connection, and checks that the large request's buffer is not kept
// while the small one's is reused.
func TestKconnKeepsOnlySmallRequestBuffers(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go func() {
		// Answer every request with an empty Fetch v4 response.
		br := bufio.NewReader(server)
		for {
			var size int32
			if err := binary.Read(br, binary.BigEndian, &size); err != nil {
				return
			}
			frame := make([]byte, size)
			if _, err := io.ReadFull(br, frame); err != nil {
				return
			}
			id := int32(binary.BigEndian.Uint32(frame[4:8]))
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = 4
			body := resp.AppendTo(nil)
			out := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
			out = binary.BigEndian.AppendUint32(out, uint32(id))
			if _, err := server.Write(append(out, body...)); err != nil {
				return
			}
		}
	}()
	c := &kconn{addr: "pipe", nc: client, br: bufio.NewReader(client), fmt: kmsg.NewRequestFormatter()}
	fetch := func(partitions int) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 4
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for i := range partitions {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = int32(i)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.exchange(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		partitions int
		kept       bool
	}{
		{10, true},
		{10_000, false}, // 10,000 partitions: about 200 KB
		{10, true},
	} {
		fetch(tc.partitions)
		if kept := c.buf != nil; kept != tc.kept || cap(c.buf) > maxKeptRequestBuf {
			t.Fatalf("after a fetch of %d partitions: buffer kept %v (cap %d), want kept %v", tc.partitions, kept, cap(c.buf), tc.kept)
		}
	}
}
