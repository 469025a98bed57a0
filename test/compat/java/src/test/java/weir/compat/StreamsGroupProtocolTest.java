package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.Topology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams with group.protocol=streams (KIP-1071) and exactly_once_v2 on one broker, the word
 * count of StreamsEos (StreamsEosTest runs it across an application restart with both protocols):
 * the broker creates the repartition and changelog topics the topology declares and lists the
 * group as a streams group; two instances split the tasks, know each other's endpoints, and one
 * takes everything over when the other leaves; a SIGKILL of the broker leaves the application
 * running; at_least_once commits its offsets with the member's epoch. The counts stay exact
 * throughout.
 */
class StreamsGroupProtocolTest {
    static final int N = 3000;
    static final int PARTITIONS = 3;

    /**
     * Two instances at once: the broker splits the tasks between them (the first revokes half
     * before the second takes them), then the first leaves while input keeps coming and the
     * second takes everything over; the counts stay exact throughout.
     */
    @Test
    @Timeout(240)
    void exactCountsAcrossRebalances(@TempDir Path first, @TempDir Path second) throws Exception {
        Compat.Phases log = new Compat.Phases("streams protocol rebalance");
        try (Admin admin = Compat.admin()) {
            String in = Compat.createTopic(admin, "spr-words", PARTITIONS, Map.of());
            String out = Compat.createTopic(admin, "spr-counts", PARTITIONS, Map.of());
            String app = Compat.name("spr-app");
            Topology topology = StreamsEos.topology(in, out);

            KafkaStreams a = StreamsEos.start(topology, app, first, 1, "streams",
                    Map.of(StreamsConfig.APPLICATION_SERVER_CONFIG, "host-a:7001"));
            // The broker made the internal topics, with the source's partition count.
            Set<String> names = admin.listTopics().names().get();
            for (String internal : List.of(app + "-by-word-repartition", app + "-counts-changelog")) {
                assertTrue(names.contains(internal), internal + " created; topics " + names);
                assertEquals(PARTITIONS, admin.describeTopics(List.of(internal)).allTopicNames().get()
                        .get(internal).partitions().size(), internal + " partitions");
            }
            Collection<GroupListing> groups = admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get();
            assertTrue(groups.stream().anyMatch(g -> g.groupId().equals(app) && g.type().equals(Optional.of(GroupType.STREAMS))),
                    "listed as a streams group: " + groups);
            StreamsEos.produce(in, 0, N / 3);
            KafkaStreams b = StreamsEos.start(topology, app, second, 1, "streams",
                    Map.of(StreamsConfig.APPLICATION_SERVER_CONFIG, "host-b:7002"));
            try {
                // Both instances end up with tasks (3 partitions, 2 subtopologies: 6 tasks).
                Compat.eventually(Duration.ofSeconds(60), () -> {
                    int ta = activeTasks(a), tb = activeTasks(b);
                    assertEquals(6, ta + tb, "tasks of both instances");
                    assertEquals(3, ta, "tasks of the first instance");
                });
                log.mark("tasks split");
                // Interactive queries: the broker's endpoint-to-partitions map tells each instance
                // where the other's tasks run, and every input partition has one active host.
                Compat.eventually(Duration.ofSeconds(30), () -> {
                    for (KafkaStreams s : List.of(a, b)) {
                        Set<String> hosts = new java.util.TreeSet<>();
                        Set<Integer> inputs = new java.util.TreeSet<>();
                        for (StreamsMetadata md : s.metadataForAllStreamsClients()) {
                            hosts.add(md.host() + ":" + md.port());
                            md.topicPartitions().stream().filter(tp -> tp.topic().equals(in)).forEach(tp -> inputs.add(tp.partition()));
                        }
                        assertEquals(Set.of("host-a:7001", "host-b:7002"), hosts, "endpoints");
                        assertEquals(Set.of(0, 1, 2), inputs, "input partitions with an active host");
                    }
                });
                log.mark("endpoints known");
                StreamsEos.produce(in, N / 3, 2 * N / 3);
                StreamsEos.checkExactCounts(out, PARTITIONS, 2 * N / 3, Duration.ofSeconds(90));
                log.mark("counted with two instances");
                StreamsEos.produce(in, 2 * N / 3, 5 * N / 6);
                a.close(Duration.ofSeconds(30));
                Compat.eventually(Duration.ofSeconds(60), () -> assertEquals(6, activeTasks(b), "tasks after the first left"));
                StreamsEos.produce(in, 5 * N / 6, N);
                StreamsEos.checkExactCounts(out, PARTITIONS, N, Duration.ofSeconds(120));
                log.mark("counted after the first instance left");
            } finally {
                a.close(Duration.ofSeconds(30));
                b.close(Duration.ofSeconds(30));
                a.cleanUp();
                b.cleanUp();
            }
        }
    }

