package franzgo

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	ct "weir/test/compat/internal/compattest"
)

// ledger records which member consumed each record index and notes the first
// record delivered twice within the group.
type ledger struct {
	mu   sync.Mutex
	by   map[int]string
	fail error
}

func (l *ledger) add(member string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, err := ct.Check(r)
	switch {
	case err != nil && l.fail == nil:
		l.fail = err
	case err != nil:
	case l.by[i] != "" && l.fail == nil:
		l.fail = fmt.Errorf("record %d (%d@%d) consumed by %s after %s", i, r.Partition, r.Offset, member, l.by[i])
	case l.by[i] == "":
		l.by[i] = member
	}
}

// counts returns how many records of [from, to) each member consumed, and how many overall.
func (l *ledger) counts(from, to int) (map[string]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := map[string]int{}
	total := 0
	for i, m := range l.by {
		if i >= from && i < to {
			per[m]++
			total++
		}
	}
	return per, total
}

func (l *ledger) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fail
}

// member is one group consumer: it commits what it has processed when
// partitions are revoked, and tracks its current assignment.
type member struct {
	name string
	cl   *kgo.Client

	mu       sync.Mutex
	assigned map[int32]bool
	lost     int
}

func newMember(t *testing.T, name, group, topic string, proto []kgo.Opt) *member {
	m := &member{name: name, assigned: map[int32]bool{}}
	opts := append([]kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				m.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Errorf("%s: commit on revoke: %v", name, err)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				delete(m.assigned, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.lost++
			for _, p := range ps[topic] {
				delete(m.assigned, p)
			}
		}),
	}, proto...)
	m.cl = ct.Client(t, opts...)
	return m
}

func (m *member) assignment() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.assigned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// consume polls until ctx ends, handing every record to l. Rebalances happen
// only between polls (BlockRebalanceOnPoll), after the records are recorded.
func (m *member) consume(ctx context.Context, t *testing.T, l *ledger) {
	for {
		fs := m.cl.PollRecords(ctx, 1000)
		if ctx.Err() != nil {
			m.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("%s: fetch %s/%d: %v", m.name, topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { l.add(m.name, r) })
		m.cl.AllowRebalance()
	}
}

func TestConsumerGroupHandover(t *testing.T) {
	for _, tc := range []struct {
		protocol string // group type the broker must report
		opts     []kgo.Opt
	}{
		{"classic", nil},
		{"consumer", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			const partitions, n1, n2 = 4, 2000, 2000
			adm := ct.Admin(t)
			topic := ct.Topic(t, adm, "group-"+tc.protocol, partitions, nil)
			group := ct.Name("group-" + tc.protocol)
			prod := ct.Client(t)
			ct.Produce(t, prod, topic, 0, n1)

			l := &ledger{by: map[int]string{}}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			start := func(m *member) {
				wg.Add(1)
				go func() { defer wg.Done(); m.consume(ctx, t, l) }()
			}

			a := newMember(t, "A", group, topic, tc.opts)
			start(a)
			ct.Eventually(t, 60*time.Second, func() error {
				if _, got := l.counts(0, n1); got != n1 {
					return fmt.Errorf("A alone consumed %d of %d records", got, n1)
				}
				return nil
			})
			if got := a.assignment(); len(got) != partitions {
				t.Fatalf("A alone is assigned %v, want all %d partitions", got, partitions)
			}

			b := newMember(t, "B", group, topic, tc.opts)
			start(b)
			ct.Eventually(t, 60*time.Second, func() error {
				pa, pb := a.assignment(), b.assignment()
				if len(pa) == 0 || len(pb) == 0 || len(pa)+len(pb) != partitions {
					return fmt.Errorf("assignments A=%v B=%v, want both non-empty covering %d partitions", pa, pb, partitions)
				}
				return checkGroupMembers(adm, group, tc.protocol, partitions)
			})

			ct.Produce(t, prod, topic, n1, n1+n2)
			ct.Eventually(t, 60*time.Second, func() error {
				per, got := l.counts(n1, n1+n2)
				if got != n2 {
					return fmt.Errorf("consumed %d of %d records after B joined (%v)", got, n2, per)
				}
				if per["A"] == 0 || per["B"] == 0 {
					return fmt.Errorf("records after B joined by member: %v, want both", per)
				}
				return nil
			})
			if err := l.err(); err != nil {
				t.Fatal(err)
			}

			commitCtx := ct.Ctx(t, 15*time.Second)
			for _, m := range []*member{a, b} {
				if err := m.cl.CommitUncommittedOffsets(commitCtx); err != nil {
					t.Fatalf("%s: commit: %v", m.name, err)
				}
			}
			checkCommittedAtEnd(t, adm, group, topic, partitions)

			other := map[string]string{"classic": "consumer", "consumer": "classic"}[tc.protocol]
			for _, typ := range []string{tc.protocol, other} {
				listed, err := adm.ListGroupsByType(commitCtx, []string{typ})
				if err != nil {
					t.Fatalf("list groups of type %s: %v", typ, err)
				}
				g, ok := listed[group]
				if want := typ == tc.protocol; ok != want {
					t.Errorf("group %s listed under type %s: %v, want %v", group, typ, ok, want)
				}
				if ok && g.ProtocolType != "consumer" {
					t.Errorf("group %s protocol type %q, want consumer", group, g.ProtocolType)
				}
			}
			for _, m := range []*member{a, b} {
				m.mu.Lock()
				if m.lost != 0 {
					t.Errorf("%s lost its partitions %d times; a clean handover revokes", m.name, m.lost)
				}
				m.mu.Unlock()
			}
		})
	}
}

