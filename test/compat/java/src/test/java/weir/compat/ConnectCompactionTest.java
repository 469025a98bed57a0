package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.runtime.Connect;
import org.apache.kafka.connect.runtime.distributed.DistributedHerder;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kafka Connect in distributed mode over the broker's log compaction: its config, offset and
 * status topics are compacted (Connect refuses them otherwise); a source connector whose config
 * is replaced many times and whose offsets are committed every 100 ms fills them with updates
 * to a few keys; the broker's cleaner leaves about one record per key; a restarted worker reads
 * the compacted topics back and resumes the connector with its latest config from its committed
 * offset, losing nothing.
 */
class ConnectCompactionTest {
    private static final int REVISIONS = 30;
    private static final String CONNECTOR = "seq";

    @Test
    @Timeout(240)
    void workerResumesFromCompactedTopics() throws Exception {
        Compat.Phases log = new Compat.Phases("connect");
        try (Admin admin = Compat.admin()) {
            Map<String, String> compacted = Map.of("cleanup.policy", "compact", "segment.ms", "200",
                    "min.cleanable.dirty.ratio", "0.01");
            String configs = Compat.createTopic(admin, "connect-configs", 1, compacted);
            String offsets = Compat.createTopic(admin, "connect-offsets", 1, compacted);
            String status = Compat.createTopic(admin, "connect-status", 1, compacted);
            String out = Compat.createTopic(admin, "connect-out", 1, Map.of());
            Map<String, String> worker = new HashMap<>();
            worker.put("bootstrap.servers", Compat.bootstrap());
            worker.put("group.id", Compat.name("connect-group"));
            worker.put("config.storage.topic", configs);
            worker.put("offset.storage.topic", offsets);
            worker.put("status.storage.topic", status);
            worker.put("config.storage.replication.factor", "1");
            worker.put("offset.storage.replication.factor", "1");
            worker.put("status.storage.replication.factor", "1");
            worker.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
            worker.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
            worker.put("value.converter.schemas.enable", "false");
            worker.put("offset.flush.interval.ms", "100");
            worker.put("listeners", "http://127.0.0.1:0");
            worker.put("plugin.discovery", "only_scan");

            Connect<DistributedHerder> first = new ConnectDistributed().startConnect(worker);
            log.mark("worker started");
            try {
                for (int rev = 0; rev < REVISIONS; rev++) {
                    putConfig(first, out, rev);
                    awaitRevision(first, rev);
                    // segment.ms (200) passes between revisions: the compacted topics roll.
                    Thread.sleep(250);
                }
            } finally {
                first.stop();
                first.awaitStop();
            }
            log.mark(REVISIONS + " revisions");
            long configsWritten = endOffset(admin, configs);
            long offsetsWritten = endOffset(admin, offsets);
            assertTrue(configsWritten >= 3 * REVISIONS, "config records written: " + configsWritten);
            assertTrue(offsetsWritten >= REVISIONS, "offset commits written: " + offsetsWritten);
            Compat.eventually(Duration.ofSeconds(120), () -> {
                for (String t : List.of(configs, offsets)) {
                    Map<String, Integer> perKey = recordsPerKey(t);
                    int total = perKey.values().stream().mapToInt(Integer::intValue).sum();
                    long written = t.equals(configs) ? configsWritten : offsetsWritten;
                    // The closed segments keep the latest record of each key; the active
                    // segment (never cleaned) what came after its last roll: a few.
                    assertTrue(total <= perKey.size() + 10 && total * 3 < written,
                            t + " holds " + total + " records of " + perKey.size() + " keys, " + written + " written");
                }
            });
            log.mark("config and offset topics compacted to about one record per key");

            long before = maxValue(out);
            Connect<DistributedHerder> second = new ConnectDistributed().startConnect(worker);
            try {
                awaitRevision(second, REVISIONS - 1);
                Compat.eventually(Duration.ofSeconds(60),
                        () -> assertTrue(maxValue(out) > before + 10, "no new records after the restart"));
            } finally {
                second.stop();
                second.awaitStop();
            }
            // At least once from the committed offset: every sequence number is there.
            TreeSet<Long> seen = values(out);
            assertEquals(0L, seen.first());
            assertEquals(seen.last() + 1, seen.size(), "sequence numbers missing from " + out);
            log.mark("restarted worker resumed at its committed offset");
        }
    }

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static void putConfig(Connect<DistributedHerder> c, String topic, int rev) throws Exception {
        String body = String.format("{\"connector.class\":\"%s\",\"tasks.max\":\"1\",\"topic\":\"%s\",\"rev\":\"%d\"}",
                SeqSourceConnector.class.getName(), topic, rev);
        HttpRequest req = HttpRequest.newBuilder(c.rest().advertisedUrl().resolve("/connectors/" + CONNECTOR + "/config"))
                .header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString(body)).build();
        Compat.eventually(Duration.ofSeconds(60), () -> {
            HttpResponse<String> r = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
            assertTrue(r.statusCode() / 100 == 2, "PUT config: " + r.statusCode() + " " + r.body());
        });
    }

    /** Waits until the connector runs revision rev with a running task. */
    private static void awaitRevision(Connect<DistributedHerder> c, int rev) {
        URI base = c.rest().advertisedUrl();
        Compat.eventually(Duration.ofSeconds(60), () -> {
            String config = HTTP.send(HttpRequest.newBuilder(base.resolve("/connectors/" + CONNECTOR + "/config")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(config.contains("\"rev\":\"" + rev + "\""), "config " + config);
            String st = HTTP.send(HttpRequest.newBuilder(base.resolve("/connectors/" + CONNECTOR + "/status")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(st.contains("\"tasks\":[{") && !st.contains("FAILED") && st.split("RUNNING").length >= 3, "status " + st);
        });
    }

    private static long endOffset(Admin admin, String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        return admin.listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.latest()))
                .all().get().get(tp).offset();
    }

    private interface Visit {
        void record(ConsumerRecord<byte[], byte[]> r);
    }

    private static void readAll(String topic, Visit v) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Compat.consumerProps(null))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            while (c.position(tp) < end) {
                c.poll(Duration.ofMillis(500)).forEach(v::record);
            }
        }
    }

    private static Map<String, Integer> recordsPerKey(String topic) {
        Map<String, Integer> m = new HashMap<>();
        readAll(topic, r -> m.merge(r.key() == null ? "" : new String(r.key()), 1, Integer::sum));
        return m;
    }

    private static TreeSet<Long> values(String topic) {
        TreeSet<Long> s = new TreeSet<>();
        readAll(topic, r -> s.add(Long.parseLong(new String(r.value()))));
        return s;
    }

    private static long maxValue(String topic) {
        TreeSet<Long> s = values(topic);
        return s.isEmpty() ? -1 : s.last();
    }

    /** A source of sequence numbers 0, 1, 2, ... whose position is its source offset. */
    public static class SeqSourceConnector extends SourceConnector {
        private Map<String, String> props;

        @Override
        public void start(Map<String, String> props) {
            this.props = props;
        }

        @Override
        public Class<? extends Task> taskClass() {
            return SeqSourceTask.class;
        }

        @Override
        public List<Map<String, String>> taskConfigs(int maxTasks) {
            return List.of(props);
        }

        @Override
        public void stop() {}

        @Override
        public ConfigDef config() {
            return new ConfigDef();
        }

        @Override
        public String version() {
            return "1";
        }
    }

    /** The task of SeqSourceConnector: one record every 5 ms, resuming after its committed offset. */
    public static class SeqSourceTask extends SourceTask {
        private static final Map<String, String> PARTITION = Map.of("source", "seq");
        private String topic;
        private long next;

        @Override
        public void start(Map<String, String> props) {
            topic = props.get("topic");
            Map<String, Object> off = context.offsetStorageReader().offset(PARTITION);
            next = off == null ? 0 : ((Number) off.get("pos")).longValue() + 1;
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            Thread.sleep(5);
            SourceRecord r = new SourceRecord(PARTITION, Map.of("pos", next), topic, 0,
                    Schema.STRING_SCHEMA, "k", Schema.INT64_SCHEMA, next);
            next++;
            return List.of(r);
        }

        @Override
        public void stop() {}

        @Override
        public String version() {
            return "1";
        }
    }
}
