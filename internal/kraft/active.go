package kraft

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/metadata"
)

// Active is the handle of the controller a node runs while it leads the
// quorum. It is valid for one controller: once that controller is dropped
// (leadership lost, a proposal failed, the node closed) every call on it
// fails with a *NotControllerError, and Node.Controller must be asked
// again.
type Active struct {
	n     *Node
	calls chan *call
	done  chan struct{}
}

// decision is what a request asks of the controller, run on the loop.
type decision func(c *controller.Controller) (kmsg.Response, []metadata.Record, error)

type call struct {
	ctx    context.Context
	decide decision
	out    chan callResult // buffered: the loop never waits for the caller
}

type callResult struct {
	resp kmsg.Response
	// offset is the metadata offset committed when the reply went: the
	// request's own batch, or the last batch decided before it.
	offset int64
	err    error
}

func (cl *call) reply(resp kmsg.Response, offset int64, err error) {
	cl.out <- callResult{resp, offset, err}
}

// Do submits one controller request (see ControllerKeys) and returns its
// response once the batch it decided, if any, is committed and applied
// on this node. Decisions that write nothing are answered after the
// batches decided before them commit, so a response never reflects a
// state that may be lost. A request interrupted by the loss of the
// controller returns a *NotControllerError; its batch may or may not have
// been committed.
func (a *Active) Do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, _, err := a.DoAt(ctx, req)
	return resp, err
}

