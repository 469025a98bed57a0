package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;

/**
 * A Kafka Streams word count under processing.guarantee=exactly_once_v2 (group.protocol classic,
 * or streams where a test asks for it):
 * records keyed by their sequence number carry a word; the topology re-keys them by word (a
 * repartition topic), counts per word in a state store (its changelog) and writes every count
 * update to the output topic. With the record cache off each update is written, so exactly once
 * means that read_committed finds, per word, the counts 1, 2, ..., n in order, each once, n being
 * how often the word was produced.
 */
final class StreamsEos {
    static final int WORDS = 17;

    private StreamsEos() {}

    static String word(int i) {
        return "w" + (i % WORDS);
    }

    static Topology topology(String in, String out) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName("by-word"))
                .groupByKey()
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static KafkaStreams start(Topology topology, String app, Path stateDir, int replication) {
        return start(topology, app, stateDir, replication, "classic");
    }

    /**
     * Starts the application with group.protocol classic (its consumers in a classic group,
     * the leader assigning tasks) or streams (KIP-1071: the broker assigns tasks and creates
     * the internal topics).
     */
    static KafkaStreams start(Topology topology, String app, Path stateDir, int replication, String groupProtocol) {
        return start(topology, app, stateDir, replication, groupProtocol, Map.of());
    }

    /** start with extra Streams configs (application.server and the like). */
    static KafkaStreams start(Topology topology, String app, Path stateDir, int replication, String groupProtocol,
            Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Compat.bootstrap());
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, replication);
        if (groupProtocol.equals("streams")) {
            p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        } else {
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_PROTOCOL_CONFIG), "classic");
            p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
        }
        p.putAll(extra);
        KafkaStreams s = new KafkaStreams(topology, p);
        s.start();
        Compat.eventually(Duration.ofSeconds(90),
                () -> assertEquals(KafkaStreams.State.RUNNING, s.state(), "streams state"));
        return s;
    }

    /** Produces records from..to-1 of the input: key i, value word(i). */
    static void produce(String in, int from, int to) throws Exception {
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Compat.producerProps("none"),
                Serdes.String().serializer(), Serdes.String().serializer())) {
            for (int i = from; i < to; i++) {
                p.send(new ProducerRecord<>(in, Integer.toString(i), word(i)));
            }
            p.flush();
        }
    }

    /**
     * Reads the output with read_committed until every word reaches its count for n inputs,
     * and checks that each word's counts are exactly 1..count, in order, each once.
     */
    static void checkExactCounts(String out, int partitions, int n, Duration timeout) {
        Map<String, Long> want = new HashMap<>();
        for (int i = 0; i < n; i++) {
            want.merge(word(i), 1L, Long::sum);
        }
        Properties props = Compat.consumerProps(null);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<String, List<Long>> seen = new HashMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(props, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(out, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Instant deadline = Instant.now().plus(timeout);
            while (!reached(seen, want)) {
                assertTrue(Instant.now().isBefore(deadline), "counts reached in time: " + last(seen) + " want " + want);
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    List<Long> counts = seen.computeIfAbsent(r.key(), k -> new ArrayList<>());
                    long expect = counts.size() + 1;
                    assertEquals(expect, r.value(), "count of " + r.key() + " after " + counts.size()
                            + " updates (a duplicate or lost update) at " + r.partition() + "@" + r.offset());
                    counts.add(r.value());
                }
            }
        }
        assertEquals(want, last(seen), "final counts");
    }

    private static boolean reached(Map<String, List<Long>> seen, Map<String, Long> want) {
        return last(seen).equals(want);
    }

    private static Map<String, Long> last(Map<String, List<Long>> seen) {
        Map<String, Long> out = new HashMap<>();
        seen.forEach((k, v) -> out.put(k, v.get(v.size() - 1)));
        return out;
    }
}
