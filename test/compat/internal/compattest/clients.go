package compattest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ctx returns a context that ends after d or when the test ends.
func Ctx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Client returns a franz-go client seeded with WEIR_BOOTSTRAP, closed when the
// test ends.
func Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(Seeds()...)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client on its own connection, closed when the test ends.
func Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(Client(t))
}

// Name returns a name unique to this run, so tests never see each other's
// topics or groups on a shared broker.
func Name(prefix string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return fmt.Sprintf("compat-%s-%s", prefix, hex.EncodeToString(b[:]))
}

// Topic creates a topic with the given partitions (replication factor 1) and
// configs, waits until every partition has a leader, and deletes it when the
// test ends.
func Topic(t testing.TB, adm *kadm.Client, prefix string, partitions int32, configs map[string]*string) string {
	t.Helper()
	name := Name(prefix)
	ctx := Ctx(t, 30*time.Second)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopics(ctx, name); err != nil {
			t.Logf("delete topic %s: %v", name, err)
		}
	})
	WaitLeaders(t, adm, name, int(partitions))
	return name
}

// WaitLeaders waits until topic has exactly n partitions, each with a leader
// that answers for it.
func WaitLeaders(t testing.TB, adm *kadm.Client, topic string, n int) {
	t.Helper()
	Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		td, ok := tds[topic]
		if !ok || td.Err != nil {
			return fmt.Errorf("topic %s not in metadata (err %v)", topic, td.Err)
		}
		if len(td.Partitions) != n {
			return fmt.Errorf("topic %s has %d partitions, want %d", topic, len(td.Partitions), n)
		}
		var missing []string
		for _, p := range td.Partitions.Sorted() {
			if p.Err != nil || p.Leader < 0 {
				missing = append(missing, fmt.Sprintf("%d(leader %d, %v)", p.Partition, p.Leader, p.Err))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("partitions without leader: %s", strings.Join(missing, " "))
		}
		// Metadata can name a leader before the leader has created the
		// partition. ListOffsets is answered by the partition itself.
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if len(ends[topic]) != n {
			return fmt.Errorf("end offsets listed for %d of %d partitions", len(ends[topic]), n)
		}
		return ends.Error()
	})
}
