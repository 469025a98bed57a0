package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	wlog "weir/internal/log"
)

// A partition's high watermark reaches its log checkpoint, so a restarted
// replica starts from what was committed rather than from its log end.
func TestHighWatermarkCheckpointed(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr, kgo.RequiredAcks(kgo.AllISRAcks()))
	createTopic(t, ctx, c, "hwc", 1, nil)
	for i := range 5 {
		if err := c.ProduceSync(ctx, &kgo.Record{Topic: "hwc", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	tb.stop()
	raw, err := os.ReadFile(filepath.Join(partitionDir(dir, "hwc", 0), "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(raw)); len(f) != 4 || f[0] != "v2" || f[3] != "5" {
		t.Fatalf("checkpoint %q: want version 2 with high watermark 5", raw)
	}
	tb = startBroker(t, dir, nil)
	p := tb.b.lookupTopic("hwc").partitions[0]
	if hw, ok := p.log().CheckpointedHighWatermark(); !ok || hw != 5 {
		t.Fatalf("reopened log: checkpointed high watermark %d, %v; want 5", hw, ok)
	}
	if hw := p.highWatermark(); hw != 5 {
		t.Fatalf("high watermark after restart %d, want 5", hw)
	}
}

// A replica opened over a log whose checkpoint holds a high watermark
// below the log end starts there, not at the log end; a log without one
// starts at its end, as before checkpoints carried it.
func TestReplicaStartsFromCheckpointedHighWatermark(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	b := tb.b
	cfg, err := b.topicLogConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		noteHW int64 // -1: none
		want   int64
	}{
		{"checkpointed", 2, 2},
		{"none", -1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := &topic{name: "side-" + tc.name, env: b.replicaEnv()}
			p, err := b.openPartition(tp, 0, cfg, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				var bb wlog.BatchBuilder
				bb.Reset(0)
				bb.Add(0, nil, []byte("v"), nil)
				if _, err := p.log().Append(append([]byte(nil), bb.Build()...), wlog.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// The replica noted its start (0) in the log at open; -1 takes
			// it back, as a checkpoint written before they carried one.
			p.log().NoteHighWatermark(tc.noteHW)
			if err := p.log().Close(); err != nil {
				t.Fatal(err)
			}
			p, err = b.openPartition(tp, 0, cfg, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer p.log().Close()
			if got := p.rep.HighWatermark(); got != tc.want {
				t.Fatalf("replica high watermark %d, want %d (log end %d)", got, tc.want, p.log().EndOffset())
			}
			if got := p.highWatermark(); got != tc.want {
				t.Fatalf("partition high watermark %d, want %d", got, tc.want)
			}
		})
	}
}
