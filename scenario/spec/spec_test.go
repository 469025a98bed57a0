package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// minimal is the smallest valid file; the table cases edit it.
const minimal = `
name: t
topics:
  - {name: foo, partitions: 3}
producers:
  - rate: 100
phases:
  - kind: steady
    duration: 10s
`

func TestParseFillsDefaults(t *testing.T) {
	f, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Producers[0]
	switch {
	case f.Cluster.Kind != KindWeir || f.Cluster.Brokers != 1 || f.Cluster.KafkaHeap != "512m":
		t.Errorf("cluster %+v, want weir with 1 broker (and 512m of heap were it kafka)", f.Cluster)
	case f.Topics[0].ReplicationFactor != 1:
		t.Errorf("replication factor %d, want 1", f.Topics[0].ReplicationFactor)
	case p.Name != "producer-0" || p.Client != ClientWeir || p.Topic != "foo" || p.Count != 1 || p.RecordSize != DefaultRecordSize:
		t.Errorf("producer %+v", p)
	case p.Distributor.Type != NoKey || p.Rate.Constant == nil || *p.Rate.Constant != 100:
		t.Errorf("producer distributor %+v rate %+v", p.Distributor, p.Rate)
	case f.Sample.D() != time.Second || f.Quick.Scale != DefaultQuickScale:
		t.Errorf("sample %v quick %v", f.Sample.D(), f.Quick.Scale)
	case f.Phases[0].Name != "steady-0":
		t.Errorf("phase name %q", f.Phases[0].Name)
	}
}

