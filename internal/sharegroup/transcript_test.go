package sharegroup

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/share"
)

// TestSessionTranscripts runs testdata/sessions: share sessions driven
// through ShareFetch and ShareAcknowledge as a client sends them, one
// topic "q" led here. Commands:
//
//	topic partitions=N records=N          one batch of N records per partition
//	produce partition=P records=N         one more batch
//	join member=M                         ShareGroupHeartbeat joining group g
//	fetch member=M epoch=E [fetch=P,P] [forget=P,P] [ack=P:F-L:TYPE ...]
//	      [max=N] [mode=batch_optimized|record_limit]
//	acknowledge member=M epoch=E ack=P:F-L:TYPE ...
//	state partition=P                     the share partition's offsets
//
// TYPE is accept, release, reject or gap. A fetch prints each partition
// of the answer: the acquired ranges (first-last, delivery count), the
// partition's error and acknowledgement error codes when not 0. Rewrite
// the expected output with -rewrite and read the diff.
func TestSessionTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/sessions", func(t *testing.T, path string) {
		h := newFakeHost()
		m := testManager(t, h, newSlowState())
		var id [16]byte
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			ctx := context.Background()
			switch d.Cmd {
			case "topic":
				id = h.addTopic(t, "q", intArg(t, d, "partitions", 1), intArg(t, d, "records", 10))
				return "ok"
			case "produce":
				l := h.logs[share.StateKey{TopicID: id, Partition: int32(intArg(t, d, "partition", 0))}]
				var bb wlog.BatchBuilder
				bb.Reset(time.Now().UnixMilli())
				for i := range intArg(t, d, "records", 10) {
					bb.Add(time.Now().UnixMilli(), nil, fmt.Appendf(nil, "v%d", i), nil)
				}
				if _, err := l.Append(bb.Build(), wlog.AppendOptions{LeaderEpoch: 1}); err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("end offset %d", l.EndOffset())
			case "join":
				hb := kmsg.NewPtrShareGroupHeartbeatRequest()
				hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "g", strArg(t, d, "member", ""), 0, []string{"q"}
				resp := m.Heartbeat(ctx, hb, share.ClientInfo{})
				return codeName(resp.ErrorCode)
			case "fetch":
				return fetchCommand(t, d, m, id)
			case "acknowledge":
				req := kmsg.NewPtrShareAcknowledgeRequest()
				req.Version, req.GroupID = 2, kmsg.StringPtr("g")
				req.MemberID = kmsg.StringPtr(strArg(t, d, "member", ""))
				req.ShareSessionEpoch = int32(intArg(t, d, "epoch", 1))
				t0 := kmsg.NewShareAcknowledgeRequestTopic()
				t0.TopicID = id
				acks := ackArgs(t, d)
				for _, p := range slices.Sorted(maps.Keys(acks)) {
					bs := acks[p]
					tp := kmsg.NewShareAcknowledgeRequestTopicPartition()
					tp.Partition = p
					for _, b := range bs {
						ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
						ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = b.First, b.Last, []int8{int8(b.Types[0])}
						tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, ab)
					}
					t0.Partitions = append(t0.Partitions, tp)
				}
				req.Topics = append(req.Topics, t0)
				resp := m.Acknowledge(ctx, req)
				if resp.ErrorCode != 0 {
					return codeName(resp.ErrorCode)
				}
				var out strings.Builder
				for _, rt := range resp.Topics {
					for _, p := range rt.Partitions {
						fmt.Fprintf(&out, "p%d: %s\n", p.Partition, codeName(p.ErrorCode))
					}
				}
				return out.String()
			case "state":
				sp, _, ok := m.partFor("g", id, int32(intArg(t, d, "partition", 0)))
				if !ok {
					return "no such share partition"
				}
				sp.mu.Lock()
				defer sp.mu.Unlock()
				if sp.p == nil {
					return "not loaded"
				}
				s := sp.p.Stats()
				return fmt.Sprintf("start=%d end=%d acquired=%d available=%d", s.StartOffset, s.EndOffset, s.Acquired, s.Available)
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// fetchCommand sends one ShareFetch and prints its answer.
func fetchCommand(t *testing.T, d *datadriven.TestData, m *Manager, id [16]byte) string {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version, req.GroupID = 2, kmsg.StringPtr("g")
	req.MemberID = kmsg.StringPtr(strArg(t, d, "member", ""))
	req.ShareSessionEpoch = int32(intArg(t, d, "epoch", 0))
	req.MaxRecords = int32(intArg(t, d, "max", 4))
	req.BatchSize, req.MaxBytes = req.MaxRecords, 1<<20
	req.ShareAcquireMode = int8(share.BatchOptimized)
	if strArg(t, d, "mode", "batch_optimized") == "record_limit" {
		req.ShareAcquireMode = int8(share.RecordLimit)
	}
	// As the Java client builds it: the partitions to fetch, then those
	// with acknowledgements to carry, then the forgotten ones.
	parts := map[int32]*kmsg.ShareFetchRequestTopicPartition{}
	var order []int32
	part := func(p int32) *kmsg.ShareFetchRequestTopicPartition {
		if parts[p] == nil {
			tp := kmsg.NewShareFetchRequestTopicPartition()
			tp.Partition = p
			parts[p] = &tp
			order = append(order, p)
		}
		return parts[p]
	}
	for _, p := range partList(t, strArg(t, d, "fetch", "")) {
		part(p)
	}
	acks := ackArgs(t, d)
	for _, p := range slices.Sorted(maps.Keys(acks)) {
		tp := part(p)
		for _, b := range acks[p] {
			ab := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = b.First, b.Last, []int8{int8(b.Types[0])}
			tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, ab)
		}
	}
	if len(order) > 0 {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		for _, p := range order {
			rt.Partitions = append(rt.Partitions, *parts[p])
		}
		req.Topics = append(req.Topics, rt)
	}
	if forget := partList(t, strArg(t, d, "forget", "")); len(forget) > 0 {
		ft := kmsg.NewShareFetchRequestForgottenTopicsData()
		ft.TopicID, ft.Partitions = id, forget
		req.ForgottenTopicsData = append(req.ForgottenTopicsData, ft)
	}
	resp := m.ShareFetch(context.Background(), req).Response(func(*Records) []byte { return nil })
	if resp.ErrorCode != 0 {
		return codeName(resp.ErrorCode)
	}
	var out strings.Builder
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			fmt.Fprintf(&out, "p%d:", p.Partition)
			for _, a := range p.AcquiredRecords {
				fmt.Fprintf(&out, " acquired %d-%d (%d)", a.FirstOffset, a.LastOffset, a.DeliveryCount)
			}
			if len(p.AcquiredRecords) == 0 {
				out.WriteString(" nothing acquired")
			}
			if p.ErrorCode != 0 {
				fmt.Fprintf(&out, " error %s", codeName(p.ErrorCode))
			}
			if p.AcknowledgeErrorCode != 0 {
				fmt.Fprintf(&out, " ack error %s", codeName(p.AcknowledgeErrorCode))
			}
			out.WriteString("\n")
		}
	}
	if out.Len() == 0 {
		return "empty answer"
	}
	return out.String()
}

