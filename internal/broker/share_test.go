package broker

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
)

// shareSetup starts a broker that allows short share locks, creates topic
// "q" with parts partitions and sets the group's configs (earliest start
// plus kv).
func shareSetup(t *testing.T, dir string, parts int32, group string, kv ...string) (*testBroker, *kgo.Client) {
	t.Helper()
	tb := startBroker(t, dir, shortShareLocks)
	ctx := testCtx(t)
	p := manualProducer(t, tb)
	if tb.b.lookupTopic("q") == nil {
		createTopic(t, ctx, p, "q", parts, nil)
	}
	setGroupConfigs(t, ctx, p, group, append([]string{"share.auto.offset.reset", "earliest"}, kv...)...)
	return tb, p
}

func offsetsOf(ds []delivered) []int64 {
	var out []int64
	for _, d := range ds {
		out = append(out, d.offset)
	}
	return out
}

func TestShareTwoMembersShareOnePartition(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 100, 10)
	a, b := newShareMember(t, tb, "g", "member-a"), newShareMember(t, tb, "g", "member-b")
	a.join(ctx, "q")
	b.join(ctx, "q")
	a.heartbeat(ctx) // a learns the assignment of the group's new epoch
	if !slices.Equal(a.parts, []int32{0}) || !slices.Equal(b.parts, []int32{0}) {
		t.Fatalf("both members must be assigned the one partition: %v %v", a.parts, b.parts)
	}
	owner := map[int64]string{}
	var pending = map[*shareMember][]delivered{}
	for round := 0; len(owner) < 100 && round < 50; round++ {
		for _, m := range []*shareMember{a, b} {
			resp := m.fetch(ctx, fetchOpts{maxRecords: 10, acks: ackAll(pending[m], 1)})
			if err := ackErrors(resp); err != nil {
				t.Fatal(err)
			}
			got := records(t, resp)
			for _, d := range got {
				if prev, dup := owner[d.offset]; dup {
					t.Fatalf("offset %d delivered to %s after %s", d.offset, m.id, prev)
				}
				if d.value != fmt.Sprint("v", d.offset) || d.count != 1 {
					t.Fatalf("bad record %+v", d)
				}
				owner[d.offset] = m.id
			}
			pending[m] = got
		}
	}
	if len(owner) != 100 {
		t.Fatalf("%d of 100 records delivered", len(owner))
	}
	per := map[string]int{}
	for _, m := range owner {
		per[m]++
	}
	if per["member-a"] == 0 || per["member-b"] == 0 {
		t.Fatalf("records were not shared: %v", per)
	}
}

func TestShareReleaseRejectAndLockExpiry(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g", "share.record.lock.duration.ms", "1000")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 3, 3)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	first := m.fetch(ctx, fetchOpts{maxWait: time.Second})
	if first.AcquisitionLockTimeoutMillis != 1000 {
		t.Fatalf("AcquisitionLockTimeoutMs %d, want the group's 1000", first.AcquisitionLockTimeoutMillis)
	}
	if got := offsetsOf(records(t, first)); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("first delivery %v", got)
	}
	// RELEASE 0, REJECT 1, nothing for 2.
	resp := m.fetch(ctx, fetchOpts{acks: map[int32][]ack{0: {{0, 1, []int8{2, 3}}}}})
	if err := ackErrors(resp); err != nil {
		t.Fatal(err)
	}
	got := records(t, resp)
	if len(got) != 1 || got[0].offset != 0 || got[0].count != 2 {
		t.Fatalf("after release: %+v, want offset 0 again with delivery count 2", got)
	}
	// Offset 2's lock expires; it comes back, offset 1 never does.
	var seen []delivered
	eventually(t, 5*time.Second, func() error {
		seen = append(seen, records(t, m.fetch(ctx, fetchOpts{maxWait: 200 * time.Millisecond}))...)
		for _, d := range seen {
			if d.offset == 1 {
				t.Fatalf("rejected offset 1 delivered again: %+v", d)
			}
			if d.offset == 2 {
				if d.count != 2 {
					return fmt.Errorf("offset 2 came back with delivery count %d", d.count)
				}
				return nil
			}
		}
		return fmt.Errorf("offset 2 not redelivered yet (%v)", seen)
	})
	st := describeShareOffset(t, tb, shareKey(t, tb, "g", 0))
	if st.start != 0 {
		t.Fatalf("start offset %d while 0 and 2 are in flight", st.start)
	}
}

