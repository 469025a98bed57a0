import java.io.FileReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client's side of the chaos test (test/chaos): an idempotent
 * acks=all producer that sends one record every few milliseconds, round
 * robin over the partitions, each value "ID-SEQ", until its stdin
 * closes; then it flushes and exits.
 *
 * On stdout, one line per outcome:
 *   ACK partition offset value epochMillis   (acknowledged)
 *   FAIL value reason                          (the client gave up)
 *
 * Usage: ChaosProducer BOOTSTRAP TOPIC PARTITIONS ID EVERY_MS [CLIENT_PROPERTIES]
 *
 * CLIENT_PROPERTIES, a client properties file, adds settings such as
 * security.protocol, sasl.* and ssl.*; the producer's own settings
 * (bootstrap, acks, idempotence, linger, delivery timeout, serializers)
 * win over it.
 */
public final class ChaosProducer {
    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: ChaosProducer BOOTSTRAP TOPIC PARTITIONS ID EVERY_MS [CLIENT_PROPERTIES]");
            System.exit(2);
        }
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        String id = args[3];
        long everyMs = Long.parseLong(args[4]);

        Properties props = new Properties();
        if (args.length == 6) {
            try (Reader r = new FileReader(args[5])) {
                props.load(r);
            }
        }
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "2");
        // Long enough that no record fails while a broker is down for a
        // few seconds: the test wants acknowledgements, not give-ups.
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (InputStream in = System.in) {
                while (in.read() >= 0) {
                    // the test closes stdin to stop the producer
                }
            } catch (IOException e) {
                // closed: stop as well
            }
            stop.set(true);
        }, "stdin-watch");
        stdin.setDaemon(true);
        stdin.start();

        PrintStream out = System.out;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (long seq = 0; !stop.get(); seq++) {
                String value = id + "-" + seq;
                int partition = (int) (seq % partitions);
                producer.send(new ProducerRecord<>(topic, partition, null, value), (md, err) -> {
                    if (err == null) {
                        out.println("ACK " + md.partition() + " " + md.offset() + " " + value + " " + System.currentTimeMillis());
                    } else {
                        out.println("FAIL " + value + " " + err.getClass().getSimpleName());
                    }
                });
                Thread.sleep(everyMs);
            }
            producer.flush();
            producer.close(Duration.ofSeconds(60));
        }
        out.flush();
    }
}
