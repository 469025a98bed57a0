package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// TestTranscripts runs the transcripts in testdata/transcripts: events
// in, the controller's reply and record batch out. Every batch is committed at
// once (applied to a committed image at the next offset and reported to
// the controller), after checking that it rebuilds exactly the
// controller's view and keeps the controller's invariants. Rewrite the
// expected output with -rewrite after a deliberate change, and read the
// diff.
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		h := newHarness(t, Config{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type harness struct {
	t         testing.TB
	now       time.Time
	cfg       Config
	c         *Controller
	committed *metadata.Image
}

func newHarness(t testing.TB, cfg Config) *harness {
	h := &harness{t: t, now: time.Unix(1_700_000_000, 0), committed: metadata.Empty()}
	h.reset(cfg, 1)
	return h
}

// reset builds a new controller over the committed image, as a failover
// would.
func (h *harness) reset(cfg Config, seed uint64) {
	cfg.Now = func() time.Time { return h.now }
	cfg.Rand = rand.New(rand.NewPCG(seed, 0))
	h.cfg = cfg
	h.c = New(cfg, h.committed)
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	h.t = t
	before := h.c.Image()
	var out strings.Builder
	var recs []metadata.Record
	switch d.Cmd {
	case "controller":
		var cfg Config
		seed := uint64(1)
		if d.HasArg("seed") {
			var s int
			d.ScanArgs(t, "seed", &s)
			seed = uint64(s)
		}
		if d.HasArg("imbalance-pct") {
			d.ScanArgs(t, "imbalance-pct", &cfg.LeaderImbalancePercentage)
		}
		cfg.DisableAutoLeaderRebalance = d.HasArg("no-rebalance")
		cfg.UncleanLeaderElection = d.HasArg("unclean")
		if d.HasArg("default-rf") {
			var rf int
			d.ScanArgs(t, "default-rf", &rf)
			cfg.DefaultReplicationFactor = int16(rf)
		}
		h.reset(cfg, seed)
		return fmt.Sprintf("controller at offset %d", h.committed.Offset())
	case "register":
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID = h.intArg(d, "id", -1)
		req.IncarnationID = [16]byte{byte(h.intArg(d, "incarnation", 1)), byte(req.BrokerID)}
		req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(h.intArg(d, "port", 9092+req.BrokerID))}}
		if d.HasArg("rack") {
			var rack string
			d.ScanArgs(t, "rack", &rack)
			req.Rack = &rack
		}
		resp, r := h.c.RegisterBroker(req)
		recs = r
		fmt.Fprintf(&out, "reply: %s", errName(resp.ErrorCode))
		if resp.ErrorCode == 0 {
			fmt.Fprintf(&out, " epoch=%d", resp.BrokerEpoch)
		}
	case "heartbeat":
		id := h.intArg(d, "id", -1)
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID = id
		if b, ok := h.c.Image().Broker(id); ok {
			req.BrokerEpoch = b.Epoch
		}
		req.BrokerEpoch = int64(h.intArg(d, "epoch", int32(req.BrokerEpoch)))
		req.CurrentMetadataOffset = int64(h.intArg(d, "offset", int32(h.committed.Offset())))
		req.WantFence = d.HasArg("want-fence")
		req.WantShutdown = d.HasArg("want-shutdown")
		resp, r := h.c.Heartbeat(req)
		recs = r
		fmt.Fprintf(&out, "reply: %s caught-up=%v fenced=%v should-shutdown=%v",
			errName(resp.ErrorCode), resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown)
	case "heartbeat-all":
		// Every registered broker heartbeats at the latest offset; the
		// replies are summarised, the records shown.
		for _, b := range h.c.Image().Brokers() {
			req := kmsg.NewPtrBrokerHeartbeatRequest()
			req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = b.ID, b.Epoch, h.committed.Offset()
			if _, r := h.c.Heartbeat(req); len(r) > 0 {
				h.commit(t, before, r, &out)
				before = h.c.Image()
			}
		}
		return strings.TrimSpace(out.String())
	case "advance":
		h.now = h.now.Add(h.durationArg(d, "by"))
		return fmt.Sprintf("now +%s", h.now.Sub(time.Unix(1_700_000_000, 0)))
	case "tick":
		recs = h.c.Tick()
	case "fence":
		recs = h.c.FenceBroker(h.intArg(d, "id", -1), -1)
	case "unregister":
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = h.intArg(d, "id", -1)
		resp, r := h.c.UnregisterBroker(req)
		recs = r
		fmt.Fprintf(&out, "reply: %s", errName(resp.ErrorCode))
	case "create-topic":
		recs = h.createTopic(d, &out)
	case "create-partitions":
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		d.ScanArgs(t, "name", &rt.Topic)
		rt.Count = h.intArg(d, "count", -1)
		if d.HasArg("assign") {
			for _, ids := range h.assignArg(d) {
				rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: ids})
			}
		}
		req.Topics = append(req.Topics, rt)
		resp, r := h.c.CreatePartitions(req)
		recs = r
		fmt.Fprintf(&out, "reply: %s", errWithMessage(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage))
	case "delete-topic":
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 6
		var name string
		d.ScanArgs(t, "name", &name)
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &name}}
		resp, r := h.c.DeleteTopics(req)
		recs = r
		fmt.Fprintf(&out, "reply: %s", errWithMessage(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage))
	case "elect":
		recs = h.elect(d, &out)
	case "alter-partition":
		recs = h.alterPartition(d, &out)
	case "reassign":
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		d.ScanArgs(t, "topic", &rt.Topic)
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition = h.intArg(d, "p", 0)
		if !d.HasArg("cancel") {
			rp.Replicas = h.idsArg(d, "replicas")
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, r := h.c.AlterPartitionReassignments(req)
		recs = r
		if resp.ErrorCode != 0 {
			fmt.Fprintf(&out, "reply: %s", errName(resp.ErrorCode))
		} else {
			sp := resp.Topics[0].Partitions[0]
			fmt.Fprintf(&out, "reply: %s", errWithMessage(sp.ErrorCode, sp.ErrorMessage))
		}
	case "list-reassignments":
		resp := h.c.ListPartitionReassignments(kmsg.NewPtrListPartitionReassignmentsRequest())
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				fmt.Fprintf(&out, "%s-%d replicas=%s adding=%s removing=%s\n", rt.Topic, rp.Partition,
					metadata.FormatIDs(rp.Replicas), metadata.FormatIDs(rp.AddingReplicas), metadata.FormatIDs(rp.RemovingReplicas))
			}
		}
		if out.Len() == 0 {
			return "none"
		}
		return strings.TrimSpace(out.String())
	case "set-config":
		var res, name, key, value string
		d.ScanArgs(t, "resource", &res)
		d.MaybeScanArgs(t, "name", &name)
		d.ScanArgs(t, "key", &key)
		ch := ConfigChange{Resource: metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}}
		if res == "broker" {
			ch.Resource.Type = metadata.ResourceBroker
		}
		if d.MaybeScanArgs(t, "value", &value) {
			ch.Set = map[string]string{key: value}
		} else {
			ch.Delete = []string{key}
		}
		errs, r := h.c.AlterConfigs([]ConfigChange{ch})
		recs = r
		code, msg := codeAndMessage(errs[0])
		fmt.Fprintf(&out, "reply: %s", errWithMessage(code, msg))
	case "allocate-pids":
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID = h.intArg(d, "id", -1)
		if b, ok := h.c.Image().Broker(req.BrokerID); ok {
			req.BrokerEpoch = b.Epoch
		}
		resp, r := h.c.AllocateProducerIDs(req)
		recs = r
		fmt.Fprintf(&out, "reply: %s start=%d len=%d", errName(resp.ErrorCode), resp.ProducerIDStart, resp.ProducerIDLen)
	case "show":
		return h.show(d)
	case "leaders":
		return h.leaders(d)
	default:
		r, ok := h.runSecurity(t, d, &out)
		if !ok {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		recs = r
	}
	if !d.HasArg("quiet") {
		h.commit(t, before, recs, &out)
	}
	return strings.TrimSpace(out.String())
}

