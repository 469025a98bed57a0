package weir.compat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.Topology;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Kafka Streams with exactly_once_v2 on one broker (StreamsEos): exact counts through a
 * repartition and a state store, across a restart of the application whose second instance
 * starts with its local state wiped (restored from the changelog) while input keeps coming; with
 * group.protocol classic and streams (KIP-1071).
 */
class StreamsEosTest {
    static final int N = 3000;
    static final int PARTITIONS = 3;

    @ParameterizedTest(name = "group.protocol={0}")
    @ValueSource(strings = {"classic", "streams"})
    @Timeout(240)
    void exactCountsAcrossRestart(String groupProtocol, @TempDir Path first, @TempDir Path second) throws Exception {
        Compat.Phases log = new Compat.Phases("streams eos " + groupProtocol);
        try (Admin admin = Compat.admin()) {
            String in = Compat.createTopic(admin, "eos-words", PARTITIONS, Map.of());
            String out = Compat.createTopic(admin, "eos-counts", PARTITIONS, Map.of());
            String app = Compat.name("eos-app");
            Topology topology = StreamsEos.topology(in, out);

            KafkaStreams a = StreamsEos.start(topology, app, first, 1, groupProtocol);
            log.mark("started");
            StreamsEos.produce(in, 0, N / 2);
            StreamsEos.checkExactCounts(out, PARTITIONS, N / 2, Duration.ofSeconds(90));
            log.mark("first half counted");
            // More input while the first instance goes and the second comes up.
            StreamsEos.produce(in, N / 2, 3 * N / 4);
            a.close(Duration.ofSeconds(30));
            KafkaStreams b = StreamsEos.start(topology, app, second, 1, groupProtocol);
            try {
                StreamsEos.produce(in, 3 * N / 4, N);
                StreamsEos.checkExactCounts(out, PARTITIONS, N, Duration.ofSeconds(120));
            } finally {
                b.close(Duration.ofSeconds(30));
                b.cleanUp();
            }
            a.cleanUp();
            log.mark("all counted after the restart");
        }
    }
}
