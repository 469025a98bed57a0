package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;
import org.junit.jupiter.api.Test;

/**
 * A producer (acks=all, idempotent) and a group consumer across a controlled shutdown of a node
 * that leads partitions and across a SIGKILL of the node running the active controller, against a
 * three-node cluster. The test stops, kills and starts nodes through WEIR_CLUSTER_CMD, a shell
 * command to which it appends "stop N", "kill N" or "start N" (test/compat/run's cluster suite
 * sets it). It checks that clients keep going (no send fails, records flow on every partition)
 * and that metadata converges, not that every acknowledged record survives a change of leader:
 * that is for the replication tests.
 */
class ClusterTest {
    static final int PARTITIONS = 6;
    static final short RF = 3;
    static final int MAX_RECORDS = 200_000;
    /** The suite's cluster: three brokers, ids 1 to 3. */
    static final Set<Integer> ALL = Set.of(1, 2, 3);

    /** Runs WEIR_CLUSTER_CMD with the given arguments; fails if it does not exit 0 within 90 s. */
    static void cluster(String... args) throws Exception {
        String cmd = System.getenv("WEIR_CLUSTER_CMD");
        if (cmd == null || cmd.isBlank()) {
            throw new AssertionError("WEIR_CLUSTER_CMD is not set: this test stops and starts nodes of a"
                    + " cluster; run it through test/compat/run --only cluster");
        }
        String line = cmd + " " + String.join(" ", args);
        Process p = new ProcessBuilder("sh", "-c", line).redirectErrorStream(true).start();
        p.getOutputStream().close();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(line + ": still running after 90s");
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (p.exitValue() != 0) {
            throw new AssertionError(line + ": exit " + p.exitValue() + ": " + out);
        }
        System.out.printf("cluster %s: %s%n", String.join(" ", args), out);
    }

    /**
     * Produces record i of the data set to partition i % PARTITIONS on one thread and consumes
     * the topic in a group on another, tracking per partition the highest index acknowledged and
     * consumed.
     */
    static final class Load implements AutoCloseable {
        final String topic;
        final long[] ackedMax = new long[PARTITIONS];
        final long[] consumedMax = new long[PARTITIONS];
        final List<String> failures = new ArrayList<>();
        final AtomicReference<Throwable> threadFailure = new AtomicReference<>();
        long produced; // index of the next record to produce
        long acked;
        long consumed;
        volatile boolean stop;
        final Thread producer;
        final Thread consumer;

        Load(String topic, String group) {
            this.topic = topic;
            Arrays.fill(ackedMax, -1);
            Arrays.fill(consumedMax, -1);
            producer = new Thread(this::produce, "cluster-producer");
            consumer = new Thread(() -> consume(group), "cluster-consumer");
            producer.start();
            consumer.start();
        }

        private void produce() {
            var props = Compat.producerProps("none");
            props.put("linger.ms", 0);
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
                for (int i = 0; i < MAX_RECORDS && !stop; i++) {
                    final int idx = i;
                    final int part = i % PARTITIONS;
                    ProducerRecord<byte[], byte[]> r = Compat.record(topic, i);
                    synchronized (this) {
                        produced = i + 1;
                    }
                    p.send(new ProducerRecord<>(topic, part, null, r.key(), r.value(), r.headers()), (md, err) -> {
                        synchronized (this) {
                            if (err != null) {
                                if (failures.size() < 10) {
                                    failures.add("record " + idx + " to partition " + part + ": " + err);
                                }
                                return;
                            }
                            acked++;
                            ackedMax[part] = Math.max(ackedMax[part], idx);
                        }
                    });
                    Thread.sleep(2);
                }
                p.flush();
            } catch (Throwable t) {
                threadFailure.compareAndSet(null, t);
            }
        }

