package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;

/**
 * The Java client's transactional producer with read_committed and read_uncommitted consumers:
 * commit, abort, a zombie producer fenced by its successor, a transaction aborted by its
 * timeout, and offsets committed inside a transaction (consume-transform-produce).
 */
class TransactionTest {
    static Properties txnProducerProps(String transactionalId) {
        Properties p = Compat.producerProps("none");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        return p;
    }

    static Properties consumerProps(String group, String isolation) {
        Properties p = Compat.consumerProps(group);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        return p;
    }

    /** Reads partition 0 of a topic from the start until its end at that isolation level. */
    static List<Integer> readAll(String topic, String isolation) {
        TopicPartition tp = new TopicPartition(topic, 0);
        List<Integer> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(null, isolation))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp), Duration.ofSeconds(15)).get(tp);
            Instant deadline = Instant.now().plusSeconds(60);
            while (c.position(tp, Duration.ofSeconds(15)) < end) {
                assertTrue(Instant.now().isBefore(deadline), "read to " + end + " in time");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    out.add(Compat.check(r));
                }
            }
        }
        return out;
    }

    static void send(KafkaProducer<byte[], byte[]> p, String topic, int from, int to) throws Exception {
        for (int i = from; i < to; i++) {
            p.send(Compat.record(topic, i)).get(30, TimeUnit.SECONDS);
        }
    }

    static long lastStable(Admin admin, String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        ListOffsetsResult r = admin.listOffsets(Map.of(tp, OffsetSpec.latest()),
                new ListOffsetsOptions(IsolationLevel.READ_COMMITTED));
        return r.partitionResult(tp).get(10, TimeUnit.SECONDS).offset();
    }

    @Test
    void commitAndAbort() throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "txn", 1, Map.of());
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps(Compat.name("tid")))) {
                p.initTransactions();
                p.beginTransaction();
                send(p, topic, 0, 10);
                p.commitTransaction();
                p.beginTransaction();
                send(p, topic, 10, 20);
                p.abortTransaction();
                p.beginTransaction();
                send(p, topic, 20, 30);
                p.commitTransaction();
            }
            List<Integer> committed = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                if (i < 10 || i >= 20) {
                    committed.add(i);
                }
            }
            assertEquals(committed, readAll(topic, "read_committed"), "read_committed");
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                all.add(i);
            }
            assertEquals(all, readAll(topic, "read_uncommitted"), "read_uncommitted");
        }
    }

    @Test
    void openTransactionHoldsLastStableOffset() throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "lso", 1, Map.of());
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps(Compat.name("tid")))) {
                p.initTransactions();
                p.beginTransaction();
                send(p, topic, 0, 5);
                p.commitTransaction();
                Compat.eventually(Duration.ofSeconds(15), () -> assertEquals(6, lastStable(admin, topic)));
                p.beginTransaction();
                send(p, topic, 5, 10);
                assertEquals(6, lastStable(admin, topic), "the open transaction holds the LSO");
                assertEquals(List.of(0, 1, 2, 3, 4), readAll(topic, "read_committed"));
                p.commitTransaction();
            }
            Compat.eventually(Duration.ofSeconds(15), () -> assertEquals(12, lastStable(admin, topic)));
            assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), readAll(topic, "read_committed"));
        }
    }

    @Test
    void zombieIsFenced() throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "zombie", 1, Map.of());
            String tid = Compat.name("tid");
            try (KafkaProducer<byte[], byte[]> zombie = new KafkaProducer<>(txnProducerProps(tid));
                    KafkaProducer<byte[], byte[]> fresh = new KafkaProducer<>(txnProducerProps(tid))) {
                zombie.initTransactions();
                zombie.beginTransaction();
                send(zombie, topic, 0, 3);
                zombie.commitTransaction();
                zombie.beginTransaction();
                zombie.send(Compat.record(topic, 100)).get(30, TimeUnit.SECONDS);
                // The successor fences the zombie and aborts its open transaction.
                fresh.initTransactions();
                fresh.beginTransaction();
                send(fresh, topic, 3, 6);
                fresh.commitTransaction();
                Exception err = null;
                try {
                    zombie.send(Compat.record(topic, 101)).get(30, TimeUnit.SECONDS);
                    zombie.commitTransaction();
                } catch (Exception e) {
                    err = e;
                }
                assertTrue(err != null, "the zombie's transaction went through");
                Throwable cause = rootFence(err);
                assertTrue(cause instanceof ProducerFencedException || cause instanceof InvalidProducerEpochException,
                        "zombie fenced, got " + err);
            }
            assertEquals(List.of(0, 1, 2, 3, 4, 5), readAll(topic, "read_committed"));
        }
    }

    static Throwable rootFence(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return t;
            }
        }
        return e;
    }

    @Test
    void timedOutTransactionIsAborted() throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "timeout", 1, Map.of());
            Properties props = txnProducerProps(Compat.name("tid"));
            props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 1000);
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
                p.initTransactions();
                p.beginTransaction();
                send(p, topic, 0, 5);
                // The coordinator's periodic check (every 10 s by default) aborts it.
                Compat.eventually(Duration.ofSeconds(40), () -> assertEquals(6, lastStable(admin, topic)));
                assertThrows(KafkaException.class, p::commitTransaction, "commit after the timeout");
            }
            assertEquals(List.of(), readAll(topic, "read_committed"));
            assertEquals(List.of(0, 1, 2, 3, 4), readAll(topic, "read_uncommitted"));
        }
    }

    @Test
    void offsetsCommittedInTransaction() throws Exception {
        final int n = 200;
        try (Admin admin = Compat.admin()) {
            String in = Compat.createTopic(admin, "eos-in", 1, Map.of());
            String out = Compat.createTopic(admin, "eos-out", 1, Map.of());
            String group = Compat.name("eos-group");
            TopicPartition inTp = new TopicPartition(in, 0);
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Compat.producerProps("none"))) {
                send(p, in, 0, n);
            }
            // One transaction that reads, writes and commits its offsets, then aborts.
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps(Compat.name("copy")));
                    KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProps(group, "read_committed"))) {
                p.initTransactions();
                c.assign(List.of(inTp));
                c.seekToBeginning(List.of(inTp));
                int copied = 0;
                boolean aborted = false;
                Instant deadline = Instant.now().plusSeconds(90);
                while (copied < n) {
                    assertTrue(Instant.now().isBefore(deadline), "copied " + copied + " of " + n + " in time");
                    var recs = c.poll(Duration.ofMillis(200));
                    if (recs.isEmpty()) {
                        continue;
                    }
                    p.beginTransaction();
                    long next = -1;
                    int inBatch = 0;
                    for (ConsumerRecord<byte[], byte[]> r : recs) {
                        int i = Compat.check(r);
                        p.send(Compat.record(out, i));
                        next = r.offset() + 1;
                        inBatch++;
                    }
                    p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(next)), c.groupMetadata());
                    if (!aborted) {
                        // The first transaction aborts: rewind to the committed position.
                        // flush first: abortTransaction drops batches the sender has not
                        // drained yet, and this test wants the aborted copy in the log.
                        p.flush();
                        p.abortTransaction();
                        aborted = true;
                        OffsetAndMetadata committed = c.committed(java.util.Set.of(inTp)).get(inTp);
                        c.seek(inTp, committed == null ? 0 : committed.offset());
                        continue;
                    }
                    p.commitTransaction();
                    copied += inBatch;
                }
                assertTrue(aborted, "one transaction was aborted");
            }
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            assertEquals(n, committed.get(inTp).offset(), "offset committed by the transactions");
            List<Integer> want = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                want.add(i);
            }
            assertEquals(want, readAll(out, "read_committed"), "each input exactly once");
            Map<Integer, Integer> counts = new HashMap<>();
            for (int i : readAll(out, "read_uncommitted")) {
                counts.merge(i, 1, Integer::sum);
            }
            assertTrue(counts.values().stream().anyMatch(c -> c > 1), "the aborted copy is in the log");
        }
    }
}