func shareKey(t *testing.T, tb *testBroker, group string, partition int32) share.StateKey {
	return share.StateKey{Group: group, TopicID: topicIDOf(t, tb, "q"), Partition: partition}
}

func TestShareArchivedAfterDeliveryLimit(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 2, 1)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	var prev []delivered
	for i := 1; i <= 5; i++ {
		resp := m.fetch(ctx, fetchOpts{maxWait: time.Second, maxRecords: 1, acks: ackAll(prev, 2)})
		if err := ackErrors(resp); err != nil {
			t.Fatal(err)
		}
		got := records(t, resp)
		if len(got) != 1 || got[0].offset != 0 || got[0].count != int16(i) {
			t.Fatalf("delivery %d: %+v", i, got)
		}
		prev = got
	}
	// The fifth release archives offset 0; offset 1 is next.
	resp := m.fetch(ctx, fetchOpts{maxWait: time.Second, acks: ackAll(prev, 2)})
	got := records(t, resp)
	if len(got) != 1 || got[0].offset != 1 || got[0].count != 1 {
		t.Fatalf("after the fifth release: %+v, want only offset 1", got)
	}
	if st := describeShareOffset(t, tb, shareKey(t, tb, "g", 0)); st.start != 1 {
		t.Fatalf("start offset %d, want 1 past the archived record", st.start)
	}
}

// shareMemberOn starts a broker on dir with a one-partition topic q
// holding n records (in batches of 5) and a member m of group g joined to
// it: a broker a test restarts with the same dir (the records are
// produced again only if n > 0).
func shareMemberOn(t *testing.T, dir string, n int, member string) (*testBroker, *shareMember) {
	t.Helper()
	tb, p := shareSetup(t, dir, 1, "g")
	ctx := testCtx(t)
	if n > 0 {
		produceN(t, ctx, p, "q", 0, 0, n, 5)
	}
	m := newShareMember(t, tb, "g", member)
	m.join(ctx, "q")
	return tb, m
}

// fetchAtLeast fetches until n records came (within 5 s) and returns
// them.
func (m *shareMember) fetchAtLeast(ctx context.Context, n int) []delivered {
	m.t.Helper()
	var got []delivered
	eventually(m.t, 5*time.Second, func() error {
		got = append(got, records(m.t, m.fetch(ctx, fetchOpts{maxWait: 200 * time.Millisecond}))...)
		if len(got) < n {
			return fmt.Errorf("%d of %d records so far", len(got), n)
		}
		return nil
	})
	return got
}

func TestShareRestartKeepsAcknowledgements(t *testing.T) {
	dir := t.TempDir()
	tb, m := shareMemberOn(t, dir, 20, "m")
	ctx := testCtx(t)
	got := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second}))
	if len(got) != 20 {
		t.Fatalf("got %d records", len(got))
	}
	// Accept 0-9 and 15, release 10; 11-14 and 16-19 stay acquired.
	acks := map[int32][]ack{0: {{0, 10, []int8{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}}, {15, 15, []int8{1}}}}
	resp := m.fetch(ctx, fetchOpts{acks: acks, maxRecords: 1})
	if err := ackErrors(resp); err != nil {
		t.Fatal(err)
	}
	if got := records(t, resp); len(got) != 1 || got[0].offset != 10 || got[0].count != 2 {
		t.Fatalf("the released offset 10 was not acquired again: %+v", got)
	}
	// The member's connection closes: its session ends and what it holds
	// is released, the deliveries taken back (offset 10 was delivered
	// twice, the others once).
	m.c.Close()
	eventually(t, 5*time.Second, func() error {
		if n := acquiredIn(t, tb, "g", "q", 0); n != 0 {
			return fmt.Errorf("%d records still acquired", n)
		}
		return nil
	})
	tb.stop()

	tb2, m2 := shareMemberOn(t, dir, 0, "m2")
	again := m2.fetchAtLeast(ctx, 9)
	want := []int64{10, 11, 12, 13, 14, 16, 17, 18, 19}
	if got := offsetsOf(again); !slices.Equal(got, want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	for _, d := range again {
		wantCount := int16(1)
		if d.offset == 10 {
			wantCount = 2
		}
		if d.count != wantCount {
			t.Fatalf("offset %d delivery count %d, want %d", d.offset, d.count, wantCount)
		}
	}
	if st := describeShareOffset(t, tb2, shareKey(t, tb2, "g", 0)); st.start != 10 {
		t.Fatalf("start offset %d after restart, want 10", st.start)
	}
}

