package alterpartition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clock"
	"weir/internal/replica"
)

// TestManagerTranscripts drives a Manager against a scripted controller
// through the transcripts in testdata/manager/*.txt. Commands:
//
//	manager [batch=N] [min=DUR] [max=DUR]   make one (broker 1, epoch 77), not running
//	run                                     start its Run: what was submitted before is
//	                                        all queued for the first request
//	registered ID=EPOCH ...                 the image's broker epochs
//	submit                                  one proposal a line: t/p le=N pe=N isr=A,B [epochs=E,F]
//	retry t/p ... | definite t/p ...        whether CompleteISRChange asks for a resend
//	sent                                    the next request, once it is out
//	idle                                    nothing is sent (within 50 ms)
//	answer                                  the request's answer: error=CODE, transport, or
//	                                        one line a partition: t/p [le=N] [pe=N] [isr=A,B] [err=CODE] [noid]
//	                                        (a partition not listed is left out); prints what
//	                                        each partition was given
//	advance DUR                             once the back-off timer is set, move the clock
//	stop                                    end Run's context and wait for it
//
// Topic "x" has the id {'x'}; noid answers a topic by name only.
func TestManagerTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/manager", func(t *testing.T, path string) {
		tr := &transcript{}
		defer tr.close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return tr.run(t, d)
		})
	})
}

type transcript struct {
	host   *fakeHost
	clock  *clock.Manual
	m      *Manager
	cancel context.CancelFunc
	done   chan struct{}
	parts  map[string]*fakePartition
	last   call // the request sent last
}

func (tr *transcript) close() {
	if tr.cancel != nil {
		tr.cancel()
		<-tr.done
		tr.cancel = nil
	}
}

func (tr *transcript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "manager":
		tr.close()
		cfg := Config{BrokerID: 1}
		for _, a := range d.CmdArgs {
			switch a.Key {
			case "batch":
				cfg.MaxBatch = atoi(t, a.Vals[0])
			case "min":
				cfg.MinBackoff = duration(t, a.Vals[0])
			case "max":
				cfg.MaxBackoff = duration(t, a.Vals[0])
			default:
				t.Fatalf("unknown manager arg %s", a.Key)
			}
		}
		tr.host, tr.clock, tr.parts = newFakeHost(), newManual(), map[string]*fakePartition{}
		cfg.Host, cfg.Clock = tr.host, tr.clock
		tr.m = New(cfg)
		return ""
	case "run":
		var ctx context.Context
		ctx, tr.cancel = context.WithCancel(context.Background())
		tr.done = make(chan struct{})
		go func() {
			defer close(tr.done)
			tr.m.Run(ctx)
		}()
		return ""
	case "registered":
		for _, a := range d.CmdArgs {
			id, epoch, _ := strings.Cut(a.Key, "=")
			if len(a.Vals) > 0 {
				epoch = a.Vals[0]
			}
			tr.host.epochs[int32(atoi(t, id))] = int64(atoi(t, epoch))
		}
		return ""
	case "submit":
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			p := tr.part(t, f[0])
			var ch replica.ISRChange
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "le":
					ch.LeaderEpoch = int32(atoi(t, v))
				case "pe":
					ch.PartitionEpoch = int32(atoi(t, v))
				case "isr":
					ch.NewISR = int32s(t, v)
				case "epochs":
					for _, e := range int32s(t, v) {
						ch.BrokerEpochs = append(ch.BrokerEpochs, int64(e))
					}
				default:
					t.Fatalf("unknown proposal field %s", k)
				}
			}
			tr.m.Submit(p, ch)
		}
		return ""
	case "retry", "definite":
		for _, a := range d.CmdArgs {
			tr.part(t, a.Key).setRetry(d.Cmd == "retry")
		}
		return ""
	case "sent":
		tr.last = tr.host.next(t)
		return printRequest(tr.last.req)
	case "idle":
		tr.host.none(t)
		return "nothing sent"
	case "answer":
		return tr.answer(t, d.Input)
	case "advance":
		eventually(t, "the back-off timer", func() bool { return tr.clock.Pending() == 1 })
		tr.clock.Advance(duration(t, d.CmdArgs[0].Key))
		return ""
	case "stop":
		tr.close()
		return "stopped"
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// part is the fake partition named "topic/index", made on first use.
func (tr *transcript) part(t *testing.T, name string) *fakePartition {
	if p, ok := tr.parts[name]; ok {
		return p
	}
	topic, index, ok := strings.Cut(name, "/")
	if !ok || topic == "" {
		t.Fatalf("partition %q is not topic/index", name)
	}
	p := &fakePartition{topic: topic, id: [16]byte{topic[0]}, index: int32(atoi(t, index))}
	tr.parts[name] = p
	return p
}

