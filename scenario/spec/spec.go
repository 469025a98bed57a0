package spec

import (
	"time"
)

// File is one scenario file: a cluster, the topics on it, the load, the
// faults and the phases, and the variants to run it in.
type File struct {
	// Name names the scenario's reports; Seed says which seed table or
	// figure it reproduces, Description what it does.
	Name        string `yaml:"name"`
	Seed        string `yaml:"seed"`
	Description string `yaml:"description"`

	Cluster   Cluster    `yaml:"cluster"`
	Topics    []Topic    `yaml:"topics"`
	Producers []Producer `yaml:"producers"`
	Consumers []Consumer `yaml:"consumers"`
	Faults    []Fault    `yaml:"faults"`
	Phases    []Phase    `yaml:"phases"`
	// Variants run the scenario several times, each changing a few
	// fields (a client, a partitioner, an acquire mode), each on a fresh
	// cluster. None means one run as written.
	Variants []Variant `yaml:"variants"`
	// Sample is how often rates, latencies and backlog are read and a
	// console line printed (default 1s).
	Sample Duration `yaml:"sample"`
	Quick  Quick    `yaml:"quick"`

	// Variant is the variant a resolved file runs (Resolve sets it).
	Variant string `yaml:"-"`
	// Quicked says Resolve scaled the file down.
	Quicked bool `yaml:"-"`
}

// Cluster is where the scenario runs.
type Cluster struct {
	// Kind is weir (weir cluster up, from the weir binary), kafka
	// (Apache Kafka 4.3 through scripts/apache-kafka) or external (an
	// already running cluster at Bootstrap, on which process faults
	// cannot act).
	Kind      string `yaml:"kind"`
	Brokers   int    `yaml:"brokers"`
	Bootstrap string `yaml:"bootstrap"`
	// BrokerConfigs are dynamic broker configs set cluster-wide before
	// the load starts.
	BrokerConfigs map[string]string `yaml:"broker_configs"`
	// KafkaHeap is each Apache Kafka node's JVM heap (-Xmx, as 512m or
	// 2g) when the cluster is kafka; DefaultKafkaHeap when empty.
	KafkaHeap string `yaml:"kafka_heap"`
}

// DefaultKafkaHeap is a Kafka node's heap: three nodes fit the machine
// beside the load.
const DefaultKafkaHeap = "512m"

// Topic is a topic the scenario creates.
type Topic struct {
	Name              string            `yaml:"name"`
	Partitions        int               `yaml:"partitions"`
	ReplicationFactor int               `yaml:"replication_factor"`
	Configs           map[string]string `yaml:"configs"`
	// Assignment places the replicas explicitly: Assignment[p] lists
	// partition p's brokers (node ids), the preferred leader first, as
	// kafka-topics.sh --replica-assignment does. It then sets the
	// partition count and the replication factor.
	Assignment [][]int32 `yaml:"assignment"`
}

// Clients of producers and consumers.
const (
	ClientWeir = "weir" // weir's Go client, in process
	ClientJava = "java" // Kafka's Java client in a JVM (scenario/java)
)

// Producer is one kind of producer: Count instances, each with its own
// client.
type Producer struct {
	Name   string `yaml:"name"`
	Client string `yaml:"client"`
	// JavaVersion is the kafka-clients version of a java producer
	// (default 4.3.0); 3.2.3 has the KIP-480 partitioner KIP-794 replaced.
	JavaVersion string            `yaml:"java_version"`
	Topic       string            `yaml:"topic"`
	Count       int               `yaml:"count"`
	Configs     map[string]string `yaml:"configs"`
	RecordSize  int               `yaml:"record_size"`
	Rate        Schedule          `yaml:"rate"`
	// Records stops the producer after this many records (0: it runs
	// while its phases do), as ProducerPerformance's --num-records.
	Records     int64       `yaml:"records"`
	Distributor Distributor `yaml:"distributor"`
}