// TestShareDeferredAcksSurviveRestart: a record_limit member accepts
// 0-14 over three rounds on tagged fetches (wiretag.ShareFetchDeferAcks),
// whose state changes the share partition gathers and writes together
// (sharegroup's group commit). Once a ShareAcknowledge (a commit) has
// answered, a crash (the data directory copied as it is) keeps them done;
// a clean stop without a commit keeps them too. Only 15-19, acquired and
// not acknowledged, come back.
func TestShareDeferredAcksSurviveRestart(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			dir := t.TempDir()
			tb, m := shareMemberOn(t, dir, 20, "m")
			ctx := testCtx(t)
			got := records(t, m.fetch(ctx, fetchOpts{maxRecords: 5, mode: 1, maxWait: time.Second, deferAcks: true}))
			for range 3 {
				resp := m.fetch(ctx, fetchOpts{maxRecords: 5, mode: 1, acks: ackAll(got, 1), deferAcks: true})
				if err := ackErrors(resp); err != nil {
					t.Fatal(err)
				}
				got = records(t, resp)
			}
			if offs := offsetsOf(got); !slices.Equal(offs, []int64{15, 16, 17, 18, 19}) {
				t.Fatalf("the fourth round acquired %v, want 15-19", offs)
			}
			restartDir := dir
			if commit {
				resp := m.acknowledge(ctx, nil, false)
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					t.Fatal(err)
				}
				for _, rt := range resp.Topics {
					for _, p := range rt.Partitions {
						if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
							t.Fatalf("commit: partition %d: %v", p.Partition, err)
						}
					}
				}
				restartDir = t.TempDir()
				copyDir(t, dir, restartDir)
			} else {
				tb.stop()
			}
			_, m2 := shareMemberOn(t, restartDir, 0, "m2")
			if offs := offsetsOf(m2.fetchAtLeast(ctx, 5)); !slices.Equal(offs, []int64{15, 16, 17, 18, 19}) {
				t.Fatalf("after the restart: %v, want 15-19 (0-14 were accepted)", offs)
			}
		})
	}
}

// TestShareAcquisitionsAreNotWritten: acquiring fresh records writes
// nothing to __share_group_state (share.StateRecord.WithoutLocks); their
// acknowledgement is written; and after a restart the acknowledged records
// stay done while the ones only acquired come back with delivery count 1.
func TestShareAcquisitionsAreNotWritten(t *testing.T) {
	dir := t.TempDir()
	tb, m := shareMemberOn(t, dir, 30, "m")
	ctx := testCtx(t)
	stateEnd := func() int64 {
		var n int64
		for _, lp := range stateLogs(t, tb.b) {
			n += lp.log().EndOffset()
		}
		return n
	}
	// The first fetch makes the share partition (its snapshot is written).
	first := records(t, m.fetch(ctx, fetchOpts{maxRecords: 5, mode: 1, maxWait: time.Second}))
	if len(first) != 5 {
		t.Fatalf("first fetch: %d records", len(first))
	}
	before := stateEnd()
	second := records(t, m.fetch(ctx, fetchOpts{maxRecords: 5, mode: 1, acks: ackAll(first, 1)}))
	if len(second) != 5 {
		t.Fatalf("second fetch: %d records", len(second))
	}
	afterAck := stateEnd()
	if afterAck <= before {
		t.Fatalf("the acknowledgement of 5 records wrote nothing (state log end %d, then %d)", before, afterAck)
	}
	third := records(t, m.fetch(ctx, fetchOpts{maxRecords: 5, mode: 1}))
	if len(third) != 5 {
		t.Fatalf("third fetch: %d records", len(third))
	}
	if end := stateEnd(); end != afterAck {
		t.Fatalf("acquiring 5 fresh records wrote %d state records", end-afterAck)
	}
	tb.stop()

	_, m2 := shareMemberOn(t, dir, 0, "m2")
	got := records(t, m2.fetch(ctx, fetchOpts{maxRecords: 100, maxWait: time.Second}))
	if offs := offsetsOf(got); len(offs) == 0 || offs[0] != 5 || len(offs) != 25 {
		t.Fatalf("after restart: offsets %v, want 5 to 29", offs)
	}
	for _, d := range got {
		if d.count != 1 {
			t.Fatalf("offset %d delivery count %d after the restart, want 1 (the lost acquisition is not counted)", d.offset, d.count)
		}
	}
}