// answer gives the last request its answer and prints, once every
// partition of the request has it, what each was given.
func (tr *transcript) answer(t *testing.T, input string) string {
	var asked []*fakePartition
	before := map[*fakePartition]int{}
	for _, rt := range tr.last.req.Topics {
		for _, rp := range rt.Partitions {
			p := tr.part(t, fmt.Sprintf("%s/%d", rt.Topic, rp.Partition))
			asked = append(asked, p)
			before[p] = len(p.answers())
		}
	}
	resp := kmsg.NewPtrAlterPartitionResponse()
	var err error
	for _, line := range lines(input) {
		f := strings.Fields(line)
		switch {
		case f[0] == "transport":
			err = errors.New("connection reset")
			continue
		case strings.HasPrefix(f[0], "error="):
			resp.ErrorCode = code(t, strings.TrimPrefix(f[0], "error="))
			continue
		}
		p := tr.part(t, f[0])
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = p.topic, p.id
		rp := kmsg.NewAlterPartitionResponseTopicPartition()
		rp.Partition = p.index
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "le":
				rp.LeaderEpoch = int32(atoi(t, v))
			case "pe":
				rp.PartitionEpoch = int32(atoi(t, v))
			case "isr":
				rp.ISR = int32s(t, v)
			case "err":
				rp.ErrorCode = code(t, v)
			case "noid":
				rt.TopidID = [16]byte{}
			default:
				t.Fatalf("unknown answer field %s", k)
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
	}
	if err != nil {
		resp = nil
	}
	tr.last.answer(resp, err)
	var out []string
	for _, p := range asked {
		eventually(t, "the answers", func() bool { return len(p.answers()) > before[p] })
		res := p.answers()[len(p.answers())-1]
		s := fmt.Sprintf("%s/%d: ", p.topic, p.index)
		switch {
		case res.Err == nil:
			s += fmt.Sprintf("ok le=%d pe=%d isr=%v", res.LeaderEpoch, res.PartitionEpoch, res.ISR)
		case errors.Is(res.Err, errMissing):
			s += "not in the answer"
		default:
			var ke *kerr.Error
			if errors.As(res.Err, &ke) {
				s += ke.Message
			} else {
				s += res.Err.Error()
			}
		}
		p.mu.Lock()
		if p.retry {
			s += " (unknown: resend)"
		}
		p.mu.Unlock()
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, "\n") + "\n"
}

// printRequest shows a request with its partitions in order, each ISR
// member as id@brokerEpoch.
func printRequest(req *kmsg.AlterPartitionRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "AlterPartition v%d broker=%d epoch=%d\n", req.Version, req.BrokerID, req.BrokerEpoch)
	var ps []string
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			var isr []string
			for _, e := range rp.NewEpochISR {
				isr = append(isr, fmt.Sprintf("%d@%d", e.BrokerID, e.BrokerEpoch))
			}
			ps = append(ps, fmt.Sprintf("  %s/%d (id %x) le=%d pe=%d isr=%s", rt.Topic, rp.Partition, rt.TopicID[0], rp.LeaderEpoch, rp.PartitionEpoch, strings.Join(isr, ",")))
		}
	}
	slices.Sort(ps)
	b.WriteString(strings.Join(ps, "\n") + "\n")
	return b.String()
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// code is the Kafka error code named name (NOT_CONTROLLER, ...).
func code(t *testing.T, name string) int16 {
	for c := int16(-1); c < 200; c++ {
		if e, ok := kerr.ErrorForCode(c).(*kerr.Error); ok && e.Message == name {
			return c
		}
	}
	t.Fatalf("unknown error %s", name)
	return 0
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func int32s(t *testing.T, s string) []int32 {
	var out []int32
	for v := range strings.SplitSeq(s, ",") {
		out = append(out, int32(atoi(t, v)))
	}
	return out
}

func duration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