// commit writes a decision's records out, applies them to the committed
// image as the next log entry, checks the controller's view against it,
// and reports the commit to the controller.
func (h *harness) commit(t testing.TB, before *metadata.Image, recs []metadata.Record, out *strings.Builder) {
	t.Helper()
	if out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
		out.WriteByte('\n')
	}
	if len(recs) == 0 {
		out.WriteString("no records\n")
		if h.c.Pending() != 0 {
			t.Fatalf("no records but %d batches pending", h.c.Pending())
		}
		return
	}
	names := topicNames(before, h.c.Image())
	for _, r := range recs {
		if s, ok := formatSecurityRecord(before, r); ok {
			out.WriteString(s + "\n")
			continue
		}
		out.WriteString(formatRecord(names, r))
		out.WriteByte('\n')
	}
	next, d, err := h.committed.Apply(h.committed.Offset()+1, metadataRoundTrip(t, recs))
	if err != nil {
		t.Fatalf("the controller's batch does not apply: %v", err)
	}
	if got, want := imageText(h.c.Image()), imageText(next); got != want {
		t.Fatalf("the controller's view differs from the committed image:\nview:\n%s\ncommitted:\n%s", got, want)
	}
	if err := checkControllerInvariants(next); err != nil {
		t.Fatal(err)
	}
	h.committed = next
	h.c.Committed(next, d)
	fmt.Fprintf(out, "committed at offset %d\n", next.Offset())
}