func TestShareAcquireModes(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "strict")
	ctx := testCtx(t)
	setGroupConfigs(t, ctx, p, "soft", "share.auto.offset.reset", "earliest")
	produceN(t, ctx, p, "q", 0, 0, 50, 50)
	for _, tc := range []struct {
		group string
		mode  int8
		want  int
	}{
		{"strict", 1, 7},
		{"soft", 0, 50}, // the batch that reaches MaxRecords is completed
	} {
		m := newShareMember(t, tb, tc.group, "m")
		m.join(ctx, "q")
		got := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second, maxRecords: 7, mode: tc.mode}))
		if len(got) != tc.want {
			t.Errorf("mode %d: %d records acquired, want %d", tc.mode, len(got), tc.want)
		}
		if tc.mode == 1 {
			more := records(t, m.fetch(ctx, fetchOpts{maxRecords: 7, mode: 1}))
			if len(more) != 7 || more[0].offset != 7 {
				t.Errorf("strict mode second fetch: %v", offsetsOf(more))
			}
		}
	}
}

func TestShareLongPollWokenByProduce(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g")
	ctx := testCtx(t)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	if got := records(t, m.fetch(ctx, fetchOpts{})); len(got) != 0 {
		t.Fatalf("empty topic delivered %v", got)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(200 * time.Millisecond)
		produceN(t, ctx, p, "q", 0, 0, 3, 3)
	}()
	start := time.Now()
	got := records(t, m.fetch(ctx, fetchOpts{maxWait: 20 * time.Second}))
	elapsed := time.Since(start)
	wg.Wait()
	if len(got) != 3 {
		t.Fatalf("woken fetch delivered %v", got)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("fetch answered after %v: it waited out its max wait instead of being woken", elapsed)
	}
	st := tb.b.ShareStats()
	if st.Parked != 1 || st.ParkedEmpty != 0 || st.ParkedTime <= 0 || st.ParkedTime > elapsed {
		t.Fatalf("wait stats %+v after one woken fetch of %v", st, elapsed)
	}
	if len(st.Partitions) != 1 || st.Partitions[0].Topic != "q" || st.Partitions[0].Acquired != 3 || st.Partitions[0].AcquiredTotal != 3 {
		t.Fatalf("partition stats %+v", st.Partitions)
	}
}

func TestShareLongPollWokenByRelease(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 5, 5)
	a, b := newShareMember(t, tb, "g", "a"), newShareMember(t, tb, "g", "b")
	a.join(ctx, "q")
	b.join(ctx, "q")
	held := records(t, a.fetch(ctx, fetchOpts{maxWait: time.Second}))
	if len(held) != 5 {
		t.Fatalf("a got %d", len(held))
	}
	if got := records(t, b.fetch(ctx, fetchOpts{})); len(got) != 0 {
		t.Fatalf("b got records a holds: %v", got)
	}
	done := make(chan []delivered, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		done <- records(t, b.fetch(ctx, fetchOpts{maxWait: 15 * time.Second}))
	}()
	time.Sleep(200 * time.Millisecond) // let b park
	start := time.Now()
	if resp := a.acknowledge(ctx, ackAll(held, 2), false); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %+v", resp)
	}
	got := <-done
	if len(got) != 5 || got[0].count != 2 {
		t.Fatalf("b after a's release: %+v", got)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("b was woken %v after the release", waited)
	}
}

