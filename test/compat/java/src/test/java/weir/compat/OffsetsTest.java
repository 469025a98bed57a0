package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class OffsetsTest {
    static final int N = 10;

    /** Ten records one second apart, an hour ago, in CreateTime. */
    private static long at(long base, int i) {
        return base + i * 1000L;
    }

    private Admin admin;
    private long base;
    private String topic;
    private TopicPartition tp;

    @BeforeEach
    void topicWithTimedRecords() throws Exception {
        admin = Compat.admin();
        base = (System.currentTimeMillis() - 3_600_000L) / 1000 * 1000;
        topic = Compat.createTopic(admin, "offsets", 1, Map.of());
        tp = new TopicPartition(topic, 0);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Compat.producerProps("none"))) {
            for (int i = 0; i < N; i++) {
                p.send(Compat.record(topic, i, at(base, i))).get(15, TimeUnit.SECONDS);
            }
        }
    }

    @AfterEach
    void deleteTopic() throws Exception {
        try {
            admin.deleteTopics(List.of(topic)).all().get(15, TimeUnit.SECONDS);
        } finally {
            admin.close();
        }
    }

    private static ConsumerRecord<byte[], byte[]> pollOne(KafkaConsumer<byte[], byte[]> c) {
        Instant deadline = Instant.now().plusSeconds(15);
        while (Instant.now().isBefore(deadline)) {
            ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
            if (!rs.isEmpty()) {
                ConsumerRecord<byte[], byte[]> r = rs.iterator().next();
                assertEquals(r.offset(), Compat.check(r), "index of the record at offset " + r.offset());
                return r;
            }
        }
        throw new AssertionError("no record within 15s");
    }

    @Test
    void offsetsForTimesAndSeek() throws Exception {
        Map<String, OffsetSpec> specs = Map.of(
                "earliest", OffsetSpec.earliest(),
                "latest", OffsetSpec.latest(),
                "max-timestamp", OffsetSpec.maxTimestamp(),
                "at record 4", OffsetSpec.forTimestamp(at(base, 4)),
                "between 3 and 4", OffsetSpec.forTimestamp(at(base, 3) + 500));
        Map<String, Long> want = Map.of("earliest", 0L, "latest", (long) N, "max-timestamp", (long) N - 1,
                "at record 4", 4L, "between 3 and 4", 4L);
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
            ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp)
                    .get(15, TimeUnit.SECONDS);
            assertEquals(want.get(e.getKey()), info.offset(), "listOffsets " + e.getKey());
        }

        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(null))) {
            Map<TopicPartition, OffsetAndTimestamp> byTime = c.offsetsForTimes(
                    Map.of(tp, at(base, 6) - 1), Duration.ofSeconds(15));
            assertEquals(6, byTime.get(tp).offset());
            assertEquals(at(base, 6), byTime.get(tp).timestamp());
            Map<TopicPartition, OffsetAndTimestamp> future = c.offsetsForTimes(
                    Map.of(tp, at(base, N + 5)), Duration.ofSeconds(15));
            assertNull(future.get(tp), "no offset after the last record's time");

            assertEquals(0L, c.beginningOffsets(List.of(tp), Duration.ofSeconds(15)).get(tp));
            assertEquals((long) N, c.endOffsets(List.of(tp), Duration.ofSeconds(15)).get(tp));

            c.assign(List.of(tp));
            c.seek(tp, byTime.get(tp).offset());
            ConsumerRecord<byte[], byte[]> r = pollOne(c);
            assertEquals(6, r.offset());
            assertEquals(at(base, 6), r.timestamp());
            assertEquals(TimestampType.CREATE_TIME, r.timestampType());

            c.seek(tp, 8);
            assertEquals(8, pollOne(c).offset());
            c.seekToBeginning(List.of(tp));
            assertEquals(0, pollOne(c).offset());
            c.seekToEnd(List.of(tp));
            assertEquals((long) N, c.position(tp, Duration.ofSeconds(15)));
        }
    }

    /** Offsets committed with metadata read back through the consumer and the admin client. */
    @Test
    void committedOffsetsVisibleToAdmin() throws Exception {
        String group = Compat.name("commit");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(group))) {
            c.assign(List.of(tp));
            c.commitSync(Map.of(tp, new OffsetAndMetadata(3, "three")), Duration.ofSeconds(15));
            OffsetAndMetadata got = c.committed(Set.of(tp), Duration.ofSeconds(15)).get(tp);
            assertEquals(3, got.offset());
            assertEquals("three", got.metadata());
            c.commitSync(Map.of(tp, new OffsetAndMetadata(7, "seven")), Duration.ofSeconds(15));
        }
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(15, TimeUnit.SECONDS);
        assertEquals(Map.of(tp, new OffsetAndMetadata(7, "seven")), committed);
        assertTrue(admin.listConsumerGroupOffsets("compat-java-no-such-group")
                .partitionsToOffsetAndMetadata().get(15, TimeUnit.SECONDS).isEmpty(), "unknown group has no offsets");

        // A new member of the group starts at the committed offset.
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(group))) {
            c.assign(List.of(tp));
            assertEquals(7, pollOne(c).offset());
        }
    }
}