// DoAt is Do that also returns the metadata offset at which the outcome
// was committed: the request's own batch, or, for a decision that wrote
// nothing, the last batch decided before it. Once a node has applied
// that offset, its image reflects the answer.
func (a *Active) DoAt(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
	if !isControllerKey(req.Key()) {
		return nil, -1, fmt.Errorf("%w: %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()))
	}
	return a.submit(ctx, func(c *controller.Controller) (kmsg.Response, []metadata.Record, error) {
		return decide(c, req)
	})
}

// FenceBroker fences a broker this node knows is gone (its process
// exited, its connection died) without waiting for its session to lapse.
// epoch -1 fences any incarnation. It reports whether a batch was written.
func (a *Active) FenceBroker(ctx context.Context, id int32, epoch int64) (bool, error) {
	wrote := false
	_, _, err := a.submit(ctx, func(c *controller.Controller) (kmsg.Response, []metadata.Record, error) {
		recs := c.FenceBroker(id, epoch)
		wrote = len(recs) > 0
		return nil, recs, nil
	})
	return err == nil && wrote, err
}

// Done is closed when this controller is dropped.
func (a *Active) Done() <-chan struct{} { return a.done }

func (a *Active) notController() error { return &NotControllerError{LeaderID: a.n.Leader()} }

func (a *Active) submit(ctx context.Context, d decision) (kmsg.Response, int64, error) {
	cl := &call{ctx: ctx, decide: d, out: make(chan callResult, 1)}
	select {
	case a.calls <- cl:
	case <-a.done:
		return nil, -1, a.notController()
	case <-ctx.Done():
		return nil, -1, ctx.Err()
	}
	select {
	case r := <-cl.out:
		return r.resp, r.offset, r.err
	case <-a.done:
		// The loop answers what it can before it closes done.
		select {
		case r := <-cl.out:
			return r.resp, r.offset, r.err
		default:
			return nil, -1, a.notController()
		}
	case <-ctx.Done():
		return nil, -1, ctx.Err()
	}
}

// flight is one batch decided and not yet committed, with the replies
// that wait for it: its own request's, then those of requests decided
// after it that wrote nothing.
type flight struct {
	batch   []byte
	replies []pendingReply
}

type pendingReply struct {
	cl   *call
	resp kmsg.Response
	err  error
}

// proposal is the proposer's outcome for one batch.
type proposal struct {
	applied *Applied
	err     error
}

// runController is the owner loop of one controller (see the contract in
// internal/controller): barrier, New on the committed image, then
// requests, ticks and commits on this goroutine until ctx ends or a
// proposal fails. Batches go to raft one at a time, in decision order,
// through a proposer goroutine; decisions go on while one is in flight.
func (n *Node) runController(ctx context.Context) error {
	bctx, cancel := context.WithTimeout(ctx, n.cfg.ProposeTimeout)
	err := n.q.Barrier(bctx)
	cancel()
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	start := n.fsm.Image()
	c := controller.New(n.cfg.Controller, start)
	a := &Active{n: n, calls: make(chan *call, n.cfg.QueueSize), done: make(chan struct{})}

	proposals := make(chan []byte)
	results := make(chan proposal)
	pctx, stopProposer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.propose(pctx, proposals, results)
	}()

	var inflight []*flight
	defer func() {
		n.active.CompareAndSwap(a, nil)
		notc := a.notController()
		for _, f := range inflight {
			for _, r := range f.replies {
				r.cl.reply(nil, -1, notc)
			}
		}
		close(a.done)
		for drained := false; !drained; {
			select {
			case cl := <-a.calls:
				cl.reply(nil, -1, notc)
			default:
				drained = true
			}
		}
		stopProposer()
		wg.Wait()
	}()

	n.active.Store(a)
	n.started.Add(1)
	n.log.Info("controller active", "offset", start.Offset(), "brokers", start.NumBrokers(), "partitions", start.NumPartitions())

	committed := start.Offset()
	handed := 0 // inflight[:handed] went to the proposer
	timer := time.NewTimer(n.cfg.TickInterval)
	defer timer.Stop()
	nextTick := time.Now().Add(n.cfg.TickInterval)
	enqueue := func(recs []metadata.Record, r pendingReply) {
		f := &flight{batch: metadata.EncodeBatch(recs)}
		if r.cl != nil {
			f.replies = append(f.replies, r)
		}
		inflight = append(inflight, f)
	}
	for {
		var calls <-chan *call
		if len(inflight) < n.cfg.MaxPending {
			calls = a.calls
		}
		var propose chan<- []byte
		var next []byte
		if handed < len(inflight) {
			propose, next = proposals, inflight[handed].batch
		}
		select {
		case <-ctx.Done():
			return ctx.Err()

		case cl := <-calls:
			if cl.ctx.Err() != nil {
				cl.reply(nil, -1, cl.ctx.Err())
				continue
			}
			resp, recs, err := cl.decide(c)
			r := pendingReply{cl: cl, resp: resp, err: err}
			switch {
			case len(recs) > 0:
				enqueue(recs, r)
			case len(inflight) == 0:
				cl.reply(resp, committed, err)
			default:
				last := inflight[len(inflight)-1]
				last.replies = append(last.replies, r)
			}

		case propose <- next:
			inflight[handed].batch = nil
			handed++

		case p := <-results:
			if p.err != nil {
				return fmt.Errorf("proposal: %w", p.err)
			}
			ap := p.applied
			if ap.Err != nil {
				return fmt.Errorf("own batch at offset %d refused: %w", ap.Image.Offset(), ap.Err)
			}
			if ap.Prev.Offset() != committed {
				return fmt.Errorf("an entry this controller did not write was applied between offsets %d and %d", committed, ap.Prev.Offset())
			}
			c.Committed(ap.Image, ap.Delta)
			committed = ap.Image.Offset()
			f := inflight[0]
			inflight[0] = nil
			inflight = inflight[1:]
			handed--
			for _, r := range f.replies {
				r.cl.reply(r.resp, committed, r.err)
			}

		case <-timer.C:
			if recs := c.Tick(); len(recs) > 0 {
				enqueue(recs, pendingReply{})
			}
			nextTick = time.Now().Add(n.cfg.TickInterval)
		}
		timer.Reset(n.untilTick(c, nextTick))
	}
}

// untilTick is the wait until the next tick: the regular interval or the
// controller's own deadline (on its clock), whichever comes first.
func (n *Node) untilTick(c *controller.Controller, nextTick time.Time) time.Duration {
	wait := time.Until(nextTick)
	if d := c.NextDeadline(); !d.IsZero() {
		wait = min(wait, d.Sub(n.cfg.Controller.Now()))
	}
	return max(wait, 0)
}

// propose hands batches to raft one at a time, in the order received,
// and reports each outcome in the same order.
func (n *Node) propose(ctx context.Context, in <-chan []byte, out chan<- proposal) {
	for {
		var batch []byte
		select {
		case batch = <-in:
		case <-ctx.Done():
			return
		}
		pctx, cancel := context.WithTimeout(ctx, n.cfg.ProposeTimeout)
		_, res, err := n.q.Propose(pctx, batch)
		cancel()
		p := proposal{err: err}
		if err == nil {
			ap, ok := res.(*Applied)
			if !ok {
				p.err = fmt.Errorf("unexpected apply result %T", res)
			}
			p.applied = ap
		}
		select {
		case out <- p:
		case <-ctx.Done():
			return
		}
	}
}
