package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipe is a raw Kafka connection that writes several requests before
// reading any answer, as a client with requests in flight does.
type pipe struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
}

func dialPipe(t *testing.T, addr string) *pipe {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &pipe{t: t, nc: nc, br: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("pipe"))}
}

func (p *pipe) send(req kmsg.Request) {
	p.t.Helper()
	p.corr++
	if _, err := p.nc.Write(p.fmt.AppendRequest(nil, req, p.corr)); err != nil {
		p.t.Fatal(err)
	}
}

// read decodes the next answer into resp (flexible versions only).
func (p *pipe) read(resp kmsg.Response) {
	p.t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(p.br, size[:]); err != nil {
		p.t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(p.br, b); err != nil {
		p.t.Fatal(err)
	}
	// correlation id, then the empty tagged fields of header v1
	if err := resp.ReadFrom(b[5:]); err != nil {
		p.t.Fatal(err)
	}
}

func produceReq(tb *testBroker, topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 12
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

func setBrokerConfig(t *testing.T, ctx context.Context, c *kgo.Client, name, value string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	alter.Resources = append(alter.Resources, res)
	if ar := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, c, alter); ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("set %s: %v", name, kerr.ErrorForCode(ar.Resources[0].ErrorCode))
	}
}

// A batch that arrives ahead of its producer's next sequence waits for
// the missing one when that is already on its way, on the same
// connection: both are appended in sequence order and acknowledged, with
// no OUT_OF_ORDER_SEQUENCE_NUMBER (after a leadership move the Java
// client sends batch n+1 to the new leader while n is still coming back
// from the old one).
func TestProduceHoldsBatchAheadOfSequence(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "gap", 1, nil)
	// Long enough that only a broken hold, not a slow machine, fails.
	setBrokerConfig(t, ctx, c, "weir.produce.sequence.gap.wait.ms", "20000")
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, c)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v %v", init, err)
	}
	pid := init.ProducerID
	if sp := rawProduce(t, ctx, c, tb, "gap", idempotentBatch(pid, 0, 0, "a")); sp.ErrorCode != 0 {
		t.Fatalf("first batch: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	p := dialPipe(t, tb.addr)
	p.send(produceReq(tb, "gap", idempotentBatch(pid, 0, 2, "c"))) // ahead: 1 is missing
	p.send(produceReq(tb, "gap", idempotentBatch(pid, 0, 1, "b")))
	var ahead, missing kmsg.ProduceResponse
	ahead.Version, missing.Version = 12, 12
	p.read(&ahead)
	p.read(&missing)
	a, m := ahead.Topics[0].Partitions[0], missing.Topics[0].Partitions[0]
	if a.ErrorCode != 0 || m.ErrorCode != 0 {
		t.Fatalf("ahead: %v, missing: %v", kerr.ErrorForCode(a.ErrorCode), kerr.ErrorForCode(m.ErrorCode))
	}
	if m.BaseOffset != 1 || a.BaseOffset != 2 {
		t.Fatalf("offsets: sequence 1 at %d, sequence 2 at %d; want 1 and 2", m.BaseOffset, a.BaseOffset)
	}
	part := tb.b.lookupTopic("gap").partitions[0]
	if h, f := part.gapsHeld.Load(), part.gapsFilled.Load(); h != 1 || f != 1 {
		t.Fatalf("gaps held %d, filled %d; want 1 and 1", h, f)
	}
	var got []string
	fetchAll(t, ctx, tb.addr, "gap", 3, func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("log holds %q, want a b c", got)
	}
}

// A gap nobody fills is refused with OUT_OF_ORDER_SEQUENCE_NUMBER once
// the hold ends; with the hold at 0 it is refused without waiting for
// anything, as Kafka does.
func TestProduceGapNotFilled(t *testing.T) {
	for _, wait := range []string{"0", "50"} {
		t.Run("wait="+wait, func(t *testing.T) {
			tb := startBroker(t, t.TempDir(), nil)
			ctx := testCtx(t)
			c := newClient(t, tb.addr)
			createTopic(t, ctx, c, "gap", 1, nil)
			setBrokerConfig(t, ctx, c, "weir.produce.sequence.gap.wait.ms", wait)
			init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, c)
			if err != nil || init.ErrorCode != 0 {
				t.Fatalf("InitProducerId: %+v %v", init, err)
			}
			pid := init.ProducerID
			if sp := rawProduce(t, ctx, c, tb, "gap", idempotentBatch(pid, 0, 0, "a")); sp.ErrorCode != 0 {
				t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
			}
			sp := rawProduce(t, ctx, c, tb, "gap", idempotentBatch(pid, 0, 5, "f"))
			if !errors.Is(kerr.ErrorForCode(sp.ErrorCode), kerr.OutOfOrderSequenceNumber) {
				t.Fatalf("unfilled gap: %v", kerr.ErrorForCode(sp.ErrorCode))
			}
			part := tb.b.lookupTopic("gap").partitions[0]
			wantHeld := int64(1)
			if wait == "0" {
				wantHeld = 0
			}
			if h, f := part.gapsHeld.Load(), part.gapsFilled.Load(); h != wantHeld || f != 0 {
				t.Fatalf("gaps held %d, filled %d; want %d and 0", h, f, wantHeld)
			}
			if end := part.log.EndOffset(); end != 1 {
				t.Fatalf("log end %d after a refused batch, want 1", end)
			}
			// The producer goes on from where it was.
			if sp := rawProduce(t, ctx, c, tb, "gap", idempotentBatch(pid, 0, 1, "b")); sp.ErrorCode != 0 || sp.BaseOffset != 1 {
				t.Fatalf("next in sequence: %+v", sp)
			}
		})
	}
}

// fetchAll reads the first n records of a one-partition topic.
func fetchAll(t *testing.T, ctx context.Context, addr, topic string, n int, fn func(*kgo.Record)) {
	t.Helper()
	c := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for seen := 0; seen < n; {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records: %v", seen, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			fn(r)
		})
	}
}
