package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Share groups (KIP-932) across a change of partition leaders in a three-node cluster: a
 * leadership change loses no acknowledgement and redelivers only what was not acknowledged.
 *
 * <p>Every partition of the topic has the same preferred leader L, a node that is neither the share
 * group's coordinator nor the active controller. A share consumer accepts about half the records
 * (its acknowledgements confirmed by commitSync), releases one more poll's worth, and closes. L is
 * then stopped (controlled shutdown) or SIGKILLed through WEIR_CLUSTER_CMD, as in ClusterTest, so
 * every partition gets a new leader, which must take the share partitions over with their state.
 * A second consumer in the same group then accepts the rest while L is down. The test fails if a
 * record accepted before the move is delivered again, if a record is not accepted exactly once in
 * all, or if a delivery count after the move does not follow from what happened before it.
 *
 * <p>The lock lasts 60 s, longer than the test's wait for anything, so no record comes back
 * because its acquisition lock expired. The first consumer is closed before the move, not kept:
 * its close releases what its fetch buffer still held, and the requirement is about state the new
 * leader takes over, not about a member that outlives its partitions' leader.
 */
class ShareClusterTest {
    static final int PARTITIONS = 3;
    static final int N = 3000;
    static final int ACCEPT_BEFORE = N / 2;
    static final int MAX_POLL = 100;
    static final Duration POLL = Duration.ofMillis(200);

    /** Where record i of the data set was written. */
    record Placed(int partition, long offset) {
        @Override
        public String toString() {
            return partition + "@" + offset;
        }
    }

    /** What the application saw of the records before the leaders moved. */
    static final class Before {
        final Set<Integer> accepted = new HashSet<>();
        final Set<Integer> released = new HashSet<>();
        /** Partition -> the highest offset handed to the application. */
        final long[] lastSeen = {-1, -1, -1};
        final Map<Integer, Integer> deliveries = new HashMap<>();
    }

    /** action is what WEIR_CLUSTER_CMD does to the node leading every partition: stop (controlled shutdown) or kill (SIGKILL). */
    @ParameterizedTest(name = "{0} the leader")
    @ValueSource(strings = {"stop", "kill"})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void leaderChangeLosesNoAcknowledgement(String action) throws Exception {
        String cmd = System.getenv("WEIR_CLUSTER_CMD");
        if (cmd == null || cmd.isBlank()) {
            throw new AssertionError("WEIR_CLUSTER_CMD is not set: this test stops and kills nodes of a three-node"
                    + " weir cluster; it belongs to the cluster suite (test/compat/run --only cluster), not the java suite");
        }
        Compat.Phases ph = new Compat.Phases("share-cluster-" + action);
        try (Admin admin = Compat.admin(); KafkaConsumer<byte[], byte[]> meta = ClusterTest.metadataClient()) {
            assertEquals(ClusterTest.ALL, ClusterTest.brokers(admin), "brokers before the test");
            String group = Compat.name("share-cluster-" + action);
            setGroupConfigs(admin, group, Map.of(
                    "share.auto.offset.reset", "earliest",
                    "share.record.lock.duration.ms", "60000"));

            try (KafkaShareConsumer<byte[], byte[]> first = ShareGroupTest.consumer(group, "batch_optimized", true, MAX_POLL)) {
                // The group exists once a member joined; only then does it have a coordinator to avoid.
                String anchor = ClusterTest.createTopic(admin, meta, "share-cluster-anchor");
                first.subscribe(List.of(anchor));
                int coordinator = coordinator(admin, first, group);
                int controller = ClusterTest.controllerOfAll(admin);
                int leader = pickLeader(coordinator, controller);
                ph.mark("coordinator " + coordinator + ", controller " + controller + ", every partition led by " + leader);

                String topic = createTopic(admin, meta, leader);
                Map<Integer, Placed> placed = produce(topic);
                ph.mark(N + " records produced to " + topic);

                first.subscribe(List.of(topic));
                Before before = acceptHalf(first, placed);
                first.close(Duration.ofSeconds(30));
                ph.mark(before.accepted.size() + " accepted and " + before.released.size() + " released by the first consumer"
                        + ", last offsets handed out " + Arrays.toString(before.lastSeen));

                ClusterTest.cluster(action, Integer.toString(leader));
                boolean down = true;
                try {
                    Map<Integer, Integer> moved = awaitNewLeaders(meta, topic, leader, action);
                    ph.mark("leaders after the " + action + " of " + leader + ": " + moved);
                    consumeRest(group, topic, placed, before, ph);
                    ClusterTest.cluster("start", Integer.toString(leader));
                    down = false;
                } finally {
                    if (down) {
                        ClusterTest.cluster("start", Integer.toString(leader));
                    }
                    Compat.eventually(Duration.ofSeconds(30), () ->
                            assertEquals(ClusterTest.ALL, ClusterTest.brokers(admin), "brokers after node " + leader + " was started again"));
                }
            }
        }
    }

