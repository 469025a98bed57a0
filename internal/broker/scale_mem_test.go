package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
	"weir/internal/metadata"
)

// BenchmarkHostedReplicaHeap measures the live heap a never-written
// partition costs each node of an in-process three-node cluster at RF 3
// (every node hosts every partition: a third led, two thirds followed,
// followers idle in their fetch sessions), as bench/cluster-scale does
// for real processes. A warm-up topic opens the connections and sessions
// first, so the figure is the growth per hosted replica.
// WEIR_HEAP_PARTITIONS sets the partitions (default 6,000, in topics of
// 50); WEIR_HEAP_PROFILE names a file for a heap profile (and, with
// ".before" added, one taken before the partitions are created).
//
//	go test -run XXX -bench BenchmarkHostedReplicaHeap -benchtime 1x ./internal/broker
func BenchmarkHostedReplicaHeap(b *testing.B) {
	n := 6000
	if v, err := strconv.Atoi(os.Getenv("WEIR_HEAP_PARTITIONS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		tc := startCluster(b, 3)
		c := newClient(b, tc.brokers[0].addr)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		create := func(name string, parts int) {
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(parts), 3
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			if code := resp.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
				b.Fatalf("create %s: %v", name, kerr.ErrorForCode(code))
			}
			for _, tb := range tc.brokers {
				if err := tb.b.waitRegistry(ctx, func() bool { return tb.b.lookupTopic(name) != nil }); err != nil {
					b.Fatal(err)
				}
			}
		}
		create("warm", 3)
		settle(b, tc)
		before := liveHeap()
		writeHeapProfile(b, ".before")
		start := time.Now()
		for i := 0; i < n/50; i++ {
			create(fmt.Sprintf("t%d", i), 50)
		}
		created := time.Since(start)
		settle(b, tc)
		b.Logf("%d partitions created in %v, followers settled %v later", n/50*50, created.Round(time.Millisecond), (time.Since(start) - created).Round(time.Millisecond))
		after := liveHeap()
		b.ReportMetric(float64(after-before)/float64(3*(n/50)*50), "heap-B/hosted-replica")
		writeHeapProfile(b, "")
	}
}

// writeHeapProfile writes a heap profile to WEIR_HEAP_PROFILE plus
// suffix, when set: the one taken before the partitions are created
// (".before") is the base for pprof -diff_base, which leaves what they
// cost. GODEBUG=memprofilerate=1 makes the profiles exact.
func writeHeapProfile(b *testing.B, suffix string) {
	path := os.Getenv("WEIR_HEAP_PROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path + suffix)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// settle waits until every follower's session on every leader holds what
// it follows and the fetches are incremental and name nothing: since the
// last activity seen, no full request and no partition named, and at
// least two incremental requests on every leader.
func settle(b *testing.B, tc *testCluster) {
	stats := func() []fetchsession.Stats {
		out := make([]fetchsession.Stats, len(tc.brokers))
		for i, tb := range tc.brokers {
			out[i] = tb.b.fetches.Stats()
		}
		return out
	}
	base := stats()
	eventually(b, 5*time.Minute, func() error {
		now := stats()
		for i, st := range now {
			if st.Requested[fetchsession.Incremental] != base[i].Requested[fetchsession.Incremental] ||
				st.Requests[fetchsession.Full] != base[i].Requests[fetchsession.Full] {
				base = now
				return fmt.Errorf("followers still catching up")
			}
		}
		for i, st := range now {
			if st.Requests[fetchsession.Incremental] < base[i].Requests[fetchsession.Incremental]+2 {
				return fmt.Errorf("node %d: waiting for idle fetches", i+1)
			}
		}
		return nil
	})
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestNeverWrittenPartitionHeap: opening a hosted partition that was
// never written, as a topic's creation does, keeps 128 B of live heap per
// partition and nothing more: the broker's partition (48 B) and the
// replica (80 B, its Env through the partition, its counters the Env's,
// its role lock 12 B; 112 B, then 96 B before), which holds the blank log of the topic's
// settings rather than a Log of its own (48 B more before), and no
// directory or file. The size tests hold each object to its size class; this one also
// fails when opening starts keeping anything else (a Log per partition
// again, an allocation behind a new field, a per-partition name, an
// epoch-cache entry). BenchmarkHostedReplicaHeap measures the rest of a
// hosted replica (leader state, sessions, image) in a running cluster.
func TestNeverWrittenPartitionHeap(t *testing.T) {
	const n, want = 4000, 128
	b := startBroker(t, t.TempDir(), nil).b
	cfg, err := b.topicLogConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	best := math.Inf(1)
	for try := range 3 {
		tp := &topic{name: fmt.Sprintf("never-written-%d", try), env: b.replicaEnv()}
		ps := make([]*partition, n)
		before := liveHeap()
		for i := range ps {
			if ps[i], err = b.openPartition(tp, int32(i), cfg, true, 1); err != nil {
				t.Fatal(err)
			}
		}
		perPartition := float64(liveHeap()-before) / n
		runtime.KeepAlive(ps)
		best = min(best, perPartition)
		for _, p := range ps {
			if !p.log().IsBlank() {
				t.Fatalf("never-written partition %d holds a log of its own", p.index)
			}
			if _, err := os.Stat(partitionDir(b.cfg.DataDir, tp.name, p.index)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("never-written partition %d has a directory (stat: %v)", p.index, err)
			}
		}
	}
	// The least of three tries: the broker's own work beside the test can
	// only add to a try's figure.
	if best > want+2 {
		t.Fatalf("a never-written hosted partition keeps %.1f B of heap, want at most %d", best, want)
	}
	t.Logf("a never-written hosted partition keeps %.1f B of heap", best)
}

// TestHostedPartitionSize: a hosted partition's broker object stays in
// the 48-byte size class (its log, high watermark and NullStorage store
// are read through the replica and the Broker): a field added back costs
// every hosted replica 16 B.
func TestHostedPartitionSize(t *testing.T) {
	if n := unsafe.Sizeof(partition{}); n > 48 {
		t.Fatalf("partition is %d B, want at most 48", n)
	}
}

// TestUpdateAppliesOnlyItsPartitions: a metadata update that changed some
// partitions of a topic applies only those to their replicas again (at
// 50,000 partitions every ISR change of one partition cost each follower
// a pass over all its replicas); a topic reconciled whole (a created one,
// a resync) applies every partition.
func TestUpdateAppliesOnlyItsPartitions(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newClient(t, tb.addr)
	const n = 40
	createTopic(t, ctx, c, "roles", n, nil)
	b := tb.b
	var mt *metadata.Topic
	eventually(t, 10*time.Second, func() error {
		var ok bool
		if mt, ok = b.node.Image().TopicByName("roles"); !ok || b.lookupTopic("roles") == nil {
			return errors.New("the topic is not in the registry yet")
		}
		return nil
	})
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	for _, tc := range []struct {
		name string
		only map[int32]bool
		want []int32
	}{
		{"two partitions changed", map[int32]bool{3: true, 17: true}, []int32{3, 17}},
		{"the whole topic", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var roles []roleChange
			b.reconcileTopic(b.node.Image(), mt, tc.only, &roles)
			var applied []int32
			for _, rc := range roles {
				if rc.apply {
					applied = append(applied, rc.p.index)
				}
			}
			slices.Sort(applied)
			want := tc.want
			if want == nil {
				for i := range int32(n) {
					want = append(want, i)
				}
			}
			if !slices.Equal(applied, want) {
				t.Fatalf("partitions applied %v, want %v", applied, want)
			}
		})
	}
}
