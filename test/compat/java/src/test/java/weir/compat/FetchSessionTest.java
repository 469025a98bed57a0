package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Fetch sessions (KIP-227): the Java consumer reads every record of the data set, unchanged
 * and once, through its fetch session. Against weir (WEIR_METRICS names its Prometheus
 * endpoint) it also checks, from the broker's counts of partitions per Fetch request, that the
 * consumer's requests were incremental and that a caught-up consumer's requests named no
 * partition.
 */
class FetchSessionTest {
    static final int N = 4_000;
    static final int PARTITIONS = 40;

    @Test
    void consumerReadsThroughAnIncrementalSession() throws Exception {
        try (Admin admin = Compat.admin()) {
            String topic = Compat.createTopic(admin, "sessions", PARTITIONS, Map.of());
            int[] partition = new int[N];
            long[] offset = new long[N];
            AtomicReference<Exception> sendError = new AtomicReference<>();
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Compat.producerProps("none"))) {
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
            var props = Compat.consumerProps(null);
            props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
            Map<String, Double> atStart = WeirMetrics.read();
            boolean[] seen = new boolean[N];
            Map<Integer, Long> lastOffset = new HashMap<>();
            int got = 0;
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props)) {
                c.assign(tps);
                c.seekToBeginning(tps);
                Instant deadline = Instant.now().plusSeconds(60);
                while (got < N) {
                    assertTrue(Instant.now().isBefore(deadline), "read " + got + " of " + N + " in time");
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
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
                // Caught up: a few polls for the partitions whose records were buffered to
                // come back into the session, then idle polls.
                for (int i = 0; i < 5; i++) {
                    assertTrue(c.poll(Duration.ofMillis(200)).isEmpty(), "no record past the data set");
                }
                Map<String, Double> idleFrom = WeirMetrics.read();
                Instant idleEnd = Instant.now().plusSeconds(3);
                while (Instant.now().isBefore(idleEnd)) {
                    assertTrue(c.poll(Duration.ofMillis(200)).isEmpty(), "no record past the data set");
                }
                Map<String, Double> idleTo = WeirMetrics.read();
                if (atStart != null) {
                    String inc = "weir_fetch_requests_total{kind=\"incremental\"}";
                    String named = "weir_fetch_request_partitions_total{kind=\"incremental\"}";
                    String full = "weir_fetch_requests_total{kind=\"full\"}";
                    double incremental = idleTo.get(inc) - atStart.get(inc);
                    double fulls = idleTo.get(full) - atStart.get(full);
                    double idleRequests = idleTo.get(inc) - idleFrom.get(inc);
                    double idleNamed = idleTo.get(named) - idleFrom.get(named);
                    System.out.printf("fetch sessions: %.0f incremental and %.0f full requests; idle: %.0f requests naming %.0f partitions%n",
                            incremental, fulls, idleRequests, idleNamed);
                    assertTrue(incremental > 10 * fulls, incremental + " incremental fetches against " + fulls + " full ones");
                    assertTrue(idleRequests >= 5, idleRequests + " fetches in 3 idle seconds");
                    assertEquals(0.0, idleNamed, "partitions named by a caught-up consumer's fetches");
                }
            }
            assertEquals(N, got, "records read");
        }
    }

    /** The broker's counters from WEIR_METRICS (weir only). */
    static final class WeirMetrics {
        private WeirMetrics() {}

        /** The fetch counters, or null when WEIR_METRICS is not set (Apache Kafka). */
        static Map<String, Double> read() throws Exception {
            String url = System.getenv("WEIR_METRICS");
            if (url == null || url.isBlank()) {
                return null;
            }
            HttpResponse<String> resp = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(url.trim())).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, resp.statusCode(), "GET " + url);
            Map<String, Double> out = new HashMap<>();
            for (String line : resp.body().split("\n")) {
                if (line.startsWith("weir_fetch_")) {
                    int sp = line.lastIndexOf(' ');
                    out.put(line.substring(0, sp), Double.parseDouble(line.substring(sp + 1)));
                }
            }
            return out;
        }
    }
}