// metadataRoundTrip sends records through the batch encoding, as the log
// will.
func metadataRoundTrip(t testing.TB, recs []metadata.Record) []metadata.Record {
	out, err := metadata.DecodeBatch(metadata.EncodeBatch(recs))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkControllerInvariants checks what the controller's decisions must
// keep true: a leader is an active broker; an ISR that holds an active
// broker holds only active brokers (inactive ones stay only while no
// member is active, so that one of them can come back as leader).
func checkControllerInvariants(img *metadata.Image) error {
	var err error
	img.EachTopic(func(tp *metadata.Topic) bool {
		tp.EachPartition(func(p int32, s metadata.Partition) bool {
			if l := s.Leader(); l != metadata.NoLeader {
				if b, ok := img.Broker(l); !ok || !b.Active() {
					err = fmt.Errorf("%s-%d is led by %d, which is not an active broker", tp.Name(), p, l)
				}
			}
			active := func(id int32) bool { b, ok := img.Broker(id); return ok && b.Active() }
			isr := s.ISR()
			if slices.ContainsFunc(isr, active) && !all(isr, active) {
				err = fmt.Errorf("%s-%d has active and inactive brokers in its ISR %v", tp.Name(), p, isr)
			}
			return err == nil
		})
		return err == nil
	})
	return err
}

func all(ids []int32, f func(int32) bool) bool {
	for _, id := range ids {
		if !f(id) {
			return false
		}
	}
	return true
}

// imageText is an image's content without its offset.
func imageText(img *metadata.Image) string {
	var b strings.Builder
	_ = img.EachRecord(func(r metadata.Record) error {
		b.WriteString(r.String())
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}

func topicNames(imgs ...*metadata.Image) map[metadata.TopicID]string {
	names := map[metadata.TopicID]string{}
	for _, img := range imgs {
		img.EachTopic(func(tp *metadata.Topic) bool { names[tp.ID()] = tp.Name(); return true })
	}
	return names
}

// formatRecord formats a record with its topic's name instead of its
// id, which is random.
func formatRecord(names map[metadata.TopicID]string, r metadata.Record) string {
	switch r := r.(type) {
	case *metadata.TopicRecord:
		return "topic " + r.Name
	case *metadata.RemoveTopicRecord:
		return "remove-topic " + names[r.ID]
	case *metadata.PartitionRecord:
		s := fmt.Sprintf("partition %s-%d replicas=%s isr=%s leader=%d", names[r.TopicID], r.Partition,
			metadata.FormatIDs(r.Replicas), metadata.FormatIDs(r.ISR), r.Leader)
		return s
	case *metadata.PartitionChangeRecord:
		return metadata.FormatChange(names[r.TopicID], r)
	case *metadata.RegisterBrokerRecord:
		s := fmt.Sprintf("register-broker id=%d epoch=%d", r.ID, r.Epoch)
		if r.Rack != "" {
			s += " rack=" + r.Rack
		}
		if r.Fenced {
			s += " fenced"
		}
		if r.InControlledShutdown {
			s += " shutting-down"
		}
		return s
	}
	return r.String()
}

func errName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("error(%d)", code)
}

func errWithMessage(code int16, msg *string) string {
	s := errName(code)
	if code != 0 && msg != nil && *msg != "" {
		s += ": " + *msg
	}
	return s
}

func (h *harness) intArg(d *datadriven.TestData, key string, dflt int32) int32 {
	if !d.HasArg(key) {
		if dflt == -1 && key == "id" {
			h.t.Fatalf("%s needs %s=", d.Cmd, key)
		}
		return dflt
	}
	var v int
	d.ScanArgs(h.t, key, &v)
	return int32(v)
}

func (h *harness) durationArg(d *datadriven.TestData, key string) time.Duration {
	var s string
	d.ScanArgs(h.t, key, &s)
	v, err := time.ParseDuration(s)
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func parseIDs(t testing.TB, s string) []int32 {
	out := []int32{}
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int32(v))
	}
	return out
}

func (h *harness) idsArg(d *datadriven.TestData, key string) []int32 {
	arg, _ := d.Arg(key)
	return parseIDs(h.t, strings.Join(arg.Vals, ","))
}

// assignArg parses assign=1,2,3/2,3,1: one replica list per partition.
func (h *harness) assignArg(d *datadriven.TestData) [][]int32 {
	arg, _ := d.Arg("assign")
	var out [][]int32
	for _, part := range strings.Split(strings.Join(arg.Vals, ","), "/") {
		out = append(out, parseIDs(h.t, part))
	}
	return out
}

func (h *harness) createTopic(d *datadriven.TestData, out *strings.Builder) []metadata.Record {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	d.ScanArgs(h.t, "name", &rt.Topic)
	rt.NumPartitions = h.intArg(d, "partitions", -1)
	rt.ReplicationFactor = int16(h.intArg(d, "rf", -1))
	if d.HasArg("assign") {
		for i, ids := range h.assignArg(d) {
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: ids})
		}
	}
	if arg, ok := d.Arg("config"); ok {
		for _, kv := range arg.Vals {
			k, v, _ := strings.Cut(kv, ":")
			rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: &v})
		}
	}
	req.Topics = append(req.Topics, rt)
	req.ValidateOnly = d.HasArg("validate-only")
	resp, recs := h.c.CreateTopics(req)
	st := resp.Topics[0]
	fmt.Fprintf(out, "reply: %s", errWithMessage(st.ErrorCode, st.ErrorMessage))
	if st.ErrorCode == 0 {
		fmt.Fprintf(out, " partitions=%d rf=%d", st.NumPartitions, st.ReplicationFactor)
	}
	if d.HasArg("quiet") && len(recs) > 0 {
		// Only the count: the transcript looks at the result otherwise.
		h.commit(h.t, h.c.Image(), recs, &strings.Builder{})
		fmt.Fprintf(out, "\n%d records committed at offset %d", len(recs), h.committed.Offset())
		return nil
	}
	return recs
}

