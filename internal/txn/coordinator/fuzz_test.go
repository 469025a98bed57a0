package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/protocol"
)

// FuzzAPIs feeds the transactional APIs requests decoded from arbitrary
// bytes (any version a client may send): every one is answered, without a
// panic, with a response of the request's version and (for the per-item
// APIs) one answer per item asked.
func FuzzAPIs(f *testing.F) {
	seed := func(r kmsg.Request, v int16) {
		r.SetVersion(v)
		f.Add(uint8(r.Key()), v, r.AppendTo(nil))
	}
	id := "t"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &id, 1000
	seed(ip, 4)
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID = "t", 1000
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "a", Partitions: []int32{0, 0, -1}}}
	seed(ap, 3)
	ap5 := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap5.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "t", ProducerID: 1000, VerifyOnly: true,
		Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{1}}}}}
	seed(ap5, 5)
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.Commit = "t", 1000, true
	seed(et, 5)
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.Group = "t", "g"
	seed(ao, 3)
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"t", "", "t"}
	seed(dt, 0)
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters = []string{"Ongoing", "?"}
	pat := "(["
	lt.TransactionalIDPattern = &pat
	seed(lt, 2)

	// One coordinator for every input: state carries over, as on a broker.
	e := newEnv(f, 2, nil)
	e.loadAll(0)

	f.Fuzz(func(t *testing.T, key uint8, version int16, body []byte) {
		req := kmsg.RequestForKey(int16(key))
		switch key {
		case 22, 24, 25, 26, 65, 66:
		default:
			return
		}
		if version < 0 || version > req.MaxVersion() {
			return
		}
		// As the server does: hostile counts are refused before kmsg
		// decodes.
		if protocol.Check(int16(key), version, body) != nil {
			return
		}
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var resp kmsg.Response
		var err error
		switch r := req.(type) {
		case *kmsg.InitProducerIDRequest:
			resp, err = e.c.InitProducerID(ctx, r)
		case *kmsg.AddPartitionsToTxnRequest:
			var ar *kmsg.AddPartitionsToTxnResponse
			ar, err = e.c.AddPartitionsToTxn(ctx, r)
			if err == nil && version >= 4 && len(ar.Transactions) != len(r.Transactions) {
				t.Fatalf("%d transactions answered for %d", len(ar.Transactions), len(r.Transactions))
			}
			resp = ar
		case *kmsg.AddOffsetsToTxnRequest:
			resp, err = e.c.AddOffsetsToTxn(ctx, r, 3)
		case *kmsg.EndTxnRequest:
			resp, err = e.c.EndTxn(ctx, r)
		case *kmsg.DescribeTransactionsRequest:
			var dr *kmsg.DescribeTransactionsResponse
			dr, err = e.c.DescribeTransactions(ctx, r)
			if err == nil && len(dr.TransactionStates) != len(r.TransactionalIDs) {
				t.Fatalf("%d ids answered for %d", len(dr.TransactionStates), len(r.TransactionalIDs))
			}
			resp = dr
		case *kmsg.ListTransactionsRequest:
			resp, err = e.c.ListTransactions(ctx, r)
		}
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		if resp.GetVersion() != version {
			t.Fatalf("answered v%d to v%d", resp.GetVersion(), version)
		}
		// The answer encodes (it is what goes back to the client).
		_ = resp.AppendTo(nil)
	})
}
