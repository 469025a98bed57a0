package broker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
)

// BenchmarkHostedReplicaHeap measures the live heap a never-written
// partition costs each node of an in-process three-node cluster at RF 3
// (every node hosts every partition: a third led, two thirds followed,
// followers idle in their fetch sessions), as bench/cluster-scale does
// for real processes. A warm-up topic opens the connections and sessions
// first, so the figure is the growth per hosted replica.
// WEIR_HEAP_PARTITIONS sets the partitions (default 6,000, in topics of
// 50); WEIR_HEAP_PROFILE names a file for a heap profile.
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
		for i := 0; i < n/50; i++ {
			create(fmt.Sprintf("t%d", i), 50)
		}
		settle(b, tc)
		after := liveHeap()
		b.ReportMetric(float64(after-before)/float64(3*(n/50)*50), "heap-B/hosted-replica")
		if path := os.Getenv("WEIR_HEAP_PROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
}

// settle waits until every follower's session on every leader holds what
// it follows and the fetches are incremental and name nothing.
func settle(b *testing.B, tc *testCluster) {
	prev := make([]fetchsession.Stats, len(tc.brokers))
	eventually(b, 5*time.Minute, func() error {
		quiet := true
		for i, tb := range tc.brokers {
			st := tb.b.fetches.Stats()
			if st.Requested[fetchsession.Incremental] != prev[i].Requested[fetchsession.Incremental] ||
				st.Requests[fetchsession.Full] != prev[i].Requests[fetchsession.Full] ||
				st.Requests[fetchsession.Incremental] < prev[i].Requests[fetchsession.Incremental]+2 {
				quiet = false
			}
			prev[i] = st
		}
		if !quiet {
			return fmt.Errorf("followers still catching up")
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
