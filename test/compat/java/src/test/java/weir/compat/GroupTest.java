package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GroupTest {
    static final int PARTITIONS = 4;
    static final int N1 = 3000;
    static final int N2 = 3000;

    /** Which member consumed each record; the first duplicate is kept as the failure. */
    static final class Ledger {
        private final Map<Integer, String> by = new HashMap<>();
        private String duplicate;

        synchronized void add(String member, ConsumerRecord<byte[], byte[]> r) {
            int i = Compat.check(r);
            String prev = by.putIfAbsent(i, member);
            if (prev != null && duplicate == null) {
                duplicate = "record " + i + " (" + r.partition() + "@" + r.offset() + ") consumed by "
                        + member + " after " + prev;
            }
        }

        synchronized Map<String, Integer> counts(int from, int to) {
            Map<String, Integer> per = new HashMap<>();
            by.forEach((i, m) -> {
                if (i >= from && i < to) {
                    per.merge(m, 1, Integer::sum);
                }
            });
            return per;
        }

        synchronized String duplicate() {
            return duplicate;
        }
    }

    /** A group member on its own thread; commits what it processed when partitions are revoked. */
    static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final Ledger ledger;
        final Set<Integer> assigned = ConcurrentHashMap.newKeySet();
        final Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>(); // consumer thread only
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        volatile boolean stop;
        volatile boolean commitRequested;
        final CountDownLatch committed = new CountDownLatch(1);
        volatile int lost;
        final Thread thread;

        Member(String name, Properties props, String topic, Ledger ledger) {
            this.name = name;
            this.consumer = new KafkaConsumer<>(props);
            this.topic = topic;
            this.ledger = ledger;
            this.thread = new Thread(this, "member-" + name);
            thread.start();
        }

        @Override
        public void run() {
            try {
                consumer.subscribe(List.of(topic), this);
                while (!stop) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        ledger.add(name, r);
                        processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (commitRequested && committed.getCount() > 0) {
                        consumer.commitSync(processed, Duration.ofSeconds(15));
                        committed.countDown();
                    }
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            } finally {
                consumer.close(Duration.ofSeconds(15));
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (TopicPartition tp : partitions) {
                if (processed.containsKey(tp)) {
                    commit.put(tp, processed.get(tp));
                }
                assigned.remove(tp.partition());
            }
            if (!commit.isEmpty()) {
                consumer.commitSync(commit, Duration.ofSeconds(15));
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            partitions.forEach(tp -> assigned.add(tp.partition()));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            lost++;
            partitions.forEach(tp -> assigned.remove(tp.partition()));
        }

        /** Asks the member to commit everything it processed, from its own thread. */
        void commit() throws InterruptedException {
            commitRequested = true;
            if (!committed.await(30, TimeUnit.SECONDS)) {
                requireRunning();
                throw new AssertionError(name + " did not commit within 30s\n" + diagnose());
            }
            requireRunning();
        }

        String diagnose() {
            StringBuilder sb = new StringBuilder("member " + name + ": alive=" + thread.isAlive()
                    + " assigned=" + assigned + " failure=" + failure.get() + "\n");
            for (StackTraceElement e : thread.getStackTrace()) {
                sb.append("    at ").append(e).append('\n');
            }
            return sb.toString();
        }

        /** Fails an eventually check at once if this member's thread has died. */
        void requireRunning() {
            Throwable t = failure.get();
            if (t != null) {
                throw new Compat.Fatal("member " + name + " failed: " + t, t);
            }
        }

        void stopAndJoin() throws InterruptedException {
            stop = true;
            thread.join(60_000);
            assertFalse(thread.isAlive(), name + " did not stop");
        }
    }

    private static void produce(String topic, int from, int to) throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Compat.producerProps("none"))) {
            for (int i = from; i < to; i++) {
                acks.add(p.send(Compat.record(topic, i)));
            }
            p.flush();
            for (Future<RecordMetadata> ack : acks) {
                ack.get(15, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Member A consumes a backlog alone; member B joins; both must end up with partitions, the
     * records written after B joined are split between them, and across the handover (offsets
     * committed on revocation) no record is consumed twice or missed. The broker's view of the
     * group (type, members, committed offsets) is checked through the admin client.
     */
    @ParameterizedTest(name = "group.protocol={0}")
    @ValueSource(strings = {"classic", "consumer"})
    void handoverExactlyOncePerRecord(String protocol) throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "group-" + protocol, PARTITIONS, Map.of());
            String group = Compat.name("group-" + protocol);
            Properties props = Compat.consumerProps(group);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            if (protocol.equals("classic")) {
                props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            }
            Ledger ledger = new Ledger();
            Compat.Phases log = new Compat.Phases("group.protocol=" + protocol);
            produce(topic, 0, N1);

            log.mark("A started");
            Member a = new Member("A", props, topic, ledger);
            Member b = null;
            try {
                Compat.eventually(Duration.ofSeconds(60), () -> {
                    a.requireRunning();
                    assertEquals(Map.of("A", N1), ledger.counts(0, N1));
                });
                assertEquals(PARTITIONS, a.assigned.size(), "A alone holds every partition");

                log.mark("A consumed the backlog alone; B starting");
                b = new Member("B", props, topic, ledger);
                Member bb = b;
                Compat.eventually(Duration.ofSeconds(60), () -> {
                    a.requireRunning();
                    bb.requireRunning();
                    assertFalse(a.assigned.isEmpty(), "A has partitions");
                    assertFalse(bb.assigned.isEmpty(), "B has partitions");
                    Set<Integer> union = new HashSet<>(a.assigned);
                    union.addAll(bb.assigned);
                    assertEquals(PARTITIONS, union.size());
                    assertEquals(PARTITIONS, a.assigned.size() + bb.assigned.size(), "disjoint");
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                            .get(10, TimeUnit.SECONDS).get(group);
                    assertEquals(2, d.members().size(), "members the broker describes");
                    for (MemberDescription m : d.members()) {
                        assertFalse(m.assignment().topicPartitions().isEmpty(), "member " + m.consumerId() + " assigned");
                    }
                });

                log.mark("both members assigned");
                produce(topic, N1, N1 + N2);
                Compat.eventually(Duration.ofSeconds(60), () -> {
                    a.requireRunning();
                    bb.requireRunning();
                    Map<String, Integer> per = ledger.counts(N1, N1 + N2);
                    assertEquals(N2, per.values().stream().mapToInt(Integer::intValue).sum(), "consumed after B joined " + per);
                    assertTrue(per.getOrDefault("A", 0) > 0 && per.getOrDefault("B", 0) > 0, "both consumed " + per);
                });

                log.mark("records after the handover consumed");
                // Both members commit before either leaves, so no rebalance races the commits.
                a.commit();
                b.commit();
                assertCommittedAtEnd(admin, group, topic);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "\n" + a.diagnose() + (b == null ? "" : b.diagnose()), e);
            } finally {
                a.stopAndJoin();
                if (b != null) {
                    b.stopAndJoin();
                }
            }
            log.mark("members stopped");
            assertNull(a.failure.get(), "A failed");
            assertNull(b.failure.get(), "B failed");
            assertNull(ledger.duplicate());
            assertEquals(0, a.lost + b.lost, "partitions lost instead of revoked");

            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                    .get(10, TimeUnit.SECONDS).get(group);
            assertEquals(protocol.equals("classic") ? GroupType.CLASSIC : GroupType.CONSUMER, d.type());

            log.mark("group type checked");
            // Deleting needs the group empty; a departed member may take a moment to be removed.
            Compat.eventually(Duration.ofSeconds(30),
                    () -> admin.deleteConsumerGroups(List.of(group)).all().get(10, TimeUnit.SECONDS));
            log.mark("group deleted");
            admin.deleteTopics(List.of(topic)).all().get(15, TimeUnit.SECONDS);
        }
    }

    /** The broker reports committed offsets equal to the end offset of every partition. */
    private static void assertCommittedAtEnd(Admin admin, String group, String topic) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(15, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> ends = admin.listOffsets(latest).all().get(15, TimeUnit.SECONDS)
                .entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
        assertEquals(ends, committed.entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset())),
                "committed offsets equal end offsets");
    }
}
