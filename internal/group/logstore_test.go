package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// memPartition is a __consumer_offsets partition over a real log.
type memPartition struct {
	i       int32
	leading bool
	l       *wlog.Log
	coord   []bool // per append: written as a coordinator's transactional batch
}

func (p *memPartition) Index() int32   { return p.i }
func (p *memPartition) Leading() bool  { return p.leading }
func (p *memPartition) Log() *wlog.Log { return p.l }
func (p *memPartition) AppendCommitted(_ context.Context, batch []byte, coordinator bool) error {
	p.coord = append(p.coord, coordinator)
	_, err := p.l.Append(batch, wlog.AppendOptions{LeaderEpoch: 1})
	return err
}

// LogStore writes a group's records to the partition it hashes to, as
// one batch, refuses a group led elsewhere, and replays what the
// partitions led here hold, transactional batches marked.
func TestLogStore(t *testing.T) {
	var parts []*memPartition
	for i := range 3 {
		l, err := wlog.Open(t.TempDir(), wlog.DefaultConfig(), wlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		parts = append(parts, &memPartition{i: int32(i), leading: i != 2, l: l})
	}
	s := LogStore{Now: time.Now, Partitions: func() []LogPartition {
		out := make([]LogPartition, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out
	}}
	ctx := context.Background()
	var here, elsewhere string
	for _, g := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if PartitionFor(g, 3) == 2 {
			elsewhere = g
		} else if here == "" {
			here = g
		}
	}
	if err := s.Append(ctx, here, []Record{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2"), Value: nil}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTxn(ctx, here, 7, 3, []Record{{Key: []byte("k3"), Value: []byte("v3")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, elsewhere, []Record{{Key: []byte("x")}}); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("a group led elsewhere: %v, want NOT_COORDINATOR", err)
	}
	if err := s.Append(ctx, here, nil); err != nil {
		t.Fatalf("nothing to write: %v", err)
	}
	p := parts[PartitionFor(here, 3)]
	if len(p.coord) != 2 || p.coord[0] || !p.coord[1] {
		t.Fatalf("appends %v: want one plain batch, then one coordinator batch", p.coord)
	}
	var got []Record
	if err := s.Replay(ctx, func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Key) != "k1" || got[1].Value != nil || !got[2].Transactional || got[2].ProducerID != 7 || got[2].Partition != p.i {
		t.Fatalf("replayed %+v", got)
	}
	none := LogStore{Now: time.Now, Partitions: func() []LogPartition { return nil }}
	if err := none.Append(ctx, here, []Record{{Key: []byte("k")}}); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("no __consumer_offsets: %v", err)
	}
}
