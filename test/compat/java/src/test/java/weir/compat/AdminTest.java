package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

class AdminTest {
    private static ConfigEntry config(Admin admin, String topic, String name) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = admin.describeConfigs(List.of(r)).all().get(15, TimeUnit.SECONDS).get(r);
        ConfigEntry e = c.get(name);
        assertNotNull(e, "config " + name + " not described");
        return e;
    }

    private static void alter(Admin admin, String topic, AlterConfigOp... ops) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(r, List.of(ops))).all().get(15, TimeUnit.SECONDS);
    }

    @Test
    void topicLifecycle() throws Exception {
        try (Admin admin = Compat.admin()) {
            String a = Compat.name("admin-a");
            String b = Compat.name("admin-b");
            admin.createTopics(List.of(
                    new NewTopic(a, 3, (short) 1).configs(Map.of("retention.ms", "3600000")),
                    new NewTopic(b, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            Compat.awaitLeaders(admin, a, 3);
            Compat.awaitLeaders(admin, b, 1);

            Set<String> names = admin.listTopics().names().get(15, TimeUnit.SECONDS);
            assertTrue(names.containsAll(Set.of(a, b)), "listTopics has both new topics");

            Map<String, TopicDescription> desc = admin.describeTopics(List.of(a, b)).allTopicNames()
                    .get(15, TimeUnit.SECONDS);
            assertEquals(3, desc.get(a).partitions().size());
            assertEquals(1, desc.get(b).partitions().size());
            assertFalse(desc.get(a).isInternal());
            assertFalse(Uuid.ZERO_UUID.equals(desc.get(a).topicId()), "topic id set");
            desc.get(a).partitions().forEach(p -> {
                assertEquals(1, p.replicas().size(), "replicas of partition " + p.partition());
                assertEquals(1, p.isr().size(), "isr of partition " + p.partition());
            });

            ConfigEntry retention = config(admin, a, "retention.ms");
            assertEquals("3600000", retention.value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source());
            ConfigEntry cleanup = config(admin, a, "cleanup.policy");
            assertEquals("delete", cleanup.value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, cleanup.source());

            alter(admin, a,
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
            // Brokers apply committed config changes asynchronously: read until they show.
            Compat.eventually(Duration.ofSeconds(15), () -> {
                assertEquals("7200000", config(admin, a, "retention.ms").value());
                assertEquals("delete,compact", config(admin, a, "cleanup.policy").value());
            });

            alter(admin, a,
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT));
            Compat.eventually(Duration.ofSeconds(15), () -> {
                ConfigEntry reset = config(admin, a, "retention.ms");
                assertEquals("604800000", reset.value());
                assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, reset.source());
                assertEquals("delete", config(admin, a, "cleanup.policy").value());
            });

            admin.createPartitions(Map.of(a, NewPartitions.increaseTo(5))).all().get(15, TimeUnit.SECONDS);
            Compat.awaitLeaders(admin, a, 5);

            ExecutionException dup = assertThrows(ExecutionException.class, () -> admin
                    .createTopics(List.of(new NewTopic(a, 1, (short) 1))).all().get(15, TimeUnit.SECONDS));
            assertInstanceOf(TopicExistsException.class, dup.getCause());

            admin.deleteTopics(List.of(a, b)).all().get(15, TimeUnit.SECONDS);
            Compat.eventually(Duration.ofSeconds(30), () -> {
                Set<String> left = admin.listTopics().names().get(10, TimeUnit.SECONDS);
                assertFalse(left.contains(a) || left.contains(b), "deleted topics still listed");
            });

            ExecutionException gone = assertThrows(ExecutionException.class, () -> admin
                    .describeTopics(List.of(a)).allTopicNames().get(15, TimeUnit.SECONDS));
            assertInstanceOf(UnknownTopicOrPartitionException.class, gone.getCause());
        }
    }
}
