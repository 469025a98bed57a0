package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams over the broker's log compaction: a KTable of counts whose changelog Streams
 * creates compacted takes many updates per key; the broker's cleaner leaves the changelog about
 * one record per key; a second instance with its local state wiped restores the table from the
 * compacted changelog and answers the same counts.
 */
class StreamsKTableTest {
    private static final int KEYS = 20;
    private static final int WAVES = 6;
    private static final int PER_WAVE = 200; // records per wave, spread over the keys

    @Test
    @Timeout(180)
    void ktableRestoresFromItsCompactedChangelog(@TempDir Path first, @TempDir Path wiped) throws Exception {
        Compat.Phases log = new Compat.Phases("streams ktable");
        try (Admin admin = Compat.admin()) {
            String in = Compat.createTopic(admin, "ktable-in", 1, Map.of());
            String app = Compat.name("ktable-app");
            String changelog = app + "-counts-changelog";
            Topology topology = topology(in);
            Map<String, Long> want = new HashMap<>();

            KafkaStreams streams = start(topology, app, first);
            log.mark("started");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(Compat.producerProps("none"),
                    Serdes.String().serializer(), Serdes.String().serializer())) {
                for (int w = 0; w <= WAVES; w++) {
                    int n = w < WAVES ? PER_WAVE : KEYS; // the last wave rolls the changelog once more
                    for (int i = 0; i < n; i++) {
                        String k = "k" + (i % KEYS);
                        p.send(new ProducerRecord<>(in, k, "x")).get(30, TimeUnit.SECONDS);
                        want.merge(k, 1L, Long::sum);
                    }
                    awaitCounts(streams, want);
                    // segment.ms (200) must pass before the changelog's next append, so that
                    // it rolls and the segment written so far can be cleaned.
                    Thread.sleep(300);
                }
            }
            log.mark("produced and counted " + want.values().stream().mapToLong(Long::longValue).sum());
            streams.close(Duration.ofSeconds(30));
            streams.cleanUp();

            Map<String, String> configs = topicConfigs(admin, changelog);
            assertEquals("compact", configs.get("cleanup.policy"), "the changelog's cleanup.policy");
            long written = endOffset(admin, changelog);
            assertTrue(written >= WAVES * PER_WAVE, "changelog records written: " + written);
            // Every count update went to the changelog; compaction leaves about one per key
            // (the closed segments' latest per key, plus the last wave in the active segment).
            Compat.eventually(Duration.ofSeconds(90), () -> {
                int left = countRecords(changelog);
                assertTrue(left <= 2 * KEYS, "changelog holds " + left + " records of " + written);
            });
            log.mark("changelog compacted");

            KafkaStreams restored = start(topology, app, wiped);
            try {
                awaitCounts(restored, want);
            } finally {
                restored.close(Duration.ofSeconds(30));
                restored.cleanUp();
            }
            log.mark("restored from the changelog");
        }
    }

    private static Topology topology(String in) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .count(Materialized.as("counts"));
        return b.build();
    }

    private static KafkaStreams start(Topology topology, String app, Path stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Compat.bootstrap());
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0); // every update to the changelog
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // Streams does not leave its group on close: the second instance takes over once the
        // first one's session times out.
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
        p.put(StreamsConfig.topicPrefix("segment.ms"), "200");
        p.put(StreamsConfig.topicPrefix("min.cleanable.dirty.ratio"), "0.01");
        KafkaStreams s = new KafkaStreams(topology, p);
        s.start();
        Compat.eventually(Duration.ofSeconds(60),
                () -> assertEquals(KafkaStreams.State.RUNNING, s.state(), "streams state"));
        return s;
    }

    private static void awaitCounts(KafkaStreams s, Map<String, Long> want) {
        Compat.eventually(Duration.ofSeconds(60), () -> {
            ReadOnlyKeyValueStore<String, Long> store = s.store(
                    StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.keyValueStore()));
            for (Map.Entry<String, Long> e : want.entrySet()) {
                assertEquals(e.getValue(), store.get(e.getKey()), "count of " + e.getKey());
            }
        });
    }

    private static Map<String, String> topicConfigs(Admin admin, String topic) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Map<String, String> out = new HashMap<>();
        for (ConfigEntry e : admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r).entries()) {
            out.put(e.name(), e.value());
        }
        return out;
    }

    private static long endOffset(Admin admin, String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        return admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get(30, TimeUnit.SECONDS).get(tp).offset();
    }

    /** Reads the partition from its start to its end and counts its records. */
    private static int countRecords(String topic) throws Exception {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(null))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            int n = 0;
            while (c.position(tp) < end) {
                n += c.poll(Duration.ofMillis(500)).count();
            }
            return n;
        }
    }
}
