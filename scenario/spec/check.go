package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Defaults filled in by check.
const (
	DefaultSample      = time.Second
	DefaultJavaVersion = "4.3.0"
	DefaultRecordSize  = 512
	DefaultKeys        = 100
	DefaultDrain       = 10 * time.Minute
	DefaultQuickScale  = 0.1
	DefaultExploreStep = 6
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// checker collects the first error, with its path.
type checker struct{ err *Error }

func (c *checker) fail(path, format string, args ...any) {
	if c.err == nil {
		c.err = &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
}

func (c *checker) name(path, v string) {
	if !nameRE.MatchString(v) {
		c.fail(path, "%q is not a name (letters, digits, '.', '_', '-'; at most 100)", v)
	}
}

func (c *checker) items(path string, n int) {
	if n > MaxItems {
		c.fail(path, "%d entries, more than %d", n, MaxItems)
	}
}

func at(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// check validates f and fills in its defaults.
func (f *File) check() error {
	c := &checker{}
	if f.Name == "" {
		c.fail("name", "required")
	}
	c.name("name", f.Name)
	if f.Sample == 0 {
		f.Sample = Duration(DefaultSample)
	}
	if f.Sample.D() < 10*time.Millisecond {
		c.fail("sample", "%v is below 10ms", f.Sample.D())
	}
	f.checkCluster(c)
	topics := f.checkTopics(c)
	f.checkProducers(c, topics)
	f.checkConsumers(c, topics)
	phases := f.checkPhases(c)
	f.checkFaults(c, topics, phases)
	f.checkVariants(c)
	if f.Quick.Scale == 0 {
		f.Quick.Scale = DefaultQuickScale
	}
	if !(f.Quick.Scale > 0 && f.Quick.Scale <= 1) {
		c.fail("quick.scale", "%v is not in (0, 1]", f.Quick.Scale)
	}
	for i, v := range f.Quick.Variants {
		if !slices.ContainsFunc(f.Variants, func(x Variant) bool { return x.Name == v }) {
			c.fail(at("quick.variants", i), "no variant named %q", v)
		}
	}
	if c.err != nil {
		return c.err
	}
	return nil
}

// Cluster kinds.
const (
	KindWeir     = "weir"
	KindKafka    = "kafka"
	KindExternal = "external"
)

func (f *File) checkCluster(c *checker) {
	cl := &f.Cluster
	if cl.Kind == "" {
		cl.Kind = KindWeir
	}
	switch cl.Kind {
	case KindWeir, KindKafka:
		if cl.Brokers == 0 {
			cl.Brokers = 1
		}
		if cl.Brokers < 1 || cl.Brokers > MaxBrokers {
			c.fail("cluster.brokers", "%d, want 1 to %d", cl.Brokers, MaxBrokers)
		}
		if cl.Bootstrap != "" {
			c.fail("cluster.bootstrap", "only an external cluster has one (the runner starts %s clusters itself)", cl.Kind)
		}
	case KindExternal:
		if cl.Bootstrap == "" {
			c.fail("cluster.bootstrap", "required for an external cluster")
		}
	default:
		c.fail("cluster.kind", "%q, want weir, kafka or external", cl.Kind)
	}
	if cl.KafkaHeap == "" {
		cl.KafkaHeap = DefaultKafkaHeap
	}
	if mb, ok := heapMB(cl.KafkaHeap); !ok || mb < 64 || mb > 64<<10 {
		c.fail("cluster.kafka_heap", "%q, want 64m to 64g, as -Xmx takes it (512m, 2g)", cl.KafkaHeap)
	}
}

// heapMB reads a JVM heap size written as Nm or Ng.
func heapMB(s string) (int, bool) {
	m := heapSize.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n > 1<<20 {
		return 0, false
	}
	if m[2] == "g" {
		n <<= 10
	}
	return n, true
}

var heapSize = regexp.MustCompile(`^([1-9][0-9]{0,6})([mg])$`)

// brokerOK reports whether id names a broker the runner starts (nodes
// 1..Brokers); on an external cluster any id >= 0 may exist.
func (f *File) brokerOK(id int32) bool {
	if f.Cluster.Kind == KindExternal {
		return id >= 0
	}
	return id >= 1 && int(id) <= f.Cluster.Brokers
}

func (f *File) checkTopics(c *checker) map[string]*Topic {
	c.items("topics", len(f.Topics))
	if len(f.Topics) == 0 {
		c.fail("topics", "at least one topic is required")
	}
	out := map[string]*Topic{}
	for i := range f.Topics {
		t := &f.Topics[i]
		p := at("topics", i)
		c.name(p+".name", t.Name)
		if out[t.Name] != nil {
			c.fail(p+".name", "topic %q named twice", t.Name)
		}
		out[t.Name] = t
		if len(t.Assignment) > 0 {
			c.items(p+".assignment", len(t.Assignment))
			rf := len(t.Assignment[0])
			for pi, replicas := range t.Assignment {
				ap := at(p+".assignment", pi)
				if len(replicas) == 0 {
					c.fail(ap, "partition %d has no replicas", pi)
				}
				if len(replicas) != rf {
					c.fail(ap, "partition %d has %d replicas, partition 0 has %d", pi, len(replicas), rf)
				}
				for ri, b := range replicas {
					if !f.brokerOK(b) {
						c.fail(at(ap, ri), "broker %d is not in the cluster (brokers are 1 to %d)", b, f.Cluster.Brokers)
					}
					if slices.Contains(replicas[:ri], b) {
						c.fail(at(ap, ri), "broker %d listed twice", b)
					}
				}
			}
			if t.Partitions != 0 && t.Partitions != len(t.Assignment) {
				c.fail(p+".partitions", "%d, but the assignment has %d partitions", t.Partitions, len(t.Assignment))
			}
			if t.ReplicationFactor != 0 && t.ReplicationFactor != rf {
				c.fail(p+".replication_factor", "%d, but the assignment has %d replicas", t.ReplicationFactor, rf)
			}
			t.Partitions, t.ReplicationFactor = len(t.Assignment), rf
			continue
		}
		if t.ReplicationFactor == 0 {
			t.ReplicationFactor = 1
		}
		if t.Partitions < 1 || t.Partitions > 1_000_000 {
			c.fail(p+".partitions", "%d, want 1 to 1000000", t.Partitions)
		}
		if t.ReplicationFactor < 1 || (f.Cluster.Kind != KindExternal && t.ReplicationFactor > f.Cluster.Brokers) {
			c.fail(p+".replication_factor", "%d with %d brokers", t.ReplicationFactor, f.Cluster.Brokers)
		}
	}
	return out
}

// topicOf checks a reference to a topic; with one topic it may be left
// out.
func (f *File) topicOf(c *checker, path string, name *string, topics map[string]*Topic) {
	if *name == "" && len(f.Topics) == 1 {
		*name = f.Topics[0].Name
	}
	if topics[*name] == nil {
		c.fail(path, "no topic named %q", *name)
	}
}

func checkClient(c *checker, path string, client, version *string) {
	if *client == "" {
		*client = ClientWeir
	}
	switch *client {
	case ClientWeir:
		if *version != "" {
			c.fail(path+".java_version", "only a java client has one")
		}
	case ClientJava:
		if *version == "" {
			*version = DefaultJavaVersion
		}
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(*version) {
			c.fail(path+".java_version", "%q is not a version such as 4.3.0", *version)
		}
	default:
		c.fail(path+".client", "%q, want weir or java", *client)
	}
}

func (f *File) checkProducers(c *checker, topics map[string]*Topic) {
	c.items("producers", len(f.Producers))
	names := map[string]bool{}
	for i := range f.Producers {
		pr := &f.Producers[i]
		p := at("producers", i)
		if pr.Name == "" {
			pr.Name = fmt.Sprintf("producer-%d", i)
		}
		c.name(p+".name", pr.Name)
		if names[pr.Name] {
			c.fail(p+".name", "producer %q named twice", pr.Name)
		}
		names[pr.Name] = true
		checkClient(c, p, &pr.Client, &pr.JavaVersion)
		f.topicOf(c, p+".topic", &pr.Topic, topics)
		if pr.Count == 0 {
			pr.Count = 1
		}
		if pr.Count < 1 || pr.Count > MaxItems {
			c.fail(p+".count", "%d, want 1 to %d", pr.Count, MaxItems)
		}
		if pr.RecordSize == 0 {
			pr.RecordSize = DefaultRecordSize
		}
		if pr.RecordSize < 8 || pr.RecordSize > 16<<20 {
			c.fail(p+".record_size", "%d bytes, want 8 (the send time the record carries) to 16 MiB", pr.RecordSize)
		}
		if pr.Records < 0 {
			c.fail(p+".records", "%d is negative", pr.Records)
		}
		checkSchedule(c, p+".rate", &pr.Rate)
		d := &pr.Distributor
		if d.Type == "" {
			d.Type = NoKey
		}
		dp := p + ".distributor"
		switch d.Type {
		case NoKey, PinnedPartitions:
		case KeyRoundRobin:
			if d.Keys == 0 {
				d.Keys = DefaultKeys
			}
			if d.Keys < 1 || d.Keys > 10_000_000 {
				c.fail(dp+".keys", "%d, want 1 to 10000000", d.Keys)
			}
		case PartitionZipf:
			if !(d.Alpha > 0) || !finite(d.Alpha) {
				c.fail(dp+".alpha", "%v, want a positive exponent (the seed used 1.5 and 2)", d.Alpha)
			}
		default:
			c.fail(dp+".type", "%q, want NO_KEY, KEY_ROUND_ROBIN, PARTITION_ZIPF or PINNED_PARTITIONS", d.Type)
		}
		if d.Type != PartitionZipf && d.Alpha != 0 {
			c.fail(dp+".alpha", "only PARTITION_ZIPF has an exponent")
		}
		if d.Type != KeyRoundRobin && d.Keys != 0 {
			c.fail(dp+".keys", "only KEY_ROUND_ROBIN has keys")
		}
	}
}

func checkSchedule(c *checker, path string, s *Schedule) {
	if s.Constant != nil {
		if *s.Constant < 0 || !finite(*s.Constant) {
			c.fail(path, "%v records/s, want a rate >= 0", *s.Constant)
		}
		if len(s.Segments) > 0 || s.Repeating {
			c.fail(path, "a constant rate has no segments")
		}
		return
	}
	if len(s.Segments) == 0 {
		c.fail(path, "required: a rate in records/s or segments")
	}
	c.items(path+".segments", len(s.Segments))
	for i, sg := range s.Segments {
		p := at(path+".segments", i)
		if sg.Duration.D() <= 0 {
			c.fail(p+".duration", "required and positive")
		}
		ramp := sg.From != nil || sg.To != nil
		switch {
		case sg.Rate != nil && ramp:
			c.fail(p, "either rate or from and to, not both")
		case sg.Rate != nil:
			if *sg.Rate < 0 || !finite(*sg.Rate) {
				c.fail(p+".rate", "%v, want >= 0", *sg.Rate)
			}
		case sg.From == nil || sg.To == nil:
			c.fail(p, "a ramp needs from and to (or give rate)")
		default:
			if *sg.From < 0 || !finite(*sg.From) {
				c.fail(p+".from", "%v, want >= 0", *sg.From)
			}
			if *sg.To < 0 || !finite(*sg.To) {
				c.fail(p+".to", "%v, want >= 0", *sg.To)
			}
		}
	}
}

// Acquire modes of share consumers.
const (
	RecordLimit    = "record_limit"
	BatchOptimized = "batch_optimized"
)

func (f *File) checkConsumers(c *checker, topics map[string]*Topic) {
	c.items("consumers", len(f.Consumers))
	names := map[string]bool{}
	for i := range f.Consumers {
		cs := &f.Consumers[i]
		p := at("consumers", i)
		if cs.Name == "" {
			cs.Name = fmt.Sprintf("consumer-%d", i)
		}
		c.name(p+".name", cs.Name)
		if names[cs.Name] {
			c.fail(p+".name", "consumer %q named twice", cs.Name)
		}
		names[cs.Name] = true
		checkClient(c, p, &cs.Client, &cs.JavaVersion)
		f.topicOf(c, p+".topic", &cs.Topic, topics)
		if cs.Group == "" {
			cs.Group = f.Name + "-" + cs.Name
		}
		c.name(p+".group", cs.Group)
		if cs.Count == 0 {
			cs.Count = 1
		}
		if cs.Count < 1 || cs.Count > MaxItems {
			c.fail(p+".count", "%d, want 1 to %d", cs.Count, MaxItems)
		}
		switch cs.Type {
		case ConsumerShare:
			if cs.AcquireMode == "" {
				cs.AcquireMode = BatchOptimized
			}
			if cs.AcquireMode != RecordLimit && cs.AcquireMode != BatchOptimized {
				c.fail(p+".acquire_mode", "%q, want record_limit or batch_optimized", cs.AcquireMode)
			}
		case ConsumerGroup:
			if cs.AcquireMode != "" {
				c.fail(p+".acquire_mode", "only share consumers have one")
			}
		default:
			c.fail(p+".type", "%q, want share or group", cs.Type)
		}
		pr := &cs.Processing
		if pr.Parallelism == 0 {
			pr.Parallelism = 1
		}
		switch {
		case pr.MinMs < 0 || !finite(pr.MinMs):
			c.fail(p+".processing.min_ms", "%v, want >= 0", pr.MinMs)
		case pr.MaxMs < pr.MinMs || !finite(pr.MaxMs):
			c.fail(p+".processing.max_ms", "%v is below min_ms %v", pr.MaxMs, pr.MinMs)
		case pr.Parallelism < -1:
			c.fail(p+".processing.parallelism", "%d, want -1 (a whole poll at once) or a count >= 1", pr.Parallelism)
		}
	}
}

func (f *File) checkPhases(c *checker) map[string]bool {
	c.items("phases", len(f.Phases))
	if len(f.Phases) == 0 {
		c.fail("phases", "at least one phase is required")
	}
	names := map[string]bool{}
	for i := range f.Phases {
		ph := &f.Phases[i]
		p := at("phases", i)
		if ph.Name == "" {
			ph.Name = fmt.Sprintf("%s-%d", ph.Kind, i)
		}
		c.name(p+".name", ph.Name)
		if names[ph.Name] {
			c.fail(p+".name", "phase %q named twice", ph.Name)
		}
		names[ph.Name] = true
		if ph.Duration < 0 || ph.Timeout < 0 || ph.Records < 0 {
			c.fail(p, "durations, timeouts and records cannot be negative")
		}
		needProducers := func() {
			if len(f.Producers) == 0 {
				c.fail(p+".kind", "a %s phase needs producers", ph.Kind)
			}
		}
		needConsumers := func() {
			if len(f.Consumers) == 0 {
				c.fail(p+".kind", "a %s phase needs consumers", ph.Kind)
			}
		}
		switch ph.Kind {
		case PhaseBacklog:
			needProducers()
			if ph.Records == 0 && ph.Duration == 0 {
				c.fail(p, "a backlog phase needs records or a duration")
			}
		case PhaseDrain:
			needConsumers()
			if ph.Timeout == 0 {
				ph.Timeout = Duration(DefaultDrain)
			}
		case PhaseSteady:
			needProducers()
			if ph.Duration == 0 && !f.producersBounded() {
				c.fail(p+".duration", "required unless every producer has records")
			}
		case PhaseExplore:
			needProducers()
			needConsumers()
			if ph.TargetP99 <= 0 {
				c.fail(p+".target_p99", "required: the p99 end-to-end latency to stay under")
			}
			if !(ph.MinRate > 0) || !(ph.MaxRate > ph.MinRate) || !finite(ph.MaxRate) {
				c.fail(p+".max_rate", "want 0 < min_rate < max_rate (got %v and %v)", ph.MinRate, ph.MaxRate)
			}
			if ph.Duration <= 0 {
				c.fail(p+".duration", "required: how long each rate is tried")
			}
			if ph.Steps == 0 {
				ph.Steps = DefaultExploreStep
			}
			if ph.Steps < 1 || ph.Steps > 50 {
				c.fail(p+".steps", "%d, want 1 to 50", ph.Steps)
			}
			if ph.Timeout == 0 {
				ph.Timeout = Duration(DefaultDrain)
			}
		default:
			c.fail(p+".kind", "%q, want backlog, drain, steady or explore", ph.Kind)
		}
		if ph.Kind != PhaseExplore && (ph.TargetP99 != 0 || ph.MinRate != 0 || ph.MaxRate != 0 || ph.Steps != 0) {
			c.fail(p, "target_p99, min_rate, max_rate and steps belong to explore phases")
		}
	}
	return names
}

func (f *File) producersBounded() bool {
	for _, p := range f.Producers {
		if p.Records == 0 {
			return false
		}
	}
	return len(f.Producers) > 0
}

// processFaults act on a broker's process: the runner must own it.
var processFaults = map[string]bool{FaultPause: true, FaultResume: true, FaultKill: true, FaultStop: true, FaultStart: true, FaultRestart: true}

func (f *File) checkFaults(c *checker, topics map[string]*Topic, phases map[string]bool) {
	c.items("faults", len(f.Faults))
	for i := range f.Faults {
		ft := &f.Faults[i]
		p := at("faults", i)
		if ft.At < 0 {
			c.fail(p+".at", "negative")
		}
		if ft.Phase != "" && !phases[ft.Phase] {
			c.fail(p+".phase", "no phase named %q", ft.Phase)
		}
		brokerNeeded := true
		switch {
		case processFaults[ft.Action]:
			if f.Cluster.Kind == KindExternal {
				c.fail(p+".action", "%s acts on a broker process, which an external cluster does not give the runner", ft.Action)
			}
		case ft.Action == FaultFailover:
			brokerNeeded = false
			if f.Cluster.Kind == KindExternal {
				c.fail(p+".action", "failover kills a broker process, which an external cluster does not give the runner")
			}
		case ft.Action == FaultSlowBroker:
			if ft.ProduceDelayMs < 0 || ft.FetchDelayMs < 0 || ft.ProduceDelayMs > 600_000 || ft.FetchDelayMs > 600_000 {
				c.fail(p, "delays must be 0 to 600000 ms")
			}
		case ft.Action == FaultBrokerConfig:
			brokerNeeded = ft.Broker != -1
			if len(ft.Configs) == 0 {
				c.fail(p+".configs", "required")
			}
		case ft.Action == FaultMoveLeaders || ft.Action == FaultReassign:
			brokerNeeded = false
			f.topicOf(c, p+".topic", &ft.Topic, topics)
			if ft.Action == FaultReassign {
				if len(ft.Assignment) == 0 {
					c.fail(p+".assignment", "required: new replicas by partition")
				}
				t := topics[ft.Topic]
				for _, part := range slices.Sorted(maps.Keys(ft.Assignment)) {
					ap := fmt.Sprintf("%s.assignment.%d", p, part)
					if t != nil && (part < 0 || int(part) >= t.Partitions) {
						c.fail(ap, "topic %s has no partition %d", ft.Topic, part)
					}
					rs := ft.Assignment[part]
					if len(rs) == 0 {
						c.fail(ap, "no replicas")
					}
					for ri, b := range rs {
						if !f.brokerOK(b) || slices.Contains(rs[:ri], b) {
							c.fail(ap, "broker %d is not in the cluster or listed twice", b)
						}
					}
				}
			}
		default:
			c.fail(p+".action", "%q, want slow_broker, broker_config, pause, resume, kill, stop, start, restart, failover, move_leaders or reassign", ft.Action)
			brokerNeeded = false
		}
		if ft.Controller {
			if !brokerNeeded || ft.Action == FaultBrokerConfig {
				c.fail(p+".controller", "%s does not act on one broker", ft.Action)
			}
			brokerNeeded = false
		}
		if brokerNeeded && !f.brokerOK(ft.Broker) {
			c.fail(p+".broker", "broker %d is not in the cluster (brokers are 1 to %d)", ft.Broker, f.Cluster.Brokers)
		}
		switch {
		case ft.Timeout == 0:
		case ft.Action != FaultStop && ft.Action != FaultRestart:
			c.fail(p+".timeout", "belongs to stop and restart (how long the node has to exit)")
		case ft.Timeout < 0 || ft.Timeout.D() > MaxStopTimeout:
			c.fail(p+".timeout", "%v, want up to %v", ft.Timeout.D(), MaxStopTimeout)
		}
	}
}

func (f *File) checkVariants(c *checker) {
	c.items("variants", len(f.Variants))
	names := map[string]bool{}
	for i := range f.Variants {
		v := &f.Variants[i]
		p := at("variants", i)
		c.name(p+".name", v.Name)
		if names[v.Name] {
			c.fail(p+".name", "variant %q named twice", v.Name)
		}
		names[v.Name] = true
		switch v.Cluster {
		case "", KindWeir, KindKafka:
		default:
			c.fail(p+".cluster", "%q, want weir or kafka", v.Cluster)
		}
		if v.Cluster != "" && f.Cluster.Kind == KindExternal {
			c.fail(p+".cluster", "the scenario runs on an external cluster")
		}
		for _, cl := range []struct{ path, client, version string }{
			{p + ".producer", v.Producer.Client, v.Producer.JavaVersion},
			{p + ".consumer", v.Consumer.Client, v.Consumer.JavaVersion},
		} {
			if cl.client != "" && cl.client != ClientWeir && cl.client != ClientJava {
				c.fail(cl.path+".client", "%q, want weir or java", cl.client)
			}
		}
		if v.Producer.Rate != nil {
			checkSchedule(c, p+".producer.rate", v.Producer.Rate)
		}
		if m := v.Consumer.AcquireMode; m != "" && m != RecordLimit && m != BatchOptimized {
			c.fail(p+".consumer.acquire_mode", "%q, want record_limit or batch_optimized", m)
		}
		if v.Partitions < 0 || v.Partitions > 1_000_000 {
			c.fail(p+".partitions", "%d, want 1 to 1000000", v.Partitions)
		}
		if v.Consumer.Count < 0 {
			c.fail(p+".consumer.count", "negative")
		}
	}
}
