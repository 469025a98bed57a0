package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/protocol"
)

// FuzzController drives a controller with arbitrary sequences of
// requests, ticks, fencings and failovers, and checks after every step
// what must always hold: every batch it returns encodes, decodes and
// applies to the committed image; the result is exactly the controller's
// own view; a leader is always an active broker; an inactive broker is in
// an ISR only as its last member.
//
// Each step takes four bytes: the operation, then three arguments.
func FuzzController(f *testing.F) {
	f.Add([]byte{
		0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 0, // register 1, 2, 3
		1, 1, 0, 0, 1, 2, 0, 0, 1, 3, 0, 0, // heartbeats: unfence
		2, 6, 3, 0, // create a topic of 6 partitions, rf 3
		1, 1, 2, 0, // broker 1 asks to shut down
		1, 2, 0, 0, 1, 3, 0, 0, 1, 1, 0, 0, // heartbeats: it may stop
		3, 12, 0, 0, // time passes
		4, 0, 1, 0, // preferred election
	})
	f.Add([]byte{
		0, 1, 0, 0, 0, 2, 0, 0, 1, 1, 0, 0, 1, 2, 0, 0,
		2, 4, 2, 0, 5, 0, 0, 0x3, 6, 0, 0, 2, 6, 1, 0, 7,
		8, 2, 0, 0, 9, 0, 0, 0, 2, 3, 1, 1, 10, 0, 0, 0,
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t, Config{})
		var out strings.Builder
		step := func(recs []metadata.Record) {
			before := h.c.Image()
			out.Reset()
			h.commit(t, before, recs, &out)
		}
		for len(data) >= 4 {
			op, a, b, c := data[0], data[1], data[2], data[3]
			data = data[4:]
			img := h.c.Image()
			switch op % 12 {
			case 0: // register broker a%5 with incarnation b%2, rack c%3
				req := kmsg.NewPtrBrokerRegistrationRequest()
				req.BrokerID = int32(a % 5)
				req.IncarnationID = [16]byte{b % 2, byte(req.BrokerID)}
				if c%3 > 0 {
					rack := fmt.Sprintf("r%d", c%3)
					req.Rack = &rack
				}
				_, recs := h.c.RegisterBroker(req)
				step(recs)
			case 1: // heartbeat of broker a%5; b: want-fence, want-shutdown, stale offset
				br, ok := img.Broker(int32(a % 5))
				if !ok {
					continue
				}
				req := kmsg.NewPtrBrokerHeartbeatRequest()
				req.BrokerID, req.BrokerEpoch = br.ID, br.Epoch
				req.CurrentMetadataOffset = h.committed.Offset() - int64(b>>2&3)
				req.WantFence, req.WantShutdown = b&1 != 0 && c&1 != 0, b&2 != 0
				_, recs := h.c.Heartbeat(req)
				step(recs)
			case 2: // create topic with a%9 partitions, rf b%4
				req := kmsg.NewPtrCreateTopicsRequest()
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic = fmt.Sprintf("t%d", c%6)
				rt.NumPartitions, rt.ReplicationFactor = int32(a%9), int16(b%4)
				if rt.NumPartitions == 0 {
					rt.NumPartitions = -1
				}
				req.Topics = append(req.Topics, rt)
				_, recs := h.c.CreateTopics(req)
				step(recs)
			case 3: // time passes: a*100ms, then a tick
				h.now = h.now.Add(time.Duration(a) * 100 * time.Millisecond)
				if b%4 == 0 {
					h.now = h.now.Add(5 * time.Minute)
				}
				step(h.c.Tick())
			case 4: // elect: preferred or unclean, one partition or all
				req := kmsg.NewPtrElectLeadersRequest()
				req.Version = 2
				req.ElectionType = int8(a % 2)
				if b%2 == 0 {
					req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: fmt.Sprintf("t%d", c%6), Partitions: []int32{int32(b % 8)}}}
				}
				_, recs := h.c.ElectLeaders(req)
				step(recs)
			case 5: // fence broker a%5 at once
				step(h.c.FenceBroker(int32(a%5), -1))
			case 6: // alter partition: an ISR from the replicas by mask b
				step(h.fuzzAlterPartition(img, a, b, c))
			case 7: // reassign to a target from mask b, or cancel
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				rp.Partition = int32(a % 8)
				if b != 0 {
					for id := range int32(5) {
						if b&(1<<id) != 0 {
							rp.Replicas = append(rp.Replicas, (id+int32(c))%5)
						}
					}
				}
				req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: fmt.Sprintf("t%d", c%6), Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{rp}}}
				_, recs := h.c.AlterPartitionReassignments(req)
				step(recs)
			case 8: // unregister broker a%5
				req := kmsg.NewPtrUnregisterBrokerRequest()
				req.BrokerID = int32(a % 5)
				_, recs := h.c.UnregisterBroker(req)
				step(recs)
			case 9: // failover: a new controller from the committed image
				h.reset(Config{}, uint64(a))
			case 10: // delete topic, or allow unclean elections on it
				name := fmt.Sprintf("t%d", c%6)
				if a%2 == 0 {
					req := kmsg.NewPtrDeleteTopicsRequest()
					req.TopicNames = []string{name}
					_, recs := h.c.DeleteTopics(req)
					step(recs)
				} else {
					_, recs := h.c.AlterConfigs([]ConfigChange{{Resource: metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name},
						Set: map[string]string{"unclean.leader.election.enable": "true"}}})
					step(recs)
				}
			case 11: // grow a topic by a%4 partitions
				tp, ok := img.TopicByName(fmt.Sprintf("t%d", c%6))
				if !ok {
					continue
				}
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: tp.Name(), Count: tp.NumPartitions() + int32(a%4)}}
				_, recs := h.c.CreatePartitions(req)
				step(recs)
			}
		}
	})
}

