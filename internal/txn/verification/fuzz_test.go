package verification

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/protocol"
	"weir/internal/txn"
)

// answer is a Coordinator refusing every partition asked about with one
// code (0: accepting them all).
type answer struct {
	code  int16
	asked []txn.TopicPartition
}

func (a *answer) VerifyForProduce(_ context.Context, _ string, _ int64, _ int16, parts []txn.TopicPartition, _ int16) (map[txn.TopicPartition]int16, error) {
	a.asked = append(a.asked, parts...)
	res := make(map[txn.TopicPartition]int16)
	if a.code != 0 {
		for _, tp := range parts {
			res[tp] = a.code
		}
	}
	return res, nil
}

// FuzzProduce verifies Produce requests decoded from arbitrary bytes
// (batches of any shape, any version): no panic, a guard only for a
// transactional batch of a partition led here, each guard either an
// append guard or an error, and a partition the coordinator refused is
// never given an append guard.
func FuzzProduce(f *testing.F) {
	id := "t"
	seed := func(v int16, code int16, batches map[txn.TopicPartition][]byte) {
		r := produce(v, &id, 1000, v >= 13, batches, newNode(tp("a", 0), tp("a", 1), tp("b", 0)))
		f.Add(v, code, r.AppendTo(nil))
	}
	seed(9, 0, map[txn.TopicPartition][]byte{tp("a", 0): batch(pid, epoch, true)})
	seed(11, 48, map[txn.TopicPartition][]byte{tp("a", 0): batch(pid, epoch, true), tp("b", 0): batch(pid+1, epoch, true)})
	seed(12, 0, map[txn.TopicPartition][]byte{tp("a", 1): batch(pid, epoch, false)})
	seed(13, 90, map[txn.TopicPartition][]byte{tp("b", 0): batch(pid, epoch, true)})

	f.Fuzz(func(t *testing.T, version int16, code int16, body []byte) {
		if version < 3 || version > 13 {
			return
		}
		// As the server does: hostile counts are refused before kmsg
		// decodes.
		if protocol.Check(0, version, body) != nil {
			return
		}
		r := kmsg.NewPtrProduceRequest()
		r.SetVersion(version)
		if err := r.ReadFrom(body); err != nil {
			return
		}
		n := newNode(tp("a", 0), tp("a", 1), tp("b", 0))
		coord := &answer{code: code}
		guards := Produce(context.Background(), n, coord, r, true)
		if r.TransactionID == nil && guards != nil {
			t.Fatalf("guards for a request that is not transactional: %v", guards)
		}
		refused := map[txn.TopicPartition]bool{}
		if code != 0 {
			for _, tp := range coord.asked {
				refused[tp] = true
			}
		}
		for p, g := range guards {
			if _, ok := n.parts[p.TopicPartition()]; !ok {
				t.Fatalf("a guard for %v, not led here", p.TopicPartition())
			}
			if (g.Append == nil) == (g.Err == nil) {
				t.Fatalf("%v: append guard %v and error %v", p.TopicPartition(), g.Append != nil, g.Err)
			}
			if refused[p.TopicPartition()] && g.Err == nil {
				t.Fatalf("%v refused with %d but appended", p.TopicPartition(), code)
			}
		}
	})
}