    private static int activeTasks(KafkaStreams s) {
        return s.metadataForLocalThreads().stream().mapToInt(t -> t.activeTasks().size()).sum();
    }

    /**
     * The broker is killed (SIGKILL) and restarted while the application runs: the streams group
     * comes back from __consumer_offsets with its members and epochs, the application carries on
     * without rejoining from scratch, and the counts stay exact.
     */
    @Test
    @Timeout(300)
    void exactCountsAcrossBrokerKill(@TempDir Path dir) throws Exception {
        String restart = ShareGroupTest.restartCommand();
        Compat.Phases log = new Compat.Phases("streams protocol broker kill");
        try (Admin admin = Compat.admin()) {
            String in = Compat.createTopic(admin, "spk-words", PARTITIONS, Map.of());
            String out = Compat.createTopic(admin, "spk-counts", PARTITIONS, Map.of());
            String app = Compat.name("spk-app");
            KafkaStreams a = StreamsEos.start(StreamsEos.topology(in, out), app, dir, 1, "streams");
            try {
                StreamsEos.produce(in, 0, N / 2);
                StreamsEos.checkExactCounts(out, PARTITIONS, N / 2, Duration.ofSeconds(90));
                log.mark("first half counted, killing the broker");
                ShareGroupTest.run(restart + " kill");
                log.mark("broker back");
                StreamsEos.produce(in, N / 2, N);
                StreamsEos.checkExactCounts(out, PARTITIONS, N, Duration.ofSeconds(150));
                log.mark("all counted after the kill");
                assertEquals(KafkaStreams.State.RUNNING, a.state(), "streams state after the kill");
            } finally {
                a.close(Duration.ofSeconds(30));
                a.cleanUp();
            }
        }
    }

    /**
     * at_least_once commits with OffsetCommit (v9+, the member's epoch) rather than inside
     * transactions: the counts come out exact (no failure, no rebalance) and the group's committed
     * offsets reach the end of every input partition.
     */
    @Test
    @Timeout(180)
    void atLeastOnceCommitsOffsets(@TempDir Path dir) throws Exception {
        try (Admin admin = Compat.admin()) {
            String in = Compat.createTopic(admin, "spa-words", PARTITIONS, Map.of());
            String out = Compat.createTopic(admin, "spa-counts", PARTITIONS, Map.of());
            String app = Compat.name("spa-app");
            KafkaStreams a = StreamsEos.start(StreamsEos.topology(in, out), app, dir, 1, "streams",
                    Map.of(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE));
            try {
                StreamsEos.produce(in, 0, N / 2);
                StreamsEos.checkExactCounts(out, PARTITIONS, N / 2, Duration.ofSeconds(90));
                Compat.eventually(Duration.ofSeconds(30), () -> {
                    long committed = admin.listConsumerGroupOffsets(app).partitionsToOffsetAndMetadata().get().entrySet().stream()
                            .filter(e -> e.getKey().topic().equals(in)).mapToLong(e -> e.getValue().offset()).sum();
                    assertEquals(N / 2, committed, "offsets committed on " + in);
                });
            } finally {
                a.close(Duration.ofSeconds(30));
                a.cleanUp();
            }
        }
    }
}
