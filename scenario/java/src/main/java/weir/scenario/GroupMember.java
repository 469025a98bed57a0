package weir.scenario;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/** A group member (KafkaConsumer, automatic commits) for ScenarioConsumer. */
final class GroupMember implements ScenarioConsumer.Member {
    private final KafkaConsumer<byte[], byte[]> c;

    GroupMember(Properties p, String topic) {
        c = new KafkaConsumer<>(p);
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