// fuzzAlterPartition sends the leader's (or, with c odd, another
// broker's) request for a partition chosen by a, with an ISR from the
// replicas chosen by mask b, and with stale epochs when c says so.
func (h *harness) fuzzAlterPartition(img *metadata.Image, a, b, c byte) []metadata.Record {
	topics := img.Topics()
	if len(topics) == 0 {
		return nil
	}
	tp := topics[int(a)%len(topics)]
	p := int32(a/8) % tp.NumPartitions()
	cur, _ := tp.Partition(p)
	sender := cur.Leader()
	if c&1 != 0 {
		sender = cur.Replicas()[int(c/2)%len(cur.Replicas())]
	}
	br, ok := img.Broker(sender)
	if !ok {
		return nil
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = sender, br.Epoch
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p
	rp.LeaderEpoch, rp.PartitionEpoch = cur.LeaderEpoch(), cur.PartitionEpoch()
	if c&2 != 0 {
		rp.PartitionEpoch--
	}
	for i, id := range cur.Replicas() {
		if b&(1<<i) != 0 || id == cur.Leader() {
			e := int64(-1)
			if rb, ok := img.Broker(id); ok {
				e = rb.Epoch
			}
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: e})
		}
	}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: tp.ID(), Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
	_, recs := h.c.AlterPartition(req)
	return recs
}

// FuzzSecurity drives a controller with CreateAcls, DeleteAcls,
// AlterUserScramCredentials and AlterClientQuotas requests decoded from
// arbitrary bytes, and checks after each what FuzzController checks:
// every batch applies to the committed image and rebuilds exactly the
// controller's view. Each step is a selector byte, a length byte and
// that many bytes of request body.
func FuzzSecurity(f *testing.F) {
	seed := func(reqs ...kmsg.Request) []byte {
		var out []byte
		for _, r := range reqs {
			body := r.AppendTo(nil)
			out = append(out, byte(securityKeys[r.Key()]), byte(len(body)))
			out = append(out, body...)
		}
		return out
	}
	create := kmsg.NewPtrCreateACLsRequest()
	create.Version = 3
	create.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: 2, ResourceName: "t", ResourcePatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	del.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	scram.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "u", Mechanism: 1, Iterations: 4096, Salt: []byte("s"), SaltedPassword: []byte("p")}}
	quotas := kmsg.NewPtrAlterClientQuotasRequest()
	quotas.Version = 1
	quotas.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}}, Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 10}}}}
	f.Add(seed(create, scram, quotas, del))
	f.Add(seed(create, create, del, del))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t, Config{})
		var out strings.Builder
		for len(data) >= 2 {
			sel, n := data[0], int(data[1])
			data = data[2:]
			if n > len(data) {
				return
			}
			body := data[:n]
			data = data[n:]
			key := securityKeyList[int(sel)%len(securityKeyList)]
			req := kmsg.RequestForKey(key)
			req.SetVersion(req.MaxVersion())
			if protocol.Check(key, req.MaxVersion(), body) != nil || req.ReadFrom(body) != nil {
				continue
			}
			var recs []metadata.Record
			switch r := req.(type) {
			case *kmsg.CreateACLsRequest:
				_, recs = h.c.CreateAcls(r)
			case *kmsg.DeleteACLsRequest:
				_, recs = h.c.DeleteAcls(r)
			case *kmsg.AlterUserSCRAMCredentialsRequest:
				_, recs = h.c.AlterUserScramCredentials(r)
			case *kmsg.AlterClientQuotasRequest:
				_, recs = h.c.AlterClientQuotas(r)
			}
			before := h.c.Image()
			out.Reset()
			h.commit(t, before, recs, &out)
			DescribeUserScramCredentials(h.committed, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).AppendTo(nil)
		}
	})
}

var securityKeyList = []int16{30, 31, 49, 51}

var securityKeys = map[int16]int{30: 0, 31: 1, 49: 2, 51: 3}