    static void setGroupConfigs(Admin admin, String group, Map<String, String> kv) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        kv.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
                .all().get(30, TimeUnit.SECONDS);
    }

    /** Polls c (subscribed to a topic with no records) until the group has a member, and returns its coordinator. */
    static int coordinator(Admin admin, KafkaShareConsumer<byte[], byte[]> c, String group) {
        int[] id = {-1};
        Compat.eventually(Duration.ofSeconds(30), () -> {
            ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
            if (!recs.isEmpty()) {
                throw new Compat.Fatal("the anchor topic has no records, yet " + recs.count() + " were delivered", null);
            }
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                    .get(10, TimeUnit.SECONDS);
            assertEquals(1, d.members().size(), "members of " + group);
            id[0] = d.coordinator() == null || d.coordinator().isEmpty() ? -1 : d.coordinator().id();
            assertTrue(ClusterTest.ALL.contains(id[0]), "coordinator " + id[0] + " of " + group);
        });
        return id[0];
    }

    /** The smallest node id that is neither the group coordinator nor the controller (of three, one is left). */
    static int pickLeader(int coordinator, int controller) {
        for (int n : new TreeSet<>(ClusterTest.ALL)) {
            if (n != coordinator && n != controller) {
                return n;
            }
        }
        throw new AssertionError("no node is neither the coordinator " + coordinator + " nor the controller " + controller);
    }

    /**
     * Creates a topic with PARTITIONS partitions, replicas [leader, a, b] for each (the other two
     * alternating so that the new leaders differ), min.insync.replicas 2, and waits until Metadata
     * shows leader leading all of them and each partition answers ListOffsets.
     */
    static String createTopic(Admin admin, KafkaConsumer<byte[], byte[]> meta, int leader) throws Exception {
        String topic = Compat.name("share-cluster");
        List<Integer> others = new ArrayList<>(new TreeSet<>(ClusterTest.ALL));
        others.remove(Integer.valueOf(leader));
        Map<Integer, List<Integer>> assignment = new TreeMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            int a = others.get(p % 2);
            int b = others.get((p + 1) % 2);
            assignment.put(p, List.of(leader, a, b));
        }
        admin.createTopics(List.of(new NewTopic(topic, assignment).configs(Map.of("min.insync.replicas", "2"))))
                .all().get(30, TimeUnit.SECONDS);
        Compat.eventually(Duration.ofSeconds(30), () -> {
            Map<Integer, Integer> l = ClusterTest.leaders(meta, topic);
            assertEquals(PARTITIONS, l.size(), "partitions of " + topic);
            l.forEach((p, n) -> assertEquals(leader, n, "leader of partition " + p + " (leaders " + l + ")"));
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            l.keySet().forEach(p -> latest.put(new TopicPartition(topic, p), OffsetSpec.latest()));
            admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        });
        return topic;
    }

    /** Produces record i of the data set to partition i % PARTITIONS with acks=all; returns where each landed. */
    static Map<Integer, Placed> produce(String topic) throws Exception {
        Map<Integer, Placed> placed = new HashMap<>();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        Properties props = Compat.producerProps("none");
        // Small batches: a batch_optimized share fetch hands out whole batches, and the
        // first consumer should stop near half the records, not a partition's worth past it.
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, 16 * 1024);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
            for (int i = 0; i < N; i++) {
                ProducerRecord<byte[], byte[]> r = Compat.record(topic, i);
                sent.add(p.send(new ProducerRecord<>(topic, i % PARTITIONS, null, r.key(), r.value(), r.headers())));
            }
            p.flush();
            for (int i = 0; i < N; i++) {
                RecordMetadata md = sent.get(i).get(30, TimeUnit.SECONDS);
                placed.put(i, new Placed(md.partition(), md.offset()));
            }
        }
        return placed;
    }

    /**
     * Accepts every record the first consumer gets until at least ACCEPT_BEFORE acceptances are
     * confirmed by commitSync, then releases every record of one more non-empty poll.
     */
    static Before acceptHalf(KafkaShareConsumer<byte[], byte[]> c, Map<Integer, Placed> placed) {
        Before before = new Before();
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        boolean releasing = false;
        while (true) {
            if (Instant.now().isAfter(deadline)) {
                throw new AssertionError("before the move: " + before.accepted.size() + " accepted and "
                        + before.released.size() + " released after 30s (want " + ACCEPT_BEFORE + " accepted, then one poll released)");
            }
            ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
            List<Integer> got = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : recs) {
                int i = checked(r, placed);
                if (before.accepted.contains(i)) {
                    throw new AssertionError("before the move: record " + i + " (" + placed.get(i)
                            + ") delivered again after its acceptance was confirmed (delivery " + ShareGroupTest.deliveryCount(r) + ")");
                }
                before.deliveries.merge(i, 1, Integer::sum);
                before.lastSeen[r.partition()] = Math.max(before.lastSeen[r.partition()], r.offset());
                c.acknowledge(r, releasing ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                got.add(i);
            }
            ShareGroupTest.commitAll(c);
            if (releasing) {
                before.released.addAll(got);
                if (!got.isEmpty()) {
                    return before;
                }
            } else {
                before.accepted.addAll(got);
                releasing = before.accepted.size() >= ACCEPT_BEFORE;
            }
        }
    }

    /** Checks r against the data set and where its record was produced; returns its index. */
    static int checked(ConsumerRecord<byte[], byte[]> r, Map<Integer, Placed> placed) {
        int i = Compat.check(r);
        Placed want = placed.get(i);
        if (want == null || want.partition() != r.partition() || want.offset() != r.offset()) {
            throw new AssertionError("record " + i + " delivered at " + r.partition() + "@" + r.offset() + ", produced at " + want);
        }
        return i;
    }

    /** Waits until every partition of topic has a live leader other than old that answers ListOffsets. */
    static Map<Integer, Integer> awaitNewLeaders(KafkaConsumer<byte[], byte[]> meta, String topic, int old, String action) {
        Set<Integer> live = new HashSet<>(ClusterTest.ALL);
        live.remove(old);
        Map<Integer, Integer> out = new TreeMap<>();
        // A killed node's leaderships move only once the controller fences it.
        Compat.eventually(Duration.ofSeconds(action.equals("kill") ? 45 : 30), () -> {
            Map<Integer, Integer> l = ClusterTest.leaders(meta, topic);
            assertEquals(PARTITIONS, l.size(), "partitions of " + topic);
            l.forEach((p, n) -> assertTrue(live.contains(n), "partition " + p + " led by " + n + ", not one of " + live
                    + " (leaders " + l + ")"));
            out.putAll(l);
        });
        // Answered by each new leader itself. A fresh Admin for every attempt: kafka-clients'
        // Admin keeps the partition leaders its last listOffsets found and, while that node is
        // down, holds the call until it times out (30 s) instead of looking the leaders up again,
        // so an attempt that met the old leader would hold every later one on the same Admin.
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        try {
            Compat.eventually(Duration.ofSeconds(30), () -> {
                try (Admin fresh = Compat.admin()) {
                    fresh.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new AssertionError("ListOffsets on " + topic + " (leaders " + ClusterTest.leaders(meta, topic) + "): " + e, e);
                }
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; as each node tells it: " + eachNode(topic, latest), e);
        }
        return out;
    }

    /**
     * For a failure's message: each bootstrap address's own Metadata answer for topic (the
     * leader of every partition) and whether an Admin that learnt the leaders from that address
     * alone gets ListOffsets answered within 5 s.
     */
    static String eachNode(String topic, Map<TopicPartition, OffsetSpec> latest) {
        List<String> out = new ArrayList<>();
        for (String addr : Compat.bootstrap().split(",")) {
            Properties p = Compat.consumerProps(null);
            p.put("bootstrap.servers", addr);
            p.put("request.timeout.ms", 5000);
            p.put("default.api.timeout.ms", 5000);
            String view;
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
                Map<Integer, Integer> l = new TreeMap<>();
                c.partitionsFor(topic, Duration.ofSeconds(5)).forEach(i ->
                        l.put(i.partition(), i.leader() == null || i.leader().isEmpty() ? -1 : i.leader().id()));
                view = "leaders " + l;
            } catch (Exception e) {
                view = "metadata: " + e;
            }
            Properties a = new Properties();
            a.put("bootstrap.servers", addr);
            a.put("default.api.timeout.ms", 5000);
            a.put("request.timeout.ms", 5000);
            try (Admin admin = Admin.create(a)) {
                admin.listOffsets(latest).all().get(6, TimeUnit.SECONDS);
                view += ", ListOffsets answered";
            } catch (Exception e) {
                view += ", ListOffsets: " + e;
            }
            out.add(addr + ": " + view);
        }
        return String.join("; ", out);
    }

    /**
     * A second consumer in the group accepts whatever it gets until every record was accepted
     * once over the whole test (or 45 s passed), then polls 3 s more for late redeliveries, and
     * checks what came back against what happened before the move.
     */
    static void consumeRest(String group, String topic, Map<Integer, Placed> placed, Before before, Compat.Phases ph) {
        Set<Integer> acceptedAfter = new HashSet<>();
        List<String> redeliveredAccepted = new ArrayList<>(); // accepted before the move, delivered after it
        List<String> twiceAfter = new ArrayList<>(); // delivered again after its acceptance after the move
        List<String> badCount = new ArrayList<>(); // delivery counts against deliveryCountRule
        List<String> ackFailures = new ArrayList<>();
        int deliveredAfter = 0;
        try (KafkaShareConsumer<byte[], byte[]> c = ShareGroupTest.consumer(group, "batch_optimized", true, MAX_POLL)) {
            c.subscribe(List.of(topic));
            Instant deadline = Instant.now().plus(Duration.ofSeconds(45));
            Instant drainUntil = null;
            while (drainUntil == null || Instant.now().isBefore(drainUntil)) {
                if (drainUntil == null && Instant.now().isAfter(deadline)) {
                    break;
                }
                Map<Integer, List<Integer>> byPartition = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    int i = checked(r, placed);
                    int d = ShareGroupTest.deliveryCount(r);
                    deliveredAfter++;
                    String what = "record " + i + " at " + placed.get(i) + " delivery " + d;
                    if (before.accepted.contains(i)) {
                        redeliveredAccepted.add(what);
                    } else if (acceptedAfter.contains(i)) {
                        twiceAfter.add(what);
                    } else {
                        String why = deliveryCountRule(before, i, placed.get(i), d);
                        if (why != null) {
                            badCount.add(what + ": " + why);
                        }
                    }
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(i);
                }
                Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofSeconds(30));
                res.forEach((tp, err) -> {
                    List<Integer> is = byPartition.getOrDefault(tp.partition(), List.of());
                    if (err.isPresent()) {
                        ackFailures.add("partition " + tp.partition() + " (" + is.size() + " records): " + err.get());
                    } else {
                        acceptedAfter.addAll(is);
                    }
                });
                if (drainUntil == null && allAccepted(before, acceptedAfter)) {
                    ph.mark("every record accepted; polling 3s more for late redeliveries");
                    drainUntil = Instant.now().plus(Duration.ofSeconds(3));
                }
            }
        }
        ph.mark(deliveredAfter + " deliveries after the move, " + acceptedAfter.size() + " acceptances confirmed");

        List<String> problems = new ArrayList<>();
        if (!redeliveredAccepted.isEmpty()) {
            problems.add(redeliveredAccepted.size() + " records accepted before the move were delivered again after it"
                    + " (acknowledgements lost by the new leaders): " + perPartition(redeliveredAccepted, placed) + "; first: "
                    + head(redeliveredAccepted));
        }
        if (!twiceAfter.isEmpty()) {
            problems.add(twiceAfter.size() + " records delivered again after being accepted after the move: " + head(twiceAfter));
        }
        Set<Integer> missing = new TreeSet<>();
        for (int i = 0; i < N; i++) {
            if (!before.accepted.contains(i) && !acceptedAfter.contains(i)) {
                missing.add(i);
            }
        }
        if (!missing.isEmpty()) {
            List<String> where = missing.stream().limit(10).map(i -> "record " + i + " at " + placed.get(i)).toList();
            problems.add(missing.size() + " records never accepted within 45s after the move: " + where);
        }
        if (!badCount.isEmpty()) {
            problems.add(badCount.size() + " delivery counts after the move that do not follow from before it: " + head(badCount));
        }
        if (!ackFailures.isEmpty()) {
            problems.add("acknowledgements after the move failed: " + head(ackFailures));
        }
        if (!problems.isEmpty()) {
            throw new AssertionError("share group " + group + " on " + topic + " after the leaders moved ("
                    + before.accepted.size() + " accepted and " + before.released.size() + " released before):\n  "
                    + String.join("\n  ", problems));
        }
    }

    /**
     * Why delivery count d of record i (not accepted before the move) is wrong, or null. A record
     * released before the move keeps the delivery it had: its count is 2, or 3 if the first
     * consumer's fetch buffer acquired it again before that consumer closed. A record the
     * application never saw has count 1, except past the last offset handed out on its partition,
     * where the first consumer may have held it in its buffer and released it on close (count 2).
     */
    static String deliveryCountRule(Before before, int i, Placed at, int d) {
        if (before.released.contains(i)) {
            return d >= 2 && d <= 3 ? null : "released once before the move, so its count must be 2 (3 if fetched again before the close)";
        }
        if (before.deliveries.containsKey(i)) {
            return "handed to the application before the move but neither accepted nor released (test bug)";
        }
        if (at.offset() > before.lastSeen[at.partition()]) {
            return d == 1 || d == 2 ? null : "never handed out before the move, so its count must be 1 (2 if the first consumer's buffer held it)";
        }
        return d == 1 ? null : "never handed out before the move, at or below its partition's last offset handed out ("
                + before.lastSeen[at.partition()] + "), so its count must be 1";
    }

    static boolean allAccepted(Before before, Set<Integer> after) {
        for (int i = 0; i < N; i++) {
            if (!before.accepted.contains(i) && !after.contains(i)) {
                return false;
            }
        }
        return true;
    }

    /** "partition p: n" counts of the given "record i at p@o ..." lines. */
    static Map<Integer, Integer> perPartition(List<String> lines, Map<Integer, Placed> placed) {
        Map<Integer, Integer> out = new TreeMap<>();
        for (String l : lines) {
            int i = Integer.parseInt(l.split(" ")[1]);
            out.merge(placed.get(i).partition(), 1, Integer::sum);
        }
        return out;
    }

    static String head(List<String> lines) {
        return lines.size() <= 10 ? lines.toString() : lines.subList(0, 10) + " and " + (lines.size() - 10) + " more";
    }
}
