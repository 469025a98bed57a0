package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCaughtUpFollowerRejoinsIdlePartition: a follower that has the
// leader's whole log and is taken out of the ISR while the partition is
// idle (an AlterPartition shrink the leader proposed during a network
// partition and the controller committed after the heal does this) gets
// back in, although its incremental fetch session names nothing and no
// record is appended: with min.insync.replicas 2 nothing could be, so a
// partition left with ISR [leader] would refuse every acks=all produce
// for good.
func TestCaughtUpFollowerRejoinsIdlePartition(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr), kgo.RequiredAcks(kgo.AllISRAcks()))
	tc.createAssigned(t, ctx, c, "rejoin", []int32{1, 2})
	for i := range 10 {
		if err := c.ProduceSync(ctx, &kgo.Record{Topic: "rejoin", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader, follower := tc.brokers[0].b, tc.brokers[1].b
	eventually(t, 10*time.Second, func() error {
		if got := follower.lookupTopic("rejoin").partitions[0].log().EndOffset(); got != 10 {
			return fmt.Errorf("follower's log ends at %d, want 10", got)
		}
		return nil
	})
	// A few session fetches that name nothing.
	time.Sleep(time.Second)

	img := leader.image()
	mt, _ := img.TopicByName("rejoin")
	mp, _ := mt.Partition(0)
	self, _ := img.Broker(1)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, 1, leader.life.Epoch()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = mt.ID()
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = 0, mp.LeaderEpoch(), mp.PartitionEpoch()
	rp.NewEpochISR = []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{{BrokerID: 1, BrokerEpoch: self.Epoch}}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := leader.ctl.Admin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ar := resp.(*kmsg.AlterPartitionResponse)
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("shrink refused: %v / %v", kerr.ErrorForCode(ar.ErrorCode), kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	if isr := ar.Topics[0].Partitions[0].ISR; !slices.Equal(isr, []int32{1}) {
		t.Fatalf("the controller committed ISR %v, want [1]", isr)
	}
	eventually(t, 10*time.Second, func() error {
		mt, _ := leader.image().TopicByName("rejoin")
		p, _ := mt.Partition(0)
		if !slices.Equal(p.ISR(), []int32{1, 2}) {
			return fmt.Errorf("ISR %v, want [1 2]", p.ISR())
		}
		return nil
	})
}
