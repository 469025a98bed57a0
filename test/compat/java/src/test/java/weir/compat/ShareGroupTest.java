package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Share groups (KIP-932) with the Java KafkaShareConsumer, in both acquire modes (KIP-1206):
 * two consumers share every record, a RELEASEd record comes back, a REJECTed one never does, an
 * unacknowledged one returns when its acquisition lock expires, a record delivered five times is
 * archived, and a broker restart in the middle loses no acknowledgement.
 *
 * <p>Lock durations use Kafka's smallest group setting, 15 s (group.share.min.record.lock.duration.ms).
 * The restart test runs WEIR_RESTART_CMD with "kill" appended (test/compat/run's restart command);
 * without it, it finds the runner's state directory by the broker's port.
 */
class ShareGroupTest {
    static final Duration POLL = Duration.ofMillis(200);
    static Admin admin;

    @BeforeAll
    static void setUp() {
        admin = Compat.admin();
    }

    @AfterAll
    static void tearDown() {
        admin.close();
    }

    static void setGroupConfigs(String group, Map<String, String> kv) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        kv.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
                .all().get(30, TimeUnit.SECONDS);
    }

    static String shareGroup(String prefix, Map<String, String> extra) throws Exception {
        String group = Compat.name(prefix);
        Map<String, String> kv = new HashMap<>(extra);
        kv.put("share.auto.offset.reset", "earliest");
        setGroupConfigs(group, kv);
        return group;
    }

    static KafkaShareConsumer<byte[], byte[]> consumer(String group, String mode, boolean explicit, int maxPoll) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Compat.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, mode);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, explicit ? "explicit" : "implicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
        return new KafkaShareConsumer<>(p);
    }

    static void produce(String topic, int from, int n) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Compat.producerProps("none"))) {
            for (int i = from; i < from + n; i++) {
                producer.send(Compat.record(topic, i));
            }
            producer.flush();
        }
    }

    static int deliveryCount(ConsumerRecord<byte[], byte[]> r) {
        return r.deliveryCount().map(Short::intValue).orElseThrow(() -> new AssertionError("no delivery count"));
    }

    /** Commits explicit acknowledgements and requires every partition's to succeed. */
    static void commitAll(KafkaShareConsumer<byte[], byte[]> c) {
        Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofSeconds(30));
        res.forEach((tp, err) -> err.ifPresent(e -> {
            throw new AssertionError("acknowledgement of " + tp + " failed", e);
        }));
    }

    static SharePartitionOffsetInfo shareOffset(String group, String topic, int partition) throws Exception {
        TopicPartition tp = new TopicPartition(topic, partition);
        Map<TopicPartition, SharePartitionOffsetInfo> m = admin.listShareGroupOffsets(
                        Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp))))
                .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
        SharePartitionOffsetInfo info = m.get(tp);
        if (info == null) {
            throw new AssertionError("no share offset for " + tp + ": " + m);
        }
        return info;
    }

    /** Polls for about d and fails if any record arrives. */
    static void pollNothing(KafkaShareConsumer<byte[], byte[]> c, Duration d, String why) {
        Instant end = Instant.now().plus(d);
        while (Instant.now().isBefore(end)) {
            ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
            if (!recs.isEmpty()) {
                ConsumerRecord<byte[], byte[]> r = recs.iterator().next();
                throw new AssertionError(why + ": got record " + Compat.check(r) + " at offset " + r.offset()
                        + " (delivery " + deliveryCount(r) + ")");
            }
        }
    }

    @ParameterizedTest(name = "acquire={0}")
    @ValueSource(strings = {"batch_optimized", "record_limit"})
    void twoConsumersShareEveryRecord(String mode) throws Exception {
        Compat.Phases ph = new Compat.Phases("share-two-" + mode);
        String topic = Compat.createTopic(admin, "share-two", 3, Map.of());
        String group = shareGroup("share-two", Map.of());
        final int n = 3000;
        Map<Integer, String> owner = new ConcurrentHashMap<>();
        AtomicReference<String> duplicate = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        List<KafkaShareConsumer<byte[], byte[]>> consumers = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            KafkaShareConsumer<byte[], byte[]> c = consumer(group, mode, false, 100);
            consumers.add(c);
            Thread t = new Thread(() -> {
                try {
                    c.subscribe(List.of(topic));
                    while (!Thread.currentThread().isInterrupted() && owner.size() < n) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                            String prev = owner.putIfAbsent(Compat.check(r), name);
                            if (prev != null) {
                                duplicate.compareAndSet(null, "record at " + r.partition() + "@" + r.offset()
                                        + " delivered to " + name + " after " + prev);
                            }
                        }
                    }
                    c.commitSync(Duration.ofSeconds(30));
                } catch (Throwable t2) {
                    failure.compareAndSet(null, t2);
                }
            }, "share-" + name);
            threads.add(t);
            t.start();
        }
        try {
            // Produce once both members are in the group, and spread the records over a few
            // seconds, so that both get some.
            Compat.eventually(Duration.ofSeconds(60), () -> assertEquals(2,
                    admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                            .get(10, TimeUnit.SECONDS).members().size(), "members of " + group));
            ph.mark("both members joined");
            for (int i = 0; i < n; i += 300) {
                produce(topic, i, 300);
                Thread.sleep(200);
            }
            ph.mark("produced");
            Compat.eventually(Duration.ofSeconds(90), () -> {
                if (failure.get() != null) {
                    throw new Compat.Fatal("consumer failed", failure.get());
                }
                assertEquals(n, owner.size(), "records delivered");
            });
            ph.mark("all delivered");
            for (Thread t : threads) {
                t.join(60000);
            }
        } finally {
            threads.forEach(Thread::interrupt);
            for (Thread t : threads) {
                t.join(60000);
            }
            consumers.forEach(c -> c.close(Duration.ofSeconds(30)));
        }
        if (failure.get() != null) {
            throw new AssertionError("consumer failed", failure.get());
        }
        assertEquals(null, duplicate.get());
        long a = owner.values().stream().filter("a"::equals).count();
        assertTrue(a > 0 && a < n, "both consumers must receive records: a got " + a + " of " + n);
    }

    @ParameterizedTest(name = "acquire={0}")
    @ValueSource(strings = {"batch_optimized", "record_limit"})
    void releasedComesBackRejectedNever(String mode) throws Exception {
        String topic = Compat.createTopic(admin, "share-ack", 1, Map.of());
        String group = shareGroup("share-ack", Map.of());
        produce(topic, 0, 10);
        try (KafkaShareConsumer<byte[], byte[]> c = consumer(group, mode, true, 10)) {
            c.subscribe(List.of(topic));
            Set<Long> seen = new HashSet<>();
            Compat.eventually(Duration.ofSeconds(60), () -> {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    Compat.check(r);
                    if (deliveryCount(r) != 1 || !seen.add(r.offset())) {
                        throw new Compat.Fatal("offset " + r.offset() + " delivered again (delivery " + deliveryCount(r) + ")", null);
                    }
                    AcknowledgeType t = r.offset() == 3 ? AcknowledgeType.RELEASE
                            : r.offset() == 5 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
                    c.acknowledge(r, t);
                }
                commitAll(c);
                assertEquals(10, seen.size(), "records delivered once");
            });
            Compat.eventually(Duration.ofSeconds(60), () -> {
                ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
                boolean back = false;
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    if (r.offset() != 3 || deliveryCount(r) != 2) {
                        throw new Compat.Fatal("offset " + r.offset() + " delivered again with delivery count "
                                + deliveryCount(r) + " (only the released 3 may be, with 2)", null);
                    }
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    back = true;
                }
                commitAll(c);
                assertTrue(back, "released record 3 not delivered again yet");
            });
            pollNothing(c, Duration.ofSeconds(2), "everything is accepted or rejected");
            acceptSentinel(c, topic, 10);
        }
        SharePartitionOffsetInfo info = shareOffset(group, topic, 0);
        assertTrue(info.startOffset() >= 10, "the start offset passes the accepted and the rejected records: " + info.startOffset());
    }

    /**
     * Produces record i and accepts it. Kafka persists a share partition's start offset with the
     * state write after the one that moved it, so the start offset ListShareGroupOffsets reports
     * catches up only with this later acknowledgement.
     */
    static void acceptSentinel(KafkaShareConsumer<byte[], byte[]> c, String topic, int i) throws Exception {
        produce(topic, i, 1);
        Compat.eventually(Duration.ofSeconds(60), () -> {
            ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
            for (ConsumerRecord<byte[], byte[]> r : recs) {
                if (Compat.check(r) != i) {
                    throw new Compat.Fatal("record " + Compat.check(r) + " delivered again", null);
                }
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            commitAll(c);
            assertEquals(1, recs.count(), "sentinel record " + i);
        });
    }

    @ParameterizedTest(name = "acquire={0}")
    @ValueSource(strings = {"batch_optimized", "record_limit"})
    void unacknowledgedReturnsAfterLockExpiry(String mode) throws Exception {
        String topic = Compat.createTopic(admin, "share-lock", 1, Map.of());
        String group = shareGroup("share-lock", Map.of("share.record.lock.duration.ms", "15000"));
        produce(topic, 0, 5);
        try (KafkaShareConsumer<byte[], byte[]> holder = consumer(group, mode, true, 10);
                KafkaShareConsumer<byte[], byte[]> other = consumer(group, mode, true, 10)) {
            holder.subscribe(List.of(topic));
            // One poll that returns the records (one batch); in explicit mode the holder
            // may not poll again before acknowledging them, and it never will.
            AtomicReference<ConsumerRecords<byte[], byte[]>> first = new AtomicReference<>();
            Compat.eventually(Duration.ofSeconds(60), () -> {
                ConsumerRecords<byte[], byte[]> recs = holder.poll(POLL);
                if (!recs.isEmpty()) {
                    first.set(recs);
                }
                assertTrue(first.get() != null, "the first consumer received nothing yet");
            });
            assertEquals(5, first.get().count(), "records held by the first consumer");
            Instant heldAt = Instant.now();
            // The holder neither acknowledges nor polls again; its locks run out.
            other.subscribe(List.of(topic));
            Set<Long> back = new HashSet<>();
            Compat.eventually(Duration.ofSeconds(60), () -> {
                for (ConsumerRecord<byte[], byte[]> r : other.poll(POLL)) {
                    Compat.check(r);
                    if (deliveryCount(r) != 2 || !back.add(r.offset())) {
                        throw new Compat.Fatal("offset " + r.offset() + " came back with delivery count " + deliveryCount(r), null);
                    }
                    other.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                commitAll(other);
                assertEquals(5, back.size(), "records redelivered after the lock expired");
            });
            long waited = Duration.between(heldAt, Instant.now()).toMillis();
            assertTrue(waited >= 10000, "records came back after " + waited + "ms, before the 15s lock expired");
        }
    }

    @ParameterizedTest(name = "acquire={0}")
    @ValueSource(strings = {"batch_optimized", "record_limit"})
    void deliveredFiveTimesIsArchived(String mode) throws Exception {
        String topic = Compat.createTopic(admin, "share-poison", 1, Map.of());
        String group = shareGroup("share-poison", Map.of());
        produce(topic, 0, 1);
        try (KafkaShareConsumer<byte[], byte[]> c = consumer(group, mode, true, 10)) {
            c.subscribe(List.of(topic));
            for (int attempt = 1; attempt <= 5; attempt++) {
                final int want = attempt;
                Compat.eventually(Duration.ofSeconds(60), () -> {
                    ConsumerRecords<byte[], byte[]> recs = c.poll(POLL);
                    assertEquals(1, recs.count(), "delivery " + want);
                    ConsumerRecord<byte[], byte[]> r = recs.iterator().next();
                    assertEquals(0, Compat.check(r));
                    if (deliveryCount(r) != want) {
                        throw new Compat.Fatal("delivery " + want + " has delivery count " + deliveryCount(r), null);
                    }
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                    commitAll(c);
                });
            }
            pollNothing(c, Duration.ofSeconds(3), "a record released after its fifth delivery is archived");
            acceptSentinel(c, topic, 1);
        }
        SharePartitionOffsetInfo info = shareOffset(group, topic, 0);
        assertTrue(info.startOffset() >= 1, "the archived record is behind the start offset: " + info.startOffset());
    }

    /**
     * Half the records are produced, a third of them acknowledged, the broker is killed and started
     * again, then the other half is produced. No record whose acknowledgement was confirmed before
     * the restart may be delivered again; every record is eventually acknowledged. (A record
     * acknowledged after the restart may still arrive once more from a fetch answered before its
     * acknowledgement, so the rule is about acknowledgements the restart could have lost.)
     */
    @ParameterizedTest(name = "acquire={0}")
    @ValueSource(strings = {"batch_optimized", "record_limit"})
    void brokerRestartLosesNoAcknowledgement(String mode) throws Exception {
        String restart = restartCommand();
        String topic = Compat.createTopic(admin, "share-restart", 3, Map.of());
        String group = shareGroup("share-restart", Map.of());
        final int n = 3000;
        produce(topic, 0, n / 2);
        Compat.Phases ph = new Compat.Phases("share-restart-" + mode);
        Set<Integer> confirmed = new HashSet<>();
        Set<Integer> beforeRestart = null;
        Map<Integer, Integer> deliveries = new HashMap<>();
        try (KafkaShareConsumer<byte[], byte[]> c = consumer(group, mode, true, 100)) {
            c.subscribe(List.of(topic));
            Instant deadline = Instant.now().plus(Duration.ofMinutes(3));
            while (confirmed.size() < n) {
                if (Instant.now().isAfter(deadline)) {
                    throw new AssertionError(confirmed.size() + " of " + n + " records acknowledged after 3 minutes");
                }
                Map<Integer, List<Integer>> byPartition = new HashMap<>();
                try {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                        int i = Compat.check(r);
                        if (beforeRestart != null && beforeRestart.contains(i)) {
                            throw new AssertionError("record " + i + " (" + r.partition() + "@" + r.offset()
                                    + ") delivered again after the restart although its acknowledgement was confirmed"
                                    + " before it (delivery " + deliveryCount(r) + ")");
                        }
                        deliveries.merge(i, 1, Integer::sum);
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(i);
                    }
                    Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofSeconds(30));
                    res.forEach((tp, err) -> {
                        if (err.isEmpty() && byPartition.containsKey(tp.partition())) {
                            confirmed.addAll(byPartition.get(tp.partition()));
                        }
                    });
                } catch (KafkaException e) {
                    // The broker is restarting: these acknowledgements are not confirmed.
                }
                if (beforeRestart == null && confirmed.size() >= n / 6) {
                    beforeRestart = new HashSet<>(confirmed);
                    ph.mark(confirmed.size() + " acknowledged, restarting the broker");
                    run(restart + " kill");
                    ph.mark("broker back");
                    produce(topic, n / 2, n - n / 2);
                    ph.mark("second half produced");
                }
            }
        }
        assertTrue(beforeRestart != null, "the broker was never restarted");
        long again = deliveries.values().stream().filter(k -> k > 1).count();
        ph.mark(n + " acknowledged; " + again + " records delivered more than once, none confirmed before the restart");
    }

    /** WEIR_RESTART_CMD, or test/compat/run's restart command for the runner state that serves our broker. */
    static String restartCommand() throws Exception {
        String cmd = System.getenv("WEIR_RESTART_CMD");
        if (cmd != null && !cmd.isBlank()) {
            return cmd.trim();
        }
        String port = Compat.bootstrap().substring(Compat.bootstrap().lastIndexOf(':') + 1);
        Path run = Paths.get(System.getProperty("user.dir")).resolve("../run").normalize();
        Path tmp = Paths.get(Optional.ofNullable(System.getenv("TMPDIR")).orElse("/tmp"));
        try (Stream<Path> dirs = Files.list(tmp)) {
            for (Path d : (Iterable<Path>) dirs.filter(p -> p.getFileName().toString().startsWith("weir-compat."))::iterator) {
                Path portFile = d.resolve("port");
                if (Files.isRegularFile(portFile) && Files.readString(portFile, StandardCharsets.UTF_8).trim().equals(port)
                        && Files.isExecutable(run)) {
                    return run + " restart --state " + d;
                }
            }
        }
        throw new AssertionError("WEIR_RESTART_CMD is not set and no test/compat/run state serves port " + port
                + ": the restart test needs a way to restart the broker (see test/compat/README.md)");
    }

    static void run(String cmd) throws Exception {
        Process p = new ProcessBuilder("sh", "-c", cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File("target/share-restart.log"))).start();
        if (!p.waitFor(3, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError("restart command did not finish in 3 minutes: " + cmd);
        }
        assertEquals(0, p.exitValue(), "restart command failed (see target/share-restart.log): " + cmd);
    }
}
