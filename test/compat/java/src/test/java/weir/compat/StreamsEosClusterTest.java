package weir.compat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Kafka Streams with exactly_once_v2 (StreamsEos) on the cluster suite's three nodes, topics
 * replicated three times: exact counts through a repartition and a state store, across a SIGKILL
 * of a node while input keeps coming, and after it is started again. With group.protocol classic
 * (the consumers' group) the node killed leads the output's first partition; with streams
 * (KIP-1071: the broker assigns the tasks and creates the internal topics, three replicas each)
 * it coordinates the group, which another node then loads from __consumer_offsets.
 */
class StreamsEosClusterTest {
    static final int N = 3000;

    @ParameterizedTest(name = "group.protocol={0}")
    @ValueSource(strings = {"classic", "streams"})
    @Timeout(360)
    void exactCountsAcrossBrokerKill(String groupProtocol, @TempDir Path state) throws Exception {
        Compat.Phases log = new Compat.Phases("streams eos cluster " + groupProtocol);
        try (Admin admin = Compat.admin();
                KafkaConsumer<byte[], byte[]> meta = new KafkaConsumer<>(Compat.consumerProps(null))) {
            String in = ClusterTest.createTopic(admin, meta, "eos-words");
            String out = ClusterTest.createTopic(admin, meta, "eos-counts");
            String app = Compat.name("eos-app");
            KafkaStreams s = StreamsEos.start(StreamsEos.topology(in, out), app, state, 3, groupProtocol);
            try {
                StreamsEos.produce(in, 0, N / 3);
                StreamsEos.checkExactCounts(out, ClusterTest.PARTITIONS, N / 3, Duration.ofSeconds(90));
                log.mark("first third counted");
                // The node leading the output's first partition; with the streams protocol the
                // node coordinating the group, so the group moves to another coordinator.
                int victim = groupProtocol.equals("streams")
                        ? admin.describeStreamsGroups(List.of(app)).all().get().get(app).coordinator().id()
                        : ClusterTest.leaders(meta, out).get(0);
                Thread producer = new Thread(() -> {
                    try {
                        StreamsEos.produce(in, N / 3, 2 * N / 3);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, "eos-input");
                producer.start();
                ClusterTest.cluster("kill", Integer.toString(victim));
                try {
                    producer.join(120_000);
                    StreamsEos.checkExactCounts(out, ClusterTest.PARTITIONS, 2 * N / 3, Duration.ofSeconds(150));
                    log.mark("second third counted with node " + victim + " killed");
                } finally {
                    ClusterTest.cluster("start", Integer.toString(victim));
                }
                StreamsEos.produce(in, 2 * N / 3, N);
                StreamsEos.checkExactCounts(out, ClusterTest.PARTITIONS, N, Duration.ofSeconds(150));
                log.mark("all counted after node " + victim + " came back");
            } finally {
                s.close(Duration.ofSeconds(30));
                s.cleanUp();
            }
        }
    }
}