// checkGroupMembers asks the broker, through the describe API of the group's
// protocol, whether the group is stable with two members sharing all partitions.
func checkGroupMembers(adm *kadm.Client, group, protocol string, partitions int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var (
		state string
		sizes []int
		err   error
	)
	if protocol == "classic" {
		state, sizes, err = describeClassic(ctx, adm, group)
	} else {
		state, sizes, err = describeConsumer(ctx, adm, group)
	}
	if err != nil {
		return fmt.Errorf("describe group %s: %w", group, err)
	}
	if state != "Stable" {
		return fmt.Errorf("group %s is %s, want Stable", group, state)
	}
	if len(sizes) != 2 || sizes[0] == 0 || sizes[1] == 0 || sizes[0]+sizes[1] != partitions {
		return fmt.Errorf("broker describes %d members with %v partitions, want 2 sharing %d", len(sizes), sizes, partitions)
	}
	return nil
}

// describeClassic returns a classic group's state and each member's partition count (DescribeGroups).
func describeClassic(ctx context.Context, adm *kadm.Client, group string) (string, []int, error) {
	dgs, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		err = dgs[group].Err
	}
	if err != nil {
		return "", nil, err
	}
	var sizes []int
	for _, m := range dgs[group].Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return "", nil, fmt.Errorf("member %s assignment is not a consumer assignment", m.MemberID)
		}
		n := 0
		for _, tp := range ca.Topics {
			n += len(tp.Partitions)
		}
		sizes = append(sizes, n)
	}
	return dgs[group].State, sizes, nil
}

// describeConsumer is describeClassic for a KIP-848 group (ConsumerGroupDescribe).
func describeConsumer(ctx context.Context, adm *kadm.Client, group string) (string, []int, error) {
	dgs, err := adm.DescribeConsumerGroups(ctx, group)
	if err == nil {
		err = dgs[group].Err
	}
	if err != nil {
		return "", nil, err
	}
	var sizes []int
	for _, m := range dgs[group].Members {
		n := 0
		for _, ps := range m.Assignment {
			n += len(ps)
		}
		sizes = append(sizes, n)
	}
	return dgs[group].State, sizes, nil
}

// checkCommittedAtEnd requires the group's committed offset on every partition
// to equal the partition's end offset.
func checkCommittedAtEnd(t *testing.T, adm *kadm.Client, group, topic string, partitions int) {
	t.Helper()
	ctx := ct.Ctx(t, 15*time.Second)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	for p := int32(0); p < int32(partitions); p++ {
		end, _ := ends.Lookup(topic, p)
		c, ok := committed.Lookup(topic, p)
		if !ok || c.At != end.Offset {
			t.Errorf("partition %d: committed %d (found %v), end offset %d", p, c.At, ok, end.Offset)
		}
	}
}