func TestShareSessionErrors(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 5, 5)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	epoch := func(e int32) *int32 { return &e }
	code := func(resp *kmsg.ShareFetchResponse) error { return kerr.ErrorForCode(resp.ErrorCode) }
	if err := code(m.fetch(ctx, fetchOpts{epoch: epoch(3)})); err != kerr.ShareSessionNotFound {
		t.Fatalf("fetch without a session: %v", err)
	}
	if err := code(m.fetch(ctx, fetchOpts{acks: map[int32][]ack{0: {{0, 0, []int8{1}}}}})); err != kerr.InvalidRequest {
		t.Fatalf("acks in the opening fetch: %v", err)
	}
	got := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second}))
	if len(got) != 5 {
		t.Fatalf("got %d", len(got))
	}
	if err := code(m.fetch(ctx, fetchOpts{epoch: epoch(m.session + 1)})); err != kerr.InvalidShareSessionEpoch {
		t.Fatalf("wrong epoch: %v", err)
	}
	// An acknowledgement of a record the member does not hold.
	other := newShareMember(t, tb, "g", "other")
	other.topic, other.parts = m.topic, m.parts
	other.fetch(ctx, fetchOpts{})
	ar := other.acknowledge(ctx, map[int32][]ack{0: {{0, 0, []int8{1}}}}, false)
	if err := kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode); err != kerr.InvalidRecordState {
		t.Fatalf("ack of another member's record: %v", err)
	}
	// RENEW needs IsRenewAck.
	ar = m.acknowledge(ctx, map[int32][]ack{0: {{0, 0, []int8{4}}}}, false)
	if err := kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode); err != kerr.InvalidRequest {
		t.Fatalf("renew without IsRenewAck: %v", err)
	}
	ar = m.acknowledge(ctx, map[int32][]ack{0: {{0, 4, []int8{4}}}}, true)
	if err := kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode); err != nil || ar.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("renew: %v, lock timeout %d", err, ar.AcquisitionLockTimeoutMillis)
	}
	// Closing the session releases what the member holds.
	resp := m.fetch(ctx, fetchOpts{epoch: epoch(-1)})
	if resp.ErrorCode != 0 {
		t.Fatalf("close: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	got = records(t, other.fetch(ctx, fetchOpts{maxWait: time.Second}))
	if len(got) != 5 || got[0].count != 1 {
		t.Fatalf("after the session closed, the other member got %+v (count back to 1: the release took the delivery back)", got)
	}
}

// copyDir copies a broker's data directory while it runs: what a crash
// would leave on disk (appends already written, nothing flushed on close).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if strings.HasSuffix(path, ".lock") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShareCrashRedeliversOnlyUnacknowledged: after a crash (the data
// directory copied as it is), the acknowledged records stay done and the
// others come back. Acquisitions are not written (as in Kafka), so the
// delivery the crash cut short is not counted: the records come back
// with delivery count 1 again.
func TestShareCrashRedeliversOnlyUnacknowledged(t *testing.T) {
	dir := t.TempDir()
	tb, p := shareSetup(t, dir, 1, "g")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 5, 5)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	if got := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second})); len(got) != 5 {
		t.Fatalf("got %d", len(got))
	}
	if err := ackErrors(m.fetch(ctx, fetchOpts{acks: map[int32][]ack{0: {{0, 1, []int8{1}}}}})); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	copyDir(t, dir, crashed)

	tb2, _ := shareSetup(t, crashed, 1, "g")
	m2 := newShareMember(t, tb2, "g", "m2")
	m2.join(ctx, "q")
	got := records(t, m2.fetch(ctx, fetchOpts{maxWait: time.Second}))
	if !slices.Equal(offsetsOf(got), []int64{2, 3, 4}) {
		t.Fatalf("after the crash: %v, want 2-4", offsetsOf(got))
	}
	for _, d := range got {
		if d.count != 1 {
			t.Fatalf("offset %d delivery count %d after the crash, want 1 (acquisitions are not written)", d.offset, d.count)
		}
	}
}

func TestShareRecordLimitIsSharedByPartitions(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 3, "g")
	ctx := testCtx(t)
	for part := range int32(3) {
		produceN(t, ctx, p, "q", part, 0, 10, 10)
	}
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	total := 0
	for range 6 {
		got := records(t, m.fetch(ctx, fetchOpts{maxWait: 100 * time.Millisecond, maxRecords: 5, mode: 1}))
		if len(got) > 5 {
			t.Fatalf("record_limit fetch acquired %d records, MaxRecords is 5", len(got))
		}
		total += len(got)
	}
	if total != 30 {
		t.Fatalf("%d records in six fetches of 5, want all 30", total)
	}
}