// ackArgs reads ack=P:F-L:TYPE arguments, by partition in order.
func ackArgs(t *testing.T, d *datadriven.TestData) map[int32][]share.AckBatch {
	types := map[string]share.AckType{"accept": share.AckAccept, "release": share.AckRelease, "reject": share.AckReject, "gap": share.AckGap}
	out := map[int32][]share.AckBatch{}
	for _, a := range d.CmdArgs {
		if a.Key != "ack" {
			continue
		}
		for _, v := range a.Vals {
			f := strings.Split(v, ":")
			if len(f) != 3 {
				t.Fatalf("%s: ack=%s: want P:F-L:TYPE", d.Pos, v)
			}
			first, last, ok := strings.Cut(f[1], "-")
			typ, known := types[f[2]]
			if !ok || !known {
				t.Fatalf("%s: ack=%s: want P:F-L:TYPE", d.Pos, v)
			}
			p := int32(atoi(t, d, f[0]))
			out[p] = append(out[p], share.AckBatch{First: int64(atoi(t, d, first)), Last: int64(atoi(t, d, last)), Types: []share.AckType{typ}})
		}
	}
	return out
}

func partList(t *testing.T, s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("partition list %q: %v", s, err)
		}
		out = append(out, int32(n))
	}
	return out
}

func strArg(t *testing.T, d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			if len(a.Vals) != 1 {
				t.Fatalf("%s: %s wants one value", d.Pos, key)
			}
			return a.Vals[0]
		}
	}
	return def
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	s := strArg(t, d, key, "")
	if s == "" {
		return def
	}
	return atoi(t, d, s)
}

func atoi(t *testing.T, d *datadriven.TestData, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %q: %v", d.Pos, s, err)
	}
	return n
}

func codeName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return err.(*kerr.Error).Message
	}
	return strconv.Itoa(int(code))
}
