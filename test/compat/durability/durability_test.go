package durability

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	ct "weir/test/compat/internal/compattest"
)

func TestMain(m *testing.M) { ct.Main(m, ct.RestartEnv) }

// restart runs WEIR_RESTART_CMD with mode "graceful" or "kill".
func restart(t *testing.T, mode string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "sh", "-c", os.Getenv(ct.RestartEnv)+" "+mode)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("restart (%s): %v", mode, err)
	}
	t.Logf("broker restarted (%s) in %v", mode, time.Since(start).Round(time.Millisecond))
}

func TestAcknowledgedSurvivesRestart(t *testing.T) {
	const partitions, n, committedAt = 3, 6000, 4000
	for _, mode := range []string{"graceful", "kill"} {
		t.Run(mode, func(t *testing.T) {
			adm := ct.Admin(t)
			topic := ct.Topic(t, adm, "durable-"+mode, partitions, nil)
			group := ct.Name("durable-" + mode)
			prod := ct.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
			pos := ct.Produce(t, prod, topic, 0, n)

			// The group commits, for each partition, the offset just past the
			// last of the first committedAt records.
			commit := kadm.Offsets{}
			for i := 0; i < committedAt; i++ {
				p := pos[i]
				if o, ok := commit.Lookup(topic, p.Partition); !ok || o.At < p.Offset+1 {
					commit.AddOffset(topic, p.Partition, p.Offset+1, -1)
				}
			}
			if err := adm.CommitAllOffsets(ct.Ctx(t, 15*time.Second), group, commit); err != nil {
				t.Fatalf("commit: %v", err)
			}

			prod.Close()
			restart(t, mode)

			// Everything acknowledged is still there, in place.
			recs := ct.ReadAll(t, topic, n, 2*time.Minute)
			if err := ct.VerifyExactlyOnce(recs, 0, n, pos); err != nil {
				t.Fatal(err)
			}

			// The committed offsets came back as committed.
			var fetched kadm.OffsetResponses
			ct.Eventually(t, 60*time.Second, func() error {
				var err error
				fetched, err = adm.FetchOffsets(context.Background(), group)
				if err == nil {
					err = fetched.Error()
				}
				return err
			})
			commit.Each(func(o kadm.Offset) {
				got, ok := fetched.Lookup(topic, o.Partition)
				if !ok || got.At != o.At {
					t.Errorf("partition %d committed %d before restart, %d after (found %v)", o.Partition, o.At, got.At, ok)
				}
			})

			// A group member resumes exactly after the committed records.
			rest := readGroup(t, group, topic, n-committedAt)
			if err := ct.VerifyExactlyOnce(rest, committedAt, n, pos); err != nil {
				t.Fatalf("records after the committed offsets: %v", err)
			}

			// The broker still takes writes after the restart.
			prod2 := ct.Client(t)
			ct.Produce(t, prod2, topic, n, n+100)
		})
	}
}

// readGroup consumes want records as a member of group.
func readGroup(t *testing.T, group, topic string, want int) []*kgo.Record {
	t.Helper()
	cl := ct.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ct.Ctx(t, time.Minute)
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s read %d of %d records", group, len(out), want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("group fetch %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}