// TestShareAcksOnlyFetchAcquiresNothing: a ShareFetch with MaxRecords 0
// applies its acknowledgements and takes no records, so a record_limit
// Java consumer never holds records it did not ask for (and waits where
// Kafka makes it wait).
func TestShareAcksOnlyFetchAcquiresNothing(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 10, 10)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	first := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second, maxRecords: 5, mode: 1}))
	if got := offsetsOf(first); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("first delivery %v", got)
	}
	resp := m.fetch(ctx, fetchOpts{acksOnly: true, mode: 1, acks: map[int32][]ack{0: {{0, 4, []int8{1}}}}})
	if err := ackErrors(resp); err != nil {
		t.Fatal(err)
	}
	if got := records(t, resp); len(got) != 0 {
		t.Fatalf("acknowledgement-only fetch delivered %v", offsetsOf(got))
	}
	if st := describeShareOffset(t, tb, shareKey(t, tb, "g", 0)); st.start != 5 {
		t.Fatalf("start offset %d after accepting 0-4, want 5", st.start)
	}
	next := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second, maxRecords: 5, mode: 1}))
	if got := offsetsOf(next); !slices.Equal(got, []int64{5, 6, 7, 8, 9}) {
		t.Fatalf("after the acknowledgement-only fetch: %v, want 5-9 still available", got)
	}
}

func TestShareFencedMemberReleases(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 1, "g", "share.session.timeout.ms", "300", "share.heartbeat.interval.ms", "100")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 4, 4)
	gone, stays := newShareMember(t, tb, "g", "gone"), newShareMember(t, tb, "g", "stays")
	gone.join(ctx, "q")
	if got := records(t, gone.fetch(ctx, fetchOpts{maxWait: time.Second})); len(got) != 4 {
		t.Fatalf("got %d", len(got))
	}
	stays.join(ctx, "q")
	// "gone" stops heartbeating; "stays" keeps its membership and waits.
	var got []delivered
	eventually(t, 10*time.Second, func() error {
		if resp := stays.heartbeat(ctx); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		got = append(got, records(t, stays.fetch(ctx, fetchOpts{maxWait: 50 * time.Millisecond}))...)
		if len(got) < 4 {
			return fmt.Errorf("%d records back from the fenced member", len(got))
		}
		return nil
	})
	if got[0].count != 1 {
		t.Fatalf("a fenced member's records come back with their delivery taken back: %+v", got[0])
	}
	if resp := gone.heartbeat(ctx); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestShareSessionLimit(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.Share.MaxSessions = 1 })
	ctx := testCtx(t)
	p := manualProducer(t, tb)
	createTopic(t, ctx, p, "q", 1, nil)
	a, b := newShareMember(t, tb, "g", "a"), newShareMember(t, tb, "g", "b")
	a.join(ctx, "q")
	b.join(ctx, "q")
	if resp := a.fetch(ctx, fetchOpts{}); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	start := time.Now()
	resp := b.fetch(ctx, fetchOpts{maxWait: 300 * time.Millisecond})
	if resp.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("second session: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("the refusal came after %v, not after MaxWaitMs", waited)
	}
}

func TestShareStateLogStaysShort(t *testing.T) {
	dir := t.TempDir()
	small := func(c *Config) {
		shortShareLocks(c)
		c.Share.SnapshotEvery = 10
		c.Share.StateLogRecords = 50
	}
	tb := startBroker(t, dir, small)
	ctx := testCtx(t)
	p := manualProducer(t, tb)
	createTopic(t, ctx, p, "q", 1, nil)
	setGroupConfigs(t, ctx, p, "g", "share.auto.offset.reset", "earliest")
	produceN(t, ctx, p, "q", 0, 0, 300, 1)
	m := newShareMember(t, tb, "g", "m")
	m.join(ctx, "q")
	var prev []delivered
	for range 300 {
		resp := m.fetch(ctx, fetchOpts{maxRecords: 1, maxWait: time.Second, acks: ackAll(prev, 1)})
		if err := ackErrors(resp); err != nil {
			t.Fatal(err)
		}
		prev = records(t, resp)
		if len(prev) == 0 {
			break
		}
	}
	if err := ackErrors(m.fetch(ctx, fetchOpts{acks: ackAll(prev, 1)})); err != nil {
		t.Fatal(err)
	}
	state := stateLogs(t, tb.b)[0].log()
	if start, end := state.StartOffset(), state.EndOffset(); start == 0 || end-start > 200 {
		t.Fatalf("__share_group_state holds [%d, %d): the log start did not follow the snapshots", start, end)
	}
	tb.stop()
	tb2 := startBroker(t, dir, small)
	if st := describeShareOffset(t, tb2, shareKey(t, tb2, "g", 0)); st.start != 300 {
		t.Fatalf("after restart from the shortened log: start offset %d, want 300", st.start)
	}
}
