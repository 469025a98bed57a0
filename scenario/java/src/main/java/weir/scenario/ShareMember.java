package weir.scenario;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;

/**
 * A share-group member (KafkaShareConsumer, implicit acknowledgement) for ScenarioConsumer. Needs
 * kafka-clients 4; the pom leaves it out of a build against 3.x.
 */
final class ShareMember implements ScenarioConsumer.Member {
    private final KafkaShareConsumer<byte[], byte[]> c;

    ShareMember(Properties p, String topic) {
        c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
    }

    @Override
    public int poll(ScenarioConsumer.Seen seen) {
        ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(100));
        for (ConsumerRecord<byte[], byte[]> r : recs) {
            seen.record(r.partition(), r.offset(), r.timestamp());
        }
        return recs.count();
    }

    @Override
    public void close() {
        c.close(Duration.ofSeconds(30));
    }
}