func (h *harness) elect(d *datadriven.TestData, out *strings.Builder) []metadata.Record {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 2
	var typ string
	if d.MaybeScanArgs(h.t, "type", &typ) && typ == "unclean" {
		req.ElectionType = electionUnclean
	}
	if d.HasArg("topic") {
		rt := kmsg.NewElectLeadersRequestTopic()
		d.ScanArgs(h.t, "topic", &rt.Topic)
		rt.Partitions = h.idsArg(d, "partitions")
		req.Topics = append(req.Topics, rt)
	}
	resp, recs := h.c.ElectLeaders(req)
	if resp.ErrorCode != 0 {
		fmt.Fprintf(out, "reply: %s", errName(resp.ErrorCode))
		return recs
	}
	var parts []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d:%s", rt.Topic, rp.Partition, errName(rp.ErrorCode)))
		}
	}
	fmt.Fprintf(out, "reply: %s", strings.Join(parts, " "))
	return recs
}

func (h *harness) alterPartition(d *datadriven.TestData, out *strings.Builder) []metadata.Record {
	var topic string
	d.ScanArgs(h.t, "topic", &topic)
	p := h.intArg(d, "p", 0)
	tp, ok := h.c.Image().TopicByName(topic)
	if !ok {
		h.t.Fatalf("no topic %s", topic)
	}
	cur, _ := tp.Partition(p)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = int16(h.intArg(d, "version", 3))
	req.BrokerID = h.intArg(d, "broker", cur.Leader())
	if b, ok := h.c.Image().Broker(req.BrokerID); ok {
		req.BrokerEpoch = b.Epoch
	}
	req.BrokerEpoch = int64(h.intArg(d, "broker-epoch", int32(req.BrokerEpoch)))
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = topic, tp.ID()
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p
	rp.LeaderEpoch = h.intArg(d, "leader-epoch", cur.LeaderEpoch())
	rp.PartitionEpoch = h.intArg(d, "partition-epoch", cur.PartitionEpoch())
	for _, id := range h.idsArg(d, "isr") {
		if req.Version >= 3 {
			e := int64(-1)
			if b, ok := h.c.Image().Broker(id); ok {
				e = b.Epoch
			}
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: e})
		} else {
			rp.NewISR = append(rp.NewISR, id)
		}
	}
	if d.HasArg("recovering") {
		rp.LeaderRecoveryState = metadata.Recovering
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, recs := h.c.AlterPartition(req)
	if resp.ErrorCode != 0 {
		fmt.Fprintf(out, "reply: %s", errName(resp.ErrorCode))
		return recs
	}
	sp := resp.Topics[0].Partitions[0]
	fmt.Fprintf(out, "reply: %s", errName(sp.ErrorCode))
	if sp.ErrorCode == 0 {
		fmt.Fprintf(out, " leader=%d leader_epoch=%d isr=%s partition_epoch=%d", sp.LeaderID, sp.LeaderEpoch, metadata.FormatIDs(sp.ISR), sp.PartitionEpoch)
	}
	return recs
}

