package sharegroup

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
	"weir/internal/sharestate"
)

// mapState is a state store whose records were written by other nodes'
// leaders: it answers reads from a map and, as another node's share
// coordinator would, lists no keys here.
type mapState struct {
	mu   sync.Mutex
	recs map[string][]share.StateRecord
}

func (s *mapState) Ensure() error { return nil }
func (s *mapState) Write([]byte, []byte, bool, sharestate.Fence) *sharestate.Ticket {
	return nil
}
func (s *mapState) Keys(context.Context, string) []share.StateKey { return nil }
func (s *mapState) Read(_ context.Context, rkey []byte, _ int32) ([]share.StateRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recs[string(rkey)], nil
}

func (s *mapState) put(t *testing.T, k share.StateKey, start int64) {
	t.Helper()
	rk, err := sharestate.RecordKey(k)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[string(rk)] = []share.StateRecord{share.New(share.Config{}, start).Snapshot()}
}

// remoteHost leads only some partitions; the others are another node's,
// whose high watermarks it may ask (hw) or not (nil).
type remoteHost struct {
	*fakeHost
	remote map[int32]bool
}

func (h remoteHost) Partition(id [16]byte, p int32) (Partition, error) {
	if h.remote[p] {
		return nil, kerr.NotLeaderForPartition
	}
	return h.fakeHost.Partition(id, p)
}

type remoteHostHW struct {
	remoteHost
	hw map[int32]int64
}

func (h remoteHostHW) HighWatermark(_ context.Context, _ [16]byte, p int32) (int64, error) {
	return h.hw[p], nil
}

// DescribeShareGroupOffsets with no topics lists every partition the
// group has state for, also those led by and coordinated on other nodes
// (the bug: only those held here were listed), each with its start
// offset; a partition without state is left out. The lag of a partition
// led elsewhere needs its high watermark: -1 without a way to ask, the
// records not yet delivery complete with one.
func TestDescribeOffsetsListsEveryPartitionWithState(t *testing.T) {
	for _, withHW := range []bool{false, true} {
		fh := newFakeHost()
		id := fh.addTopic(t, "q", 4, 10)
		rh := remoteHost{fakeHost: fh, remote: map[int32]bool{0: true, 2: true, 3: true}}
		var host Host = rh
		if withHW {
			host = remoteHostHW{remoteHost: rh, hw: map[int32]int64{0: 50, 2: 30, 3: 9}}
		}
		st := &mapState{recs: map[string][]share.StateRecord{}}
		// Partitions 0 and 2 have state (on another node's coordinator),
		// 3 has none; 1 is led here and gets state by being used.
		st.put(t, share.StateKey{Group: "g", TopicID: id, Partition: 0}, 7)
		st.put(t, share.StateKey{Group: "g", TopicID: id, Partition: 2}, 3)
		m := New(Config{AutoOffsetReset: "earliest"}, host, st, nil)
		t.Cleanup(m.Close)

		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = "g", "member-1", 0
		hb.SubscribedTopicNames = []string{"q"}
		if resp := m.Heartbeat(context.Background(), hb, share.ClientInfo{}); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if _, err := acquireSome(context.Background(), m, "g", id, 1); err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = "g"
		req.Groups = append(req.Groups, rg)
		resp := m.DescribeOffsets(req)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
			t.Fatalf("withHW=%v: %+v", withHW, resp.Groups)
		}
		got := map[int32]kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{}
		for _, p := range resp.Groups[0].Topics[0].Partitions {
			got[p.Partition] = p
		}
		if len(got) != 3 {
			t.Fatalf("withHW=%v: listed %v, want partitions 0, 1 and 2", withHW, got)
		}
		if got[0].StartOffset != 7 || got[2].StartOffset != 3 || got[1].StartOffset != 0 {
			t.Errorf("withHW=%v: start offsets %d, %d, %d; want 7, 0, 3", withHW, got[0].StartOffset, got[1].StartOffset, got[2].StartOffset)
		}
		if got[1].Lag != 10 {
			t.Errorf("withHW=%v: lag of the partition led here %d, want 10 (acquired, not yet acknowledged)", withHW, got[1].Lag)
		}
		wantLag0, wantLag2 := int64(-1), int64(-1)
		if withHW {
			wantLag0, wantLag2 = 50-7, 30-3
		}
		if got[0].Lag != wantLag0 || got[2].Lag != wantLag2 {
			t.Errorf("withHW=%v: lags %d and %d, want %d and %d", withHW, got[0].Lag, got[2].Lag, wantLag0, wantLag2)
		}
	}
}
