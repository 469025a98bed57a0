package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgHeartbeater is a KIP-848 member speaking ConsumerGroupHeartbeat
// itself: it owns what the coordinator last assigned it.
type cgHeartbeater struct {
	cl    *kgo.Client
	group string
	id    string
	regex string
	epoch int32
	owned map[[16]byte][]int32
}

// beat sends one heartbeat (a join at epoch 0) and takes the assignment
// it brings.
func (m *cgHeartbeater) beat(t *testing.T, ctx context.Context) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicRegex = &m.regex
	}
	for id, ps := range m.owned {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s: error %d %v", m.id, resp.ErrorCode, resp.ErrorMessage)
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = map[[16]byte][]int32{}
		for _, at := range resp.Assignment.Topics {
			m.owned[at.TopicID] = at.Partitions
		}
	}
	return resp
}

// ownedTopics is the names of the topics the member owns, sorted.
func (m *cgHeartbeater) ownedTopics(names map[[16]byte]string) []string {
	var out []string
	for id := range m.owned {
		out = append(out, names[id])
	}
	slices.Sort(out)
	return out
}

// TestConsumerGroupRegexFilteredByDescribe: with the authorizer on, a
// consumer group's subscription regex resolves only to the topics the
// member's principal may DESCRIBE, as Kafka's coordinator resolves it
// (TopicRegexResolver): alice, who may read ra and rb but not rc, is
// never assigned rc, nor told of it by ConsumerGroupDescribe. A topic
// created later that she may describe joins her assignment at a
// heartbeat after it comes. The classic protocol resolves regexes in the
// client from Metadata, which lists only what alice may describe: a
// franz-go classic consumer with the same regex is assigned ra and rb.
func TestConsumerGroupRegexFilteredByDescribe(t *testing.T) {
	tb := startAuthorizedBroker(t, nil)
	ctx := testCtx(t)
	admin := newClient(t, tb.addr, kgo.ClientID("admin"))
	adm := kadm.NewClient(admin)
	for name, partitions := range map[string]int32{"ra": 2, "rb": 1, "rc": 1, "other": 1} {
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(acls *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, acls)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateACLs: %v", r.Err)
			}
		}
	}
	grant(kadm.NewACLs().Allow("User:alice").Groups("rg", "rg-classic").Operations(kadm.OpRead))
	grant(kadm.NewACLs().Allow("User:alice").Topics("ra", "rb", "other").Operations(kadm.OpRead))
	// topics lists every topic, as a principal may describe them. A
	// Metadata request sent to the broker directly: kgo holds back the
	// client's own metadata refreshes (metadata.min.age).
	topics := func(cl *kgo.Client) map[[16]byte]string {
		t.Helper()
		resp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			t.Fatal(err)
		}
		out := map[[16]byte]string{}
		for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
			out[mt.TopicID] = *mt.Topic
		}
		return out
	}
	names := func() map[[16]byte]string { return topics(admin) }

	alice := newClient(t, tb.addr, kgo.ClientID("alice"))
	m := &cgHeartbeater{cl: alice, group: "rg", id: "alice-1", regex: "r.*"}
	m.beat(t, ctx)
	if got := fmt.Sprint(m.ownedTopics(names())); got != "[ra rb]" {
		t.Fatalf("alice's regex member owns %s, want [ra rb]", got)
	}
	dreq := kmsg.NewPtrConsumerGroupDescribeRequest()
	dreq.Groups = []string{"rg"}
	described, err := dreq.RequestWith(ctx, admin)
	if err != nil || len(described.Groups) != 1 || described.Groups[0].ErrorCode != 0 || len(described.Groups[0].Members) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %v %+v", err, described)
	}
	dm := described.Groups[0].Members[0]
	for _, at := range slices.Concat(dm.Assignment.TopicPartitions, dm.TargetAssignment.TopicPartitions) {
		if at.Topic == "rc" {
			t.Fatalf("ConsumerGroupDescribe shows rc for alice: %+v", dm)
		}
	}

	// rd comes, which alice may describe; rc stays out.
	grant(kadm.NewACLs().Allow("User:alice").Topics("rd").Operations(kadm.OpDescribe))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "rd"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		m.beat(t, ctx)
		if got := fmt.Sprint(m.ownedTopics(names())); got != "[ra rb rd]" {
			return fmt.Errorf("alice's regex member owns %s, want [ra rb rd]", got)
		}
		return nil
	})

	// The classic protocol: the client resolves the regex from Metadata.
	listed := slices.Sorted(maps.Values(topics(alice)))
	if fmt.Sprint(listed) != "[other ra rb rd]" {
		t.Fatalf("alice's Metadata of all topics lists %v, want [other ra rb rd]", listed)
	}
	// (franz-go matches a regex anywhere in a name, Kafka's coordinator
	// the whole name: ^r here is r.* there.)
	classic := newClient(t, tb.addr, kgo.ClientID("alice"), kgo.ConsumerGroup("rg-classic"),
		kgo.ConsumeTopics("^r"), kgo.ConsumeRegex())
	eventually(t, 15*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		classic.PollFetches(pctx)
		cancel()
		groups, err := adm.DescribeGroups(ctx, "rg-classic")
		if err != nil {
			return err
		}
		var got []string
		for _, gm := range groups["rg-classic"].Members {
			if ca, ok := gm.Assigned.AsConsumer(); ok {
				for _, at := range ca.Topics {
					got = append(got, at.Topic)
				}
			}
		}
		slices.Sort(got)
		if fmt.Sprint(got) != "[ra rb rd]" {
			return fmt.Errorf("classic member assigned %v, want [ra rb rd]", got)
		}
		return nil
	})
}