// Distributors say which partition a record goes to.
const (
	// NoKey: no key and no partition; the client's partitioner decides.
	NoKey = "NO_KEY"
	// KeyRoundRobin: keys taken in turn from a set of Keys keys, hashed
	// by the client (murmur2): a light, fixed skew.
	KeyRoundRobin = "KEY_ROUND_ROBIN"
	// PartitionZipf: an explicit partition drawn from a Zipf distribution
	// with exponent Alpha (partition 0 the heaviest).
	PartitionZipf = "PARTITION_ZIPF"
	// PinnedPartitions: explicit partitions in turn, an even spread.
	PinnedPartitions = "PINNED_PARTITIONS"
)

// Distributor picks records' partitions.
type Distributor struct {
	Type  string  `yaml:"type"`
	Alpha float64 `yaml:"alpha"`
	Keys  int     `yaml:"keys"`
	Seed  uint64  `yaml:"seed"`
}

// Schedule is a producer's rate over time, in records per second: a
// constant (`rate: 2048`) or segments, each a constant rate or a linear
// ramp from one rate to another, run once or repeated.
type Schedule struct {
	Constant  *float64  `yaml:"-"`
	Repeating bool      `yaml:"repeating"`
	Segments  []Segment `yaml:"segments"`
}

// Segment is one piece of a Schedule: Rate for Duration, or a ramp From
// to To over Duration.
type Segment struct {
	Rate     *float64 `yaml:"rate"`
	From     *float64 `yaml:"from"`
	To       *float64 `yaml:"to"`
	Duration Duration `yaml:"duration"`
}

// Consumer types.
const (
	ConsumerShare = "share"
	ConsumerGroup = "group"
)

// Consumer is one kind of consumer: Count members of one group.
type Consumer struct {
	Name   string `yaml:"name"`
	Client string `yaml:"client"`
	// JavaVersion as for Producer; share consumers need 4.x.
	JavaVersion string `yaml:"java_version"`
	Type        string `yaml:"type"`
	Group       string `yaml:"group"`
	Topic       string `yaml:"topic"`
	Count       int    `yaml:"count"`
	// AcquireMode is share.acquire.mode (share consumers): record_limit
	// or batch_optimized.
	AcquireMode string            `yaml:"acquire_mode"`
	Configs     map[string]string `yaml:"configs"`
	Processing  Processing        `yaml:"processing"`
}

// Processing is simulated work per record: a time drawn uniformly from
// [MinMs, MaxMs], the records of one poll handled Parallelism at a time
// (-1: all at once, 1: one after another).
type Processing struct {
	MinMs       float64 `yaml:"min_ms"`
	MaxMs       float64 `yaml:"max_ms"`
	Parallelism int     `yaml:"parallelism"`
}

// Fault actions.
const (
	FaultSlowBroker   = "slow_broker"   // set the serial produce/fetch delay of one broker
	FaultBrokerConfig = "broker_config" // set dynamic broker configs (Broker -1: cluster-wide)
	FaultPause        = "pause"         // SIGSTOP a broker
	FaultResume       = "resume"        // SIGCONT it
	FaultKill         = "kill"          // SIGKILL a broker
	FaultStop         = "stop"          // controlled shutdown (SIGTERM)
	FaultStart        = "start"         // start a stopped or killed broker again
	FaultRestart      = "restart"       // stop (controlled) and start again
	FaultMoveLeaders  = "move_leaders"  // every leader of a topic to another replica
	FaultReassign     = "reassign"      // new replica lists for some partitions
	// FaultFailover kills the node running the active controller, times
	// how long until a topic can be created through another node, and
	// starts the node again.
	FaultFailover = "failover"
)

// Fault is one action at a time into the run (or into a phase).
type Fault struct {
	At     Duration `yaml:"at"`
	Phase  string   `yaml:"phase"` // At counts from this phase's start; "" from the run's
	Action string   `yaml:"action"`
	Broker int32    `yaml:"broker"`
	// Controller aims the action at the node running the active
	// controller (as DescribeCluster names it) instead of Broker.
	Controller bool `yaml:"controller"`
	// ProduceDelayMs and FetchDelayMs are slow_broker's delays.
	ProduceDelayMs int               `yaml:"produce_delay_ms"`
	FetchDelayMs   int               `yaml:"fetch_delay_ms"`
	Configs        map[string]string `yaml:"configs"`
	Topic          string            `yaml:"topic"`
	// Assignment is reassign's new replica lists, by partition.
	Assignment map[int32][]int32 `yaml:"assignment"`
	// Timeout is how long stop and restart give the node to exit before
	// they kill it (SIGKILL); 0 means DefaultStopTimeout.
	Timeout Duration `yaml:"timeout"`
}

