package weir.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** What the Java suites share: the broker address, names, topics and the record shape. */
final class Compat {
    private static final SecureRandom RANDOM = new SecureRandom();

    private Compat() {}

    /** The broker address from WEIR_BOOTSTRAP; tests fail (never skip) without it. */
    static String bootstrap() {
        String b = System.getenv("WEIR_BOOTSTRAP");
        if (b == null || b.isBlank()) {
            throw new AssertionError("WEIR_BOOTSTRAP is not set: these tests drive a live broker;"
                    + " run them through test/compat/run (see test/compat/README.md)");
        }
        return b.trim();
    }

    /** A name unique to this run. */
    static String name(String prefix) {
        byte[] b = new byte[4];
        RANDOM.nextBytes(b);
        return "compat-java-" + prefix + "-" + HexFormat.of().formatHex(b);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        return Admin.create(p);
    }

    static Properties producerProps(String compression) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 128 * 1024);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return p;
    }

    static Properties consumerProps(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return p;
    }

    /** Creates a topic (replication factor 1) and waits until every partition's leader serves it. */
    static String createTopic(Admin admin, String prefix, int partitions, Map<String, String> configs)
            throws Exception {
        String topic = name(prefix);
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs)))
                .all().get(30, TimeUnit.SECONDS);
        awaitLeaders(admin, topic, partitions);
        return topic;
    }

    static void awaitLeaders(Admin admin, String topic, int partitions) {
        eventually(Duration.ofSeconds(30), () -> {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(10, TimeUnit.SECONDS).get(topic);
            assertEquals(partitions, d.partitions().size(), "partitions of " + topic);
            d.partitions().forEach(p -> {
                if (p.leader() == null || p.leader().isEmpty()) {
                    throw new AssertionError("partition " + p.partition() + " has no leader");
                }
            });
            // Metadata can name a leader before the leader has created the partition; a
            // first produce then gets NOT_LEADER_OR_FOLLOWER, and an idempotent producer
            // with batches in flight can stay stuck on OUT_OF_ORDER_SEQUENCE_NUMBER until
            // delivery.timeout.ms (seen with Apache Kafka 4.3). ListOffsets is answered by
            // the partition itself, so success means it is ready.
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            d.partitions().forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
            admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        });
    }

    /** Thrown inside an eventually check to stop retrying: the condition can no longer become true. */
    static final class Fatal extends RuntimeException {
        Fatal(String message, Throwable cause) {
            super(message, cause);
        }
    }

    interface Check {
        void run() throws Exception;
    }

    /** Retries check every 100ms until it passes, rethrowing its last failure after timeout. */
    static void eventually(Duration timeout, Check check) {
        Instant deadline = Instant.now().plus(timeout);
        while (true) {
            try {
                check.run();
                return;
            } catch (Fatal f) {
                throw f;
            } catch (Throwable t) {
                if (Instant.now().isAfter(deadline)) {
                    throw new AssertionError("not true after " + timeout + ": " + t, t);
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }

    /**
     * Record i of the shared data set (the same shape as the Go and Python suites):
     * key "k-%08d", a 16..271 byte value derived from i, headers seq, parity and an empty one.
     */
    static ProducerRecord<byte[], byte[]> record(String topic, int i) {
        return record(topic, i, null);
    }

    static ProducerRecord<byte[], byte[]> record(String topic, int i, Long timestamp) {
        List<Header> headers = List.of(
                new RecordHeader("seq", utf8(Integer.toString(i))),
                new RecordHeader("parity", utf8(i % 2 == 0 ? "even" : "odd")),
                new RecordHeader("empty", new byte[0]));
        return new ProducerRecord<>(topic, null, timestamp, key(i), value(i), headers);
    }

    static byte[] key(int i) {
        return utf8(String.format("k-%08d", i));
    }

    static byte[] value(int i) {
        int n = 16 + i % 256;
        String unit = "v" + i + ".";
        return utf8(unit.repeat(n / unit.length() + 1).substring(0, n));
    }

    /** Checks a fetched record against the data set and returns its index. */
    static int check(ConsumerRecord<byte[], byte[]> r) {
        Header[] hs = r.headers().toArray();
        if (hs.length != 3 || !hs[0].key().equals("seq")) {
            throw new AssertionError(r.topic() + "/" + r.partition() + "@" + r.offset() + ": bad headers");
        }
        int i = Integer.parseInt(new String(hs[0].value(), StandardCharsets.UTF_8));
        String where = "record " + i + " at " + r.partition() + "@" + r.offset();
        assertArrayEquals(key(i), r.key(), where + " key");
        assertArrayEquals(value(i), r.value(), where + " value");
        assertEquals("parity", hs[1].key(), where);
        assertArrayEquals(utf8(i % 2 == 0 ? "even" : "odd"), hs[1].value(), where + " parity header");
        assertEquals("empty", hs[2].key(), where);
        assertArrayEquals(new byte[0], hs[2].value(), where + " empty header");
        return i;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Prints the time since the previous mark, so a slow run shows where it spent its time. */
    static final class Phases {
        private final String name;
        private long last = System.nanoTime();

        Phases(String name) {
            this.name = name;
        }

        void mark(String phase) {
            long now = System.nanoTime();
            System.out.printf("%s: %s (+%d ms)%n", name, phase, (now - last) / 1_000_000);
            last = now;
        }
    }
}
