package broker

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkShareFetchAck is one member's ShareFetch of up to 500 records
// with the previous fetch's acknowledgements piggy-backed, over a real
// server, in both acquire modes. Records are produced beforehand in
// batches of 100 (or 1: one log batch per record), so an iteration moves
// 500 records. Run it with a fixed count, e.g. -benchtime=400x.
func BenchmarkShareFetchAck(b *testing.B) {
	for _, c := range []struct {
		mode  int8
		batch int
	}{{0, 100}, {1, 100}, {1, 1}} {
		mode, batch := c.mode, c.batch
		b.Run(fmt.Sprintf("mode=%d/batch=%d", mode, batch), func(b *testing.B) {
			tb := startBroker(b, b.TempDir(), nil)
			ctx := testCtx(b)
			p := newClient(b, tb.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
			if _, err := kadm.NewClient(p).CreateTopic(ctx, 1, 1, nil, "q"); err != nil {
				b.Fatal(err)
			}
			setGroupConfigs(b, ctx, p, "g", "share.auto.offset.reset", "earliest")
			value := make([]byte, 100)
			for i := 0; i < b.N*500; i += batch {
				recs := make([]*kgo.Record, batch)
				for j := range recs {
					recs[j] = &kgo.Record{Topic: "q", Value: value, Key: []byte(strconv.Itoa(i + j))}
				}
				if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			m := newShareMember(b, tb, "g", "bench")
			m.join(ctx, "q")
			var prev []delivered
			got := 0
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				resp := m.fetch(ctx, fetchOpts{maxRecords: 500, mode: mode, maxWait: time.Second, acks: ackAll(prev, 1)})
				prev = records(b, resp)
				got += len(prev)
			}
			b.StopTimer()
			b.ReportMetric(float64(got)/time.Since(start).Seconds(), "records/s")
		})
	}
}