// DefaultStopTimeout is how long a stop waits for the node to exit by
// default, as an operator's service manager would before SIGKILL.
const DefaultStopTimeout = time.Minute

// MaxStopTimeout bounds a fault's timeout.
const MaxStopTimeout = 30 * time.Minute

// Phase kinds.
const (
	// PhaseBacklog: producers run, consumers do not, until the producers
	// have sent Records (or Duration passed).
	PhaseBacklog = "backlog"
	// PhaseDrain: producers stop, consumers run until every record
	// produced has been consumed (or Timeout).
	PhaseDrain = "drain"
	// PhaseSteady: producers and consumers together for Duration (or
	// until the producers have sent their Records).
	PhaseSteady = "steady"
	// PhaseExplore: steady steps at rates found by bisection, looking for
	// the highest rate whose p99 end-to-end latency stays under
	// TargetP99; a backlog left by a step is drained before the next.
	PhaseExplore = "explore"
)

// Phase is one stage of a run.
type Phase struct {
	Name     string   `yaml:"name"`
	Kind     string   `yaml:"kind"`
	Duration Duration `yaml:"duration"`
	Timeout  Duration `yaml:"timeout"`
	Records  int64    `yaml:"records"`
	// NoProcessing drops the consumers' processing time in this phase,
	// as Dimster does while draining.
	NoProcessing bool `yaml:"no_processing"`
	// Explore's settings: the latency target and the rates searched.
	TargetP99 Duration `yaml:"target_p99"`
	MinRate   float64  `yaml:"min_rate"`
	MaxRate   float64  `yaml:"max_rate"`
	Steps     int      `yaml:"steps"`
}

// Variant is one way to run the scenario: overrides applied to every
// producer (and consumer) before the run.
type Variant struct {
	Name    string `yaml:"name"`
	Cluster string `yaml:"cluster"` // a cluster kind
	// Partitions changes the partition count of every topic placed
	// without an explicit assignment.
	Partitions  int               `yaml:"partitions"`
	Producer    ProducerOverride  `yaml:"producer"`
	Consumer    ConsumerOverride  `yaml:"consumer"`
	BrokerConfs map[string]string `yaml:"broker_configs"`
	// Faults and Phases, when set, replace the file's (faults: [] runs
	// none): a variant whose cluster needs another timeline (Kafka taking
	// minutes where weir takes seconds) says so without a file of its own.
	Faults *[]Fault `yaml:"faults,omitempty"`
	Phases *[]Phase `yaml:"phases,omitempty"`
}

// ProducerOverride changes every producer of a variant.
type ProducerOverride struct {
	Client      string            `yaml:"client"`
	JavaVersion string            `yaml:"java_version"`
	Configs     map[string]string `yaml:"configs"`
	Rate        *Schedule         `yaml:"rate"`
	Distributor *Distributor      `yaml:"distributor"`
}

// ConsumerOverride changes every consumer of a variant.
type ConsumerOverride struct {
	Client      string            `yaml:"client"`
	JavaVersion string            `yaml:"java_version"`
	AcquireMode string            `yaml:"acquire_mode"`
	Count       int               `yaml:"count"`
	Configs     map[string]string `yaml:"configs"`
}

// Quick scales a scenario down for CI: durations, timeouts and record
// counts are multiplied by Scale (default 0.1); Variants, if set, names
// the only variants run.
type Quick struct {
	Scale    float64  `yaml:"scale"`
	Variants []string `yaml:"variants"`
}

// Duration is a time.Duration written as Go writes one ("30s", "2m",
// "1500ms").
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
