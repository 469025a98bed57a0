package markers

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
)

// fakePartition records the markers appended to it.
type fakePartition struct {
	index    int32
	offsets  bool
	refuse   error // AppendMarker's answer
	unacked  bool  // WaitAcked waits for the context
	appended []wlog.TxnMarker
	tv       []int16
}

func (p *fakePartition) AppendMarker(m wlog.TxnMarker, tv int16) (replica.AppendResult, error) {
	if p.refuse != nil {
		return replica.AppendResult{}, p.refuse
	}
	p.appended, p.tv = append(p.appended, m), append(p.tv, tv)
	return replica.AppendResult{}, nil
}

func (p *fakePartition) WaitAcked(ctx context.Context, _ replica.AppendResult) error {
	if p.unacked {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (p *fakePartition) Offsets() (int32, bool) { return p.index, p.offsets }

type completion struct {
	partition int32
	pid       int64
	commit    bool
}

type fakeHost struct {
	parts     map[string]*fakePartition // "topic/index"
	completed []completion
	failDone  error
}

func (h *fakeHost) Leader(topic string, i int32) (Partition, error) {
	p, ok := h.parts[topic+"/"+string(rune('0'+i))]
	if !ok {
		return nil, kerr.NotLeaderForPartition
	}
	return p, nil
}

func (h *fakeHost) CompleteTransaction(_ context.Context, i int32, pid int64, commit bool) error {
	h.completed = append(h.completed, completion{i, pid, commit})
	return h.failDone
}

func request(committed bool, tv int8, topics map[string][]int32, order ...string) *kmsg.WriteTxnMarkersRequest {
	r := kmsg.NewPtrWriteTxnMarkersRequest()
	r.Version = 2
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, m.TransactionVersion = 7, 3, 5, committed, tv
	for _, name := range order {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = name, topics[name]
		m.Topics = append(m.Topics, t)
	}
	r.Markers = append(r.Markers, m)
	return r
}

func codes(resp *kmsg.WriteTxnMarkersResponse) map[string]int16 {
	out := map[string]int16{}
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				out[t.Topic+"/"+string(rune('0'+p.Partition))] = p.ErrorCode
			}
		}
	}
	return out
}

// TestWrite: every named partition is answered; led partitions get the
// marker with the request's producer, epochs and transaction version;
// a partition not led here, a refused marker, an uncommitted one and a
// failed offsets completion get their codes; __consumer_offsets
// partitions complete the transaction after the commit.
func TestWrite(t *testing.T) {
	h := &fakeHost{parts: map[string]*fakePartition{
		"t/0":                  {index: 0},
		"t/1":                  {index: 1, refuse: kerr.InvalidProducerEpoch},
		"__consumer_offsets/4": {index: 4, offsets: true},
	}}
	resp, wait := Write(h, request(true, 2, map[string][]int32{"t": {0, 1, 2}, "__consumer_offsets": {4}}, "t", "__consumer_offsets"))
	if wait == nil {
		t.Fatal("markers were appended, yet nothing to wait for")
	}
	if len(h.completed) != 0 {
		t.Fatal("an offsets partition completed its transaction before its marker was committed")
	}
	wait(context.Background())
	want := map[string]int16{"t/0": 0, "t/1": kerr.InvalidProducerEpoch.Code, "t/2": kerr.NotLeaderForPartition.Code, "__consumer_offsets/4": 0}
	if got := codes(resp); len(got) != len(want) {
		t.Fatalf("answered %v, want %v", got, want)
	} else {
		for k, c := range want {
			if got[k] != c {
				t.Errorf("%s answered %d, want %d", k, got[k], c)
			}
		}
	}
	m := h.parts["t/0"].appended
	if len(m) != 1 || m[0].Type != wlog.ControlCommit || m[0].ProducerID != 7 || m[0].ProducerEpoch != 3 || m[0].CoordinatorEpoch != 5 || h.parts["t/0"].tv[0] != 2 {
		t.Errorf("marker appended to t/0: %+v (transaction versions %v)", m, h.parts["t/0"].tv)
	}
	if len(h.completed) != 1 || h.completed[0] != (completion{4, 7, true}) {
		t.Errorf("completions %+v, want partition 4 of producer 7 committed", h.completed)
	}

	// An abort; nothing led: nothing to wait for.
	resp, wait = Write(&fakeHost{}, request(false, 0, map[string][]int32{"x": {0}}, "x"))
	if wait != nil || codes(resp)["x/0"] != kerr.NotLeaderForPartition.Code {
		t.Errorf("nothing led: wait %v, answer %v", wait != nil, codes(resp))
	}

	// A marker not committed in time, and a failed completion.
	h = &fakeHost{parts: map[string]*fakePartition{"t/0": {index: 0, unacked: true}, "__consumer_offsets/1": {index: 1, offsets: true}},
		failDone: errors.Join(kerr.NotCoordinator)}
	resp, wait = Write(h, request(false, 0, map[string][]int32{"t": {0}, "__consumer_offsets": {1}}, "t", "__consumer_offsets"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wait(ctx)
	got := codes(resp)
	if got["t/0"] != kerr.RequestTimedOut.Code || got["__consumer_offsets/1"] != kerr.NotCoordinator.Code {
		t.Errorf("answered %v, want REQUEST_TIMED_OUT and NOT_COORDINATOR", got)
	}
	if h.parts["t/0"].appended[0].Type != wlog.ControlAbort {
		t.Errorf("an abort wrote %v", h.parts["t/0"].appended[0].Type)
	}
}
