package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RoundTripTest {
    static final int N = 100_000;
    static final int PARTITIONS = 3;

    /**
     * An idempotent acks=all producer writes N keyed records with headers; a consumer reads
     * them back: each record exactly once, unchanged, at the offset the producer was given.
     */
    @ParameterizedTest(name = "compression={0}")
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void produceConsume(String compression) throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "rt-" + compression, PARTITIONS, Map.of());
            int[] partition = new int[N];
            long[] offset = new long[N];
            AtomicReference<Exception> sendError = new AtomicReference<>();
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Compat.producerProps(compression))) {
                for (int i = 0; i < N; i++) {
                    final int idx = i;
                    p.send(Compat.record(topic, i), (md, err) -> {
                        if (err != null) {
                            sendError.compareAndSet(null, err);
                            return;
                        }
                        partition[idx] = md.partition();
                        offset[idx] = md.offset();
                    });
                }
                p.flush();
            }
            assertNull(sendError.get(), "send error");

            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            boolean[] seen = new boolean[N];
            Map<Integer, Long> lastOffset = new HashMap<>();
            int got = 0;
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(null))) {
                c.assign(tps);
                c.seekToBeginning(tps);
                Instant deadline = Instant.now().plusSeconds(90);
                while (got < N) {
                    assertTrue(Instant.now().isBefore(deadline), "read " + got + " of " + N + " in time");
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                        int i = Compat.check(r);
                        assertTrue(!seen[i], "record " + i + " delivered twice");
                        seen[i] = true;
                        got++;
                        assertEquals(partition[i], r.partition(), "partition of record " + i);
                        assertEquals(offset[i], r.offset(), "offset of record " + i);
                        Long prev = lastOffset.put(r.partition(), r.offset());
                        assertTrue(prev == null || prev < r.offset(), "offsets increase in partition " + r.partition());
                    }
                }
                Map<TopicPartition, Long> ends = c.endOffsets(tps, Duration.ofSeconds(15));
                long[] perPartition = new long[PARTITIONS];
                Arrays.stream(partition).forEach(pt -> perPartition[pt]++);
                for (TopicPartition tp : tps) {
                    assertEquals(perPartition[tp.partition()], ends.get(tp),
                            "end offset of " + tp + " (dense offsets: each record written once)");
                }
            }
            admin.deleteTopics(List.of(topic)).all().get(15, TimeUnit.SECONDS);
        }
    }
}