// Every bad file names the field at fault, and its line where the field
// is in the file.
func TestParseErrorsNameTheField(t *testing.T) {
	cases := []struct {
		name string
		file string
		want string // substring of the error
	}{
		{"empty", ``, "empty file"},
		{"not yaml", "name: [", "did not find expected"},
		{"unknown field", minimal + "colour: red\n", "field colour not found in the top level"},
		{"unknown producer field", strings.Replace(minimal, "rate: 100", "rate: 100\n    linger: 5", 1), "field linger not found in a producer"},
		{"no name", strings.Replace(minimal, "name: t", "", 1), "name: required"},
		{"bad kind", minimal + "cluster: {kind: zookeeper}\n", `cluster.kind: "zookeeper"`},
		{"too many brokers", minimal + "cluster: {brokers: 99}\n", "cluster.brokers: 99"},
		{"external without bootstrap", minimal + "cluster: {kind: external}\n", "cluster.bootstrap: required"},
		{"no topics", "name: t\nphases: [{kind: drain}]\nconsumers: [{type: share, topic: x}]\n", "topics: at least one"},
		{"rf above brokers", strings.Replace(minimal, "partitions: 3}", "partitions: 3, replication_factor: 3}", 1), "line 4: topics[0].replication_factor: 3 with 1 brokers"},
		{"assignment off the cluster", strings.Replace(minimal, "partitions: 3}", "assignment: [[1], [4]]}", 1), "topics[0].assignment[1][0]: broker 4 is not in the cluster"},
		{"assignment uneven", minimal + "cluster: {brokers: 3}\n", ""},
		{"assignment twice", strings.Replace(minimal, "{name: foo, partitions: 3}", "{name: foo, assignment: [[1, 1]]}", 1), "broker 1 listed twice"},
		{"assignment disagrees", strings.Replace(minimal, "{name: foo, partitions: 3}", "{name: foo, partitions: 2, assignment: [[1]]}", 1), "topics[0].partitions: 2, but the assignment has 1"},
		{"unknown topic", strings.Replace(minimal, "rate: 100", "rate: 100\n    topic: bar", 1), `producers[0].topic: no topic named "bar"`},
		{"negative rate", strings.Replace(minimal, "rate: 100", "rate: -5", 1), "line 6: producers[0].rate: -5 records/s"},
		{"rate word", strings.Replace(minimal, "rate: 100", "rate: fast", 1), `rate "fast" is neither`},
		{"segment without duration", strings.Replace(minimal, "rate: 100", "rate: {segments: [{rate: 5}]}", 1), "producers[0].rate.segments[0].duration: required"},
		{"segment both", strings.Replace(minimal, "rate: 100", "rate: {segments: [{rate: 5, from: 1, to: 2, duration: 1s}]}", 1), "either rate or from and to"},
		{"ramp half", strings.Replace(minimal, "rate: 100", "rate: {segments: [{from: 1, duration: 1s}]}", 1), "a ramp needs from and to"},
		{"duration number", strings.Replace(minimal, "duration: 10s", "duration: 10", 1), `"10" is not a duration`},
		{"zipf without alpha", strings.Replace(minimal, "rate: 100", "rate: 100\n    distributor: {type: PARTITION_ZIPF}", 1), "producers[0].distributor.alpha"},
		{"alpha elsewhere", strings.Replace(minimal, "rate: 100", "rate: 100\n    distributor: {type: NO_KEY, alpha: 2}", 1), "only PARTITION_ZIPF has an exponent"},
		{"bad distributor", strings.Replace(minimal, "rate: 100", "rate: 100\n    distributor: {type: RANDOM}", 1), `distributor.type: "RANDOM"`},
		{"bad client", strings.Replace(minimal, "rate: 100", "rate: 100\n    client: python", 1), `producers[0].client: "python"`},
		{"weir with version", strings.Replace(minimal, "rate: 100", "rate: 100\n    java_version: 3.2.3", 1), "only a java client has one"},
		{"bad version", strings.Replace(minimal, "rate: 100", "rate: 100\n    client: java\n    java_version: latest", 1), `"latest" is not a version`},
		{"tiny record", strings.Replace(minimal, "rate: 100", "rate: 100\n    record_size: 4", 1), "record_size: 4 bytes"},
		{"consumer type", minimal + "consumers: [{type: queue}]\n", `consumers[0].type: "queue"`},
		{"group acquire mode", minimal + "consumers: [{type: group, acquire_mode: record_limit}]\n", "only share consumers have one"},
		{"bad acquire mode", minimal + "consumers: [{type: share, acquire_mode: greedy}]\n", `acquire_mode: "greedy"`},
		{"processing inverted", minimal + "consumers: [{type: share, processing: {min_ms: 50, max_ms: 10}}]\n", "processing.max_ms: 10 is below"},
		{"parallelism", minimal + "consumers: [{type: share, processing: {parallelism: -2}}]\n", "processing.parallelism"},
		{"no phases", strings.Replace(minimal, "phases:\n  - kind: steady\n    duration: 10s\n", "", 1), "phases: at least one"},
		{"steady unbounded", strings.Replace(minimal, "    duration: 10s\n", "", 1), "phases[0].duration: required unless"},
		{"drain without consumers", strings.Replace(minimal, "kind: steady", "kind: drain", 1), "a drain phase needs consumers"},
		{"backlog unbounded", strings.Replace(minimal, "kind: steady\n    duration: 10s", "kind: backlog", 1), "needs records or a duration"},
		{"explore without target", strings.Replace(minimal, "kind: steady", "kind: explore", 1) + "consumers: [{type: group}]\n", "target_p99: required"},
		{"explore rates", strings.Replace(minimal, "kind: steady", "kind: explore\n    target_p99: 1s\n    min_rate: 10\n    max_rate: 5", 1) + "consumers: [{type: group}]\n", "want 0 < min_rate < max_rate"},
		{"target elsewhere", strings.Replace(minimal, "duration: 10s", "duration: 10s\n    target_p99: 1s", 1), "belong to explore phases"},
		{"bad phase kind", strings.Replace(minimal, "kind: steady", "kind: soak", 1), `phases[0].kind: "soak"`},
		{"twice named", strings.Replace(minimal, "  - rate: 100", "  - {name: a, rate: 1}\n  - {name: a, rate: 1}", 1), `producers[1].name: producer "a" named twice`},
		{"fault action", minimal + "faults: [{action: explode, broker: 1}]\n", `faults[0].action: "explode"`},
		{"fault broker", minimal + "faults: [{action: kill, broker: 2}]\n", "faults[0].broker: broker 2 is not in the cluster"},
		{"fault phase", minimal + "faults: [{action: kill, broker: 1, phase: later}]\n", `faults[0].phase: no phase named "later"`},
		{"fault external", minimal + "cluster: {kind: external, bootstrap: 'x:1'}\nfaults: [{action: pause, broker: 1}]\n", "an external cluster does not give"},
		{"reassign partition", minimal + "faults: [{action: reassign, assignment: {7: [1]}}]\n", "faults[0].assignment.7: topic foo has no partition 7"},
		{"reassign empty", minimal + "faults: [{action: reassign}]\n", "faults[0].assignment: required"},
		{"broker config empty", minimal + "faults: [{action: broker_config, broker: -1}]\n", "faults[0].configs: required"},
		{"slow negative", minimal + "faults: [{action: slow_broker, broker: 1, produce_delay_ms: -1}]\n", "delays must be"},
		{"kafka heap", minimal + "cluster: {kind: kafka, kafka_heap: 100k}\n", `cluster.kafka_heap: "100k", want 64m to 64g`},
		{"kafka heap small", minimal + "cluster: {kind: kafka, kafka_heap: 32m}\n", `cluster.kafka_heap: "32m"`},
		{"timeout on kill", minimal + "faults: [{action: kill, broker: 1, timeout: 5m}]\n", "faults[0].timeout: belongs to stop and restart"},
		{"timeout too long", minimal + "faults: [{action: stop, broker: 1, timeout: 31m}]\n", "faults[0].timeout: 31m0s, want up to 30m0s"},
		{"variant twice", minimal + "variants: [{name: a}, {name: a}]\n", `variants[1].name: variant "a" named twice`},
		{"variant client", minimal + "variants: [{name: a, producer: {client: rust}}]\n", `variants[0].producer.client: "rust"`},
		{"quick variant", minimal + "variants: [{name: a}]\nquick: {variants: [b]}\n", `quick.variants[0]: no variant named "b"`},
		{"quick scale", minimal + "quick: {scale: 2}\n", "quick.scale: 2"},
		{"sample", minimal + "sample: 1ms\n", "sample: 1ms is below 10ms"},
		{"bad name", strings.Replace(minimal, "name: t", "name: 'a b'", 1), `name: "a b" is not a name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid file refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *spec.Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

const variants = `
name: v
cluster: {brokers: 3}
topics: [{name: foo, assignment: [[1], [2], [3]]}]
producers:
  - rate: {segments: [{from: 1, to: 100, duration: 20s}, {rate: 0, duration: 30s}], repeating: true}
    records: 1000
    configs: {linger.ms: "0"}
consumers: [{type: share, acquire_mode: record_limit}]
faults: [{action: slow_broker, broker: 1, produce_delay_ms: 20, at: 10s}]
phases:
  - {kind: backlog, records: 500}
  - {kind: drain, timeout: 60s}
variants:
  - name: java-old
    producer: {client: java, java_version: 3.2.3, configs: {partitioner.class: x}}
    consumer: {client: java, acquire_mode: batch_optimized, count: 6}
  - name: weir
  - name: zipf
    partitions: 12
    producer: {distributor: {type: PARTITION_ZIPF, alpha: 1.5}}
quick: {scale: 0.5, variants: [weir]}
`

func TestResolveVariantsAndQuick(t *testing.T) {
	f, err := Parse([]byte(variants))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.VariantNames(false); strings.Join(got, ",") != "java-old,weir,zipf" {
		t.Fatalf("variants %v", got)
	}
	if got := f.VariantNames(true); strings.Join(got, ",") != "weir" {
		t.Fatalf("quick variants %v", got)
	}
	old, err := f.Resolve("java-old", false)
	if err != nil {
		t.Fatal(err)
	}
	p, c := old.Producers[0], old.Consumers[0]
	if p.Client != ClientJava || p.JavaVersion != "3.2.3" || p.Configs["linger.ms"] != "0" || p.Configs["partitioner.class"] != "x" {
		t.Errorf("producer of java-old: %+v", p)
	}
	if c.Client != ClientJava || c.JavaVersion != DefaultJavaVersion || c.AcquireMode != BatchOptimized || c.Count != 6 {
		t.Errorf("consumer of java-old: %+v", c)
	}
	if old.Variant != "java-old" || len(old.Variants) != 0 || old.Quicked {
		t.Errorf("resolved file: variant %q variants %v quick %v", old.Variant, old.Variants, old.Quicked)
	}
	if f.Producers[0].Client != ClientWeir || f.Producers[0].Configs["partitioner.class"] != "" {
		t.Error("Resolve changed the file it resolved")
	}
	q, err := f.Resolve("weir", true)
	if err != nil {
		t.Fatal(err)
	}
	if q.Producers[0].Records != 500 || q.Phases[0].Records != 250 || q.Phases[1].Timeout.D() != 30*time.Second ||
		q.Faults[0].At.D() != 5*time.Second || q.Producers[0].Rate.Segments[0].Duration.D() != 10*time.Second || !q.Producers[0].Rate.Repeating {
		t.Errorf("quick: producer %+v phases %+v faults %+v", q.Producers[0], q.Phases, q.Faults)
	}
	z, err := f.Resolve("zipf", false)
	if err != nil {
		t.Fatal(err)
	}
	// The topic is placed explicitly: its partitions stay; the
	// distributor changes.
	if z.Topics[0].Partitions != 3 || z.Producers[0].Distributor.Type != PartitionZipf || z.Producers[0].Distributor.Alpha != 1.5 {
		t.Errorf("zipf variant: topic %+v distributor %+v", z.Topics[0], z.Producers[0].Distributor)
	}
	if _, err := f.Resolve("nope", false); err == nil {
		t.Fatal("an unknown variant resolved")
	}
	// A variant whose overrides break the file is refused with its name.
	bad := strings.Replace(variants, "- name: weir", "- name: weir\n    cluster: kafka\n    producer: {java_version: x}", 1)
	f, err = Parse([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Resolve("weir", false); err == nil || !strings.Contains(err.Error(), `variant "weir"`) {
		t.Fatalf("broken variant: %v", err)
	}
}

// A variant's faults and phases replace the file's, whole; the others
// keep the file's. A variant fault that breaks the file is refused with
// the variant's name and the field.
func TestVariantTimeline(t *testing.T) {
	file := variants + `  - name: slow
    faults: [{action: stop, broker: 2, at: 20s, timeout: 5m}, {action: start, broker: 2, at: 6m}]
    phases: [{kind: steady, duration: 8m}]
  - name: calm
    faults: []
`
	file = strings.Replace(file, "quick: {scale: 0.5, variants: [weir]}\n", "", 1) + "quick: {scale: 0.5, variants: [weir]}\n"
	f, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Resolve("slow", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Faults) != 2 || s.Faults[0].Action != FaultStop || s.Faults[0].Timeout.D() != 5*time.Minute || s.Faults[1].At.D() != 6*time.Minute {
		t.Errorf("faults of slow: %+v", s.Faults)
	}
	if len(s.Phases) != 1 || s.Phases[0].Kind != PhaseSteady || s.Phases[0].Duration.D() != 8*time.Minute {
		t.Errorf("phases of slow: %+v", s.Phases)
	}
	w, err := f.Resolve("weir", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Faults) != 1 || w.Faults[0].Action != FaultSlowBroker || len(w.Phases) != 2 {
		t.Errorf("weir kept the file's timeline? faults %+v phases %+v", w.Faults, w.Phases)
	}
	if c, err := f.Resolve("calm", false); err != nil || len(c.Faults) != 0 || len(c.Phases) != 2 {
		t.Errorf("faults: [] resolved to %+v (phases %d), %v; want no faults", c.Faults, len(c.Phases), err)
	}
	bad := strings.Replace(file, "{action: stop, broker: 2,", "{action: stop, broker: 9,", 1)
	if f, err = Parse([]byte(bad)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Resolve("slow", false); err == nil || !strings.Contains(err.Error(), `variant "slow"`) || !strings.Contains(err.Error(), "faults[0].broker") {
		t.Fatalf("a variant fault on broker 9 of 3: %v", err)
	}
}

// The shipped scenario files parse, and every variant of each resolves,
// quick or not.
func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, quick := range []bool{false, true} {
				for _, v := range f.VariantNames(quick) {
					if _, err := f.Resolve(v, quick); err != nil {
						t.Errorf("variant %q quick=%v: %v", v, quick, err)
					}
				}
			}
		})
	}
}

// Whatever the bytes, Parse returns a file or a *spec.Error, never
// panics, and a file it accepts resolves again (a parsed file's own
// defaults are valid input).
func FuzzParse(f *testing.F) {
	for _, s := range []string{minimal, variants, "", "name: x", "topics: 5", "- a\n- b", "name: t\nsample: 1h\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *spec.Error", err, err)
			}
			return
		}
		for _, v := range file.VariantNames(false) {
			if _, err := file.Resolve(v, false); err != nil {
				t.Fatalf("accepted file does not resolve variant %q: %v", v, err)
			}
		}
	})
}