        private void consume(String group) {
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(group))) {
                c.subscribe(List.of(topic));
                while (!stop) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        int i = Compat.check(r);
                        if (i % PARTITIONS != r.partition()) {
                            throw new AssertionError("record " + i + " consumed from partition " + r.partition());
                        }
                        synchronized (this) {
                            consumed++;
                            consumedMax[r.partition()] = Math.max(consumedMax[r.partition()], i);
                        }
                    }
                }
            } catch (Throwable t) {
                threadFailure.compareAndSet(null, t);
            }
        }

        /** The index of the next record: every record from it on is produced after the call. */
        synchronized long mark() {
            return produced;
        }

        /** Passes once every partition has a record at or after mark acknowledged and consumed. */
        void flowingSince(long mark) {
            Throwable t = threadFailure.get();
            if (t != null) {
                throw new Compat.Fatal("a client thread failed: " + t, t);
            }
            synchronized (this) {
                List<Integer> notAcked = new ArrayList<>();
                List<Integer> notConsumed = new ArrayList<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    if (ackedMax[p] < mark) {
                        notAcked.add(p);
                    }
                    if (consumedMax[p] < mark) {
                        notConsumed.add(p);
                    }
                }
                if (!notAcked.isEmpty() || !notConsumed.isEmpty()) {
                    throw new AssertionError("since record " + mark + " (next " + produced + "): partitions "
                            + notAcked + " have no acknowledged record, " + notConsumed + " no consumed one ("
                            + acked + " acked, " + consumed + " consumed in all; first failures " + failures + ")");
                }
            }
        }

        /** Stops both threads, waits for every send's outcome and returns the failures. */
        List<String> stopAndCheck() throws InterruptedException {
            stop = true;
            producer.join(60_000);
            consumer.join(60_000);
            assertFalse(producer.isAlive() || consumer.isAlive(), "client threads did not stop");
            Throwable t = threadFailure.get();
            if (t != null) {
                throw new AssertionError("a client thread failed: " + t, t);
            }
            synchronized (this) {
                System.out.printf("%s: %d produced, %d acknowledged, %d consumed%n", topic, produced, acked, consumed);
                return List.copyOf(failures);
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            producer.join(60_000);
            consumer.join(60_000);
        }
    }

    /**
     * Partition -> what the brokers' Metadata answers say of it. The leaders come from Metadata
     * (a consumer's listTopics sends a fresh request each call), not from Admin.describeTopics:
     * that uses DescribeTopicPartitions, checked against Metadata on its own below.
     */
    static Map<Integer, PartitionInfo> metadata(KafkaConsumer<byte[], byte[]> meta, String topic) {
        List<PartitionInfo> ps = meta.listTopics(Duration.ofSeconds(5)).get(topic);
        if (ps == null) {
            throw new AssertionError("Metadata does not list " + topic);
        }
        Map<Integer, PartitionInfo> out = new TreeMap<>();
        ps.forEach(p -> out.put(p.partition(), p));
        return out;
    }

    /** Partition -> leader id from Metadata (-1 without a leader). */
    static Map<Integer, Integer> leaders(KafkaConsumer<byte[], byte[]> meta, String topic) {
        Map<Integer, Integer> out = new TreeMap<>();
        metadata(meta, topic).forEach((p, info) ->
                out.put(p, info.leader() == null || info.leader().isEmpty() ? -1 : info.leader().id()));
        return out;
    }

    /** A consumer outside any group, used only for Metadata requests. */
    static KafkaConsumer<byte[], byte[]> metadataClient() {
        return new KafkaConsumer<>(Compat.consumerProps(null));
    }

    /** Creates a topic with RF 3 and waits until Metadata shows a leader and three replicas per partition. */
    static String createTopic(Admin admin, KafkaConsumer<byte[], byte[]> meta, String prefix) throws Exception {
        String topic = Compat.name(prefix);
        admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, RF))).all().get(30, TimeUnit.SECONDS);
        Compat.eventually(Duration.ofSeconds(30), () -> {
            Map<Integer, PartitionInfo> md = metadata(meta, topic);
            assertEquals(PARTITIONS, md.size(), "partitions of " + topic);
            md.forEach((p, info) -> {
                assertEquals(RF, info.replicas().length, "replicas of partition " + p);
                assertTrue(info.leader() != null && !info.leader().isEmpty(), "partition " + p + " has a leader");
            });
            // Answered by each partition's leader itself: success means they serve it.
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            md.keySet().forEach(p -> latest.put(new TopicPartition(topic, p), OffsetSpec.latest()));
            admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        });
        return topic;
    }

    static TopicDescription describe(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs(5000))
                .allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
    }

    static int controller(Admin admin) throws Exception {
        Node c = admin.describeCluster(new DescribeClusterOptions().timeoutMs(5000)).controller()
                .get(10, TimeUnit.SECONDS);
        return c == null || c.isEmpty() ? -1 : c.id();
    }

    /** The active controller, after checking that every broker is registered. */
    static int controllerOfAll(Admin admin) throws Exception {
        assertEquals(ALL, brokers(admin), "brokers");
        int ctrl = controller(admin);
        assertTrue(ALL.contains(ctrl), "controller " + ctrl + " is one of the brokers");
        return ctrl;
    }

    static Set<Integer> brokers(Admin admin) throws Exception {
        return admin.describeCluster(new DescribeClusterOptions().timeoutMs(5000)).nodes().get(10, TimeUnit.SECONDS)
                .stream().map(Node::id).collect(Collectors.toSet());
    }

    /** Every partition has a leader, one of live. */
    static void ledOnlyBy(KafkaConsumer<byte[], byte[]> meta, String topic, Set<Integer> live) {
        Map<Integer, Integer> l = leaders(meta, topic);
        assertEquals(PARTITIONS, l.size(), "partitions of " + topic);
        l.forEach((p, n) -> assertTrue(live.contains(n), "partition " + p + " led by " + n + ", not one of " + live
                + " (leaders " + l + ")"));
    }

    /**
     * Admin.describeTopics (DescribeTopicPartitions since Kafka 3.9) must tell what Metadata tells:
     * the same leader, replicas and ISR for every partition, whichever broker answers.
     */
    @Test
    void describeTopicsAgreesWithMetadata() throws Exception {
        try (Admin admin = Compat.admin(); KafkaConsumer<byte[], byte[]> meta = metadataClient()) {
            String topic = createTopic(admin, meta, "cluster-describe");
            Map<Integer, PartitionInfo> md = metadata(meta, topic);
            List<String> diffs = new ArrayList<>();
            for (TopicPartitionInfo p : describe(admin, topic).partitions()) {
                PartitionInfo m = md.get(p.partition());
                String got = "leader " + id(p.leader()) + " replicas " + ids(p.replicas()) + " isr " + ids(p.isr());
                String want = "leader " + id(m.leader()) + " replicas " + ids(Arrays.asList(m.replicas()))
                        + " isr " + ids(Arrays.asList(m.inSyncReplicas()));
                if (!got.equals(want)) {
                    diffs.add("partition " + p.partition() + ": describeTopics " + got + ", Metadata " + want);
                }
            }
            assertEquals(List.of(), diffs, "describeTopics against Metadata for " + topic);
        }
    }

    private static int id(Node n) {
        return n == null || n.isEmpty() ? -1 : n.id();
    }

    private static List<Integer> ids(List<Node> nodes) {
        return nodes.stream().map(ClusterTest::id).sorted().toList();
    }

    /**
     * Stops a node that leads partitions (not the controller's, unless only it leads) with a
     * controlled shutdown: its leaderships move to the other replicas, records produced afterwards
     * are acknowledged and consumed on every partition; started again, it is back in the cluster.
     */
    @Test
    void controlledShutdownKeepsClientsGoing() throws Exception {
        try (Admin admin = Compat.admin(); KafkaConsumer<byte[], byte[]> meta = metadataClient()) {
            String topic = createTopic(admin, meta, "cluster-stop");
            int ctrl = controllerOfAll(admin);
            Map<Integer, Integer> before = leaders(meta, topic);
            int victim = -1;
            for (int n : new TreeSet<>(before.values())) {
                if (victim == -1 || victim == ctrl) {
                    victim = n;
                }
            }
            System.out.printf("controller %d, leaders %s, stopping %d%n", ctrl, before, victim);
            Set<Integer> live = new HashSet<>(ALL);
            live.remove(victim);
            outage(meta, admin, topic, "stop", victim,
                    downAt -> Compat.eventually(Duration.ofSeconds(10), () -> ledOnlyBy(meta, topic, live)));
        }
    }

    /**
     * SIGKILLs the node running the active controller: another node becomes controller and
     * accepts a CreateTopics, the dead node's leaderships move to live replicas, produce and
     * consume carry on; started again, the node is back in the cluster.
     */
    @Test
    void controllerKillFailsOver() throws Exception {
        try (Admin admin = Compat.admin(); KafkaConsumer<byte[], byte[]> meta = metadataClient()) {
            String topic = createTopic(admin, meta, "cluster-kill");
            int ctrl = controllerOfAll(admin);
            System.out.printf("controller %d, leaders %s%n", ctrl, leaders(meta, topic));
            Set<Integer> live = new HashSet<>(ALL);
            live.remove(ctrl);
            outage(meta, admin, topic, "kill", ctrl, killed -> {
                Compat.eventually(Duration.ofSeconds(20), () -> {
                    int c = controller(admin);
                    assertNotEquals(ctrl, c, "controller");
                    assertTrue(live.contains(c), "controller " + c + " is live");
                });
                System.out.printf("new controller %d after %d ms%n", controller(admin), ms(killed));
                String second = Compat.name("cluster-after-kill");
                Compat.eventually(Duration.ofSeconds(20), () -> {
                    try {
                        // RF 2: once the dead broker is fenced only two are available.
                        admin.createTopics(List.of(new NewTopic(second, 3, (short) 2))).all().get(10, TimeUnit.SECONDS);
                    } catch (ExecutionException e) {
                        // A try cut short by the change of controller may have committed.
                        if (!(e.getCause() instanceof TopicExistsException)) {
                            throw e;
                        }
                    }
                });
                System.out.printf("CreateTopics accepted after %d ms%n", ms(killed));
                Compat.eventually(Duration.ofSeconds(25), () -> {
                    ledOnlyBy(meta, topic, live);
                    assertEquals(live, brokers(admin), "brokers once the killed one is fenced");
                });
                System.out.printf("leaderships moved after %d ms%n", ms(killed));
            });
        }
    }

    /** What a test checks while a node is down, given the System.nanoTime of the stop or kill. */
    interface WhileDown {
        void run(long downAt) throws Exception;
    }

    /**
     * Runs a producer and a group consumer on topic; once records flow on every partition, stops
     * or kills node (action), runs whileDown, checks that records produced afterwards are
     * acknowledged and consumed on every partition, starts the node again and checks that it is
     * back in Metadata and DescribeCluster and that records still flow. No send may fail. The
     * node is started again even if a check fails.
     */
    static void outage(KafkaConsumer<byte[], byte[]> meta, Admin admin, String topic, String action, int node, WhileDown whileDown) throws Exception {
        try (Load load = new Load(topic, Compat.name(topic + "-group"))) {
            Compat.eventually(Duration.ofSeconds(30), () -> load.flowingSince(0));
            long downAt = System.nanoTime();
            cluster(action, Integer.toString(node));
            boolean down = true;
            try {
                whileDown.run(downAt);
                long mark = load.mark();
                Compat.eventually(Duration.ofSeconds(30), () -> load.flowingSince(mark));

                cluster("start", Integer.toString(node));
                down = false;
                Compat.eventually(Duration.ofSeconds(30), () -> {
                    assertEquals(ALL, brokers(admin), "brokers after the restart");
                    ledOnlyBy(meta, topic, ALL);
                });
                long mark2 = load.mark();
                Compat.eventually(Duration.ofSeconds(30), () -> load.flowingSince(mark2));
            } finally {
                if (down) {
                    cluster("start", Integer.toString(node));
                }
            }
            List<String> failures = load.stopAndCheck();
            assertEquals(List.of(), failures, "sends that failed across the " + action + " of node " + node);
        }
    }

    private static long ms(long since) {
        return (System.nanoTime() - since) / 1_000_000;
    }
}