// show prints brokers and partitions of the controller's view.
func (h *harness) show(d *datadriven.TestData) string {
	img := h.c.Image()
	var out strings.Builder
	if !d.HasArg("topic") {
		for _, b := range img.Brokers() {
			state := "active"
			switch {
			case b.Fenced:
				state = "fenced"
			case b.InControlledShutdown:
				state = "shutting-down"
			}
			fmt.Fprintf(&out, "broker %d epoch=%d %s", b.ID, b.Epoch, state)
			if b.Rack != "" {
				fmt.Fprintf(&out, " rack=%s", b.Rack)
			}
			out.WriteByte('\n')
		}
	}
	for _, tp := range img.Topics() {
		if d.HasArg("topic") {
			var name string
			d.ScanArgs(h.t, "topic", &name)
			if name != tp.Name() {
				continue
			}
		}
		tp.EachPartition(func(p int32, s metadata.Partition) bool {
			fmt.Fprintf(&out, "%s-%d %s\n", tp.Name(), p, s)
			return true
		})
	}
	return strings.TrimSpace(out.String())
}

// leaders summarises a topic's placement: per broker, how many partitions
// it leads, how many it is the preferred leader of and how many replicas
// it holds; and how many partitions have replicas in fewer racks than
// they could.
func (h *harness) leaders(d *datadriven.TestData) string {
	img := h.c.Image()
	var name string
	d.ScanArgs(h.t, "topic", &name)
	tp, ok := img.TopicByName(name)
	if !ok {
		return "no topic " + name
	}
	lead, pref, reps := map[int32]int{}, map[int32]int{}, map[int32]int{}
	racks := map[string]bool{}
	for _, b := range img.Brokers() {
		racks[b.Rack] = true
	}
	poorlySpread := 0
	tp.EachPartition(func(p int32, s metadata.Partition) bool {
		lead[s.Leader()]++
		pref[s.PreferredLeader()]++
		used := map[string]bool{}
		for _, id := range s.Replicas() {
			reps[id]++
			b, _ := img.Broker(id)
			used[b.Rack] = true
		}
		if len(used) < min(len(racks), len(s.Replicas())) {
			poorlySpread++
		}
		return true
	})
	var out strings.Builder
	ids := slices.Sorted(func(yield func(int32) bool) {
		for id := range reps {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		fmt.Fprintf(&out, "broker %d: leads=%d preferred=%d replicas=%d\n", id, lead[id], pref[id], reps[id])
	}
	if lead[metadata.NoLeader] > 0 {
		fmt.Fprintf(&out, "leaderless: %d\n", lead[metadata.NoLeader])
	}
	fmt.Fprintf(&out, "partitions not spread over as many racks as they could be: %d", poorlySpread)
	return out.String()
}
