package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommitSync sends every pending acknowledgement (in implicit mode: accepts
// everything the last Poll returned) with ShareAcknowledge and waits for the
// answers. It also asks every leader that holds acknowledgements whose
// durability a record_limit fetch deferred (wiretag.ShareFetchDeferAcks),
// with nothing pending there too: the broker answers once they are
// durable. So when it returns nil, everything acknowledged so far is
// durable. An error wraps ErrShareAckFailed for acknowledgements the broker
// refused (their records' locks had expired, for example) or could not
// make durable (their records will be delivered again), including ones
// that rode on earlier fetches since the last commit. Leaders with no
// fetch in flight are asked at once; a fetch in flight is waited for only
// when its leader has acknowledgements to send or confirm (commitRound).
func (s *ShareConsumer) CommitSync(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrConsumerClosed
	}
	if !s.cfg.explicit {
		s.acceptDeliveredLocked()
	}
	s.mu.Unlock()
	return s.flushAcks(ctx)
}

// flushAcks sends the pending acknowledgements and collects every refusal
// seen since the last commit.
func (s *ShareConsumer) flushAcks(ctx context.Context) error {
	err := s.commitRound(ctx)
	s.mu.Lock()
	errs := append([]error{err}, s.ackErrs...)
	s.ackErrs = nil
	s.mu.Unlock()
	return errors.Join(errs...)
}

// CommitAsync does what CommitSync does on a goroutine the consumer owns
// and calls done (if not nil) with the result from that goroutine, deferred
// acknowledgements' failures included. Close waits for it.
func (s *ShareConsumer) CommitAsync(ctx context.Context, done func(error)) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if done != nil {
			done(ErrConsumerClosed)
		}
		return
	}
	if !s.cfg.explicit {
		s.acceptDeliveredLocked()
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		err := s.flushAcks(ctx)
		if done != nil {
			done(err)
		}
	}()
}

// acknowledgeTo sends node's pending acknowledgements with
// ShareAcknowledge; final closes the session (epoch -1), which makes the
// broker release every record the member still holds there. Called with
// sessMu held.
func (s *ShareConsumer) acknowledgeTo(ctx context.Context, m *metadata, node int32, final bool) error {
	l := s.leaders[node] // made by the caller
	acks := s.takeAcks(m, node)
	if l.epoch == 0 {
		// No session: whatever was acquired in an earlier one was
		// released when it ended, so these cannot be applied.
		if len(acks) > 0 {
			return fmt.Errorf("%w: node %d: the share session ended; %d partitions' acknowledgements dropped", ErrShareAckFailed, node, len(acks))
		}
		return nil
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	group, member := s.cfg.groupID, s.memberID
	req.GroupID, req.MemberID = &group, &member
	req.ShareSessionEpoch = l.epoch
	if final {
		req.ShareSessionEpoch = -1
	}
	set := map[shareTP]bool{}
	for tp := range acks {
		set[tp] = true
	}
	eachByTopic(sortedShareTPs(set), func(id [16]byte) int {
		t := kmsg.NewShareAcknowledgeRequestTopic()
		t.TopicID = id
		req.Topics = append(req.Topics, t)
		return len(req.Topics) - 1
	}, func(i int, tp shareTP) {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = tp.part
		for _, b := range ackBatches(acks[tp]) {
			ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
			ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	})
	conn, err := s.cl.conn(ctx, node)
	if err != nil {
		s.restoreAcks(acks)
		return err
	}
	raw, err := conn.Do(ctx, req, s.cfg.requestTimeout)
	if err != nil {
		s.restoreAcks(acks)
		s.lost(node, l)
		return err
	}
	resp := raw.(*kmsg.ShareAcknowledgeResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		s.lost(node, l)
		return fmt.Errorf("%w: node %d: %w", ErrShareAckFailed, node, err)
	}
	// The broker answered once every acknowledgement sent on the session
	// was durable, deferred ones included; failures are listed below.
	l.unconfirmed = false
	if final {
		l.epoch = 0
	} else {
		l.epoch = nextSessionEpoch(l.epoch)
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s/%d: %w", ErrShareAckFailed, m.byID[t.TopicID], p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Close acknowledges what implicit mode owes, closes every share session
// (the broker releases the records this member still holds, buffered ones
// included, for other members, once every acknowledgement sent on the
// session is durable, deferred ones included; their failures are
// returned), leaves the group and stops the heartbeat.
func (s *ShareConsumer) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	if !s.cfg.explicit {
		s.acceptDeliveredLocked()
	}
	s.mu.Unlock()

	var errs []error
	s.sessMu.Lock()
	// The fetches in flight are answered first (a session takes one
	// request at a time); if ctx ends before, they are cancelled. What
	// they acquired is released with their sessions below.
	if err := s.settle(ctx); err != nil {
		s.fetchCancel()
		s.fetches.Wait()
		s.takeAnswers()
		errs = append(errs, fmt.Errorf("client: share fetches in flight at close: %w", err))
	}
	s.fetchErrs = nil
	s.mu.Lock()
	s.buffered = nil
	s.mu.Unlock()
	m := s.cl.meta.Load()
	nodes := map[int32]bool{}
	for n, l := range s.leaders {
		if l.epoch != 0 {
			nodes[n] = true
		}
	}
	s.mu.Lock()
	for tp := range s.pending {
		if n := s.leaderOf(m, tp); n >= 0 {
			nodes[n] = true
		}
	}
	s.mu.Unlock()
	for n := range nodes {
		s.leader(n)
		if err := s.acknowledgeTo(ctx, m, n, true); err != nil {
			errs = append(errs, err)
		}
	}
	s.fetchCancel()
	s.sessMu.Unlock()

	s.mu.Lock()
	s.closed = true
	joined := s.topics != nil
	s.mu.Unlock()
	if joined {
		s.hbCancel()
		s.wg.Wait()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = s.cfg.groupID, s.memberID, -1
		if _, err := s.co.do(ctx, req, s.cfg.requestTimeout, func(r kmsg.Response) error {
			return kerr.ErrorForCode(r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)
		}); err != nil {
			errs = append(errs, fmt.Errorf("client: leave share group %s: %w", s.cfg.groupID, err))
		}
	} else {
		s.hbCancel()
		s.wg.Wait()
	}
	s.cl.close()
	return errors.Join(errs...)
}
