package weir.scenario;

import java.time.Duration;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Drains a topic with one KafkaShareConsumer (implicit acknowledgement) and reports progress on
 * stdout for `weir scenario share-drain --client java`:
 *
 * <pre>
 * S elapsed_ms cumulative                           every --report-ms (default 1000), from a
 *                                                   reporter thread
 * DONE elapsed_ms consumed distinct duplicates first_ms last_ms
 *                                                   at the end
 * </pre>
 *
 * <p>elapsed_ms counts from just before subscribe; first_ms and last_ms are when the first and the
 * last records arrived (-1 if none did). The loop ends when {@code --expect} distinct
 * records (partition, offset) have arrived or after {@code --timeout-ms}; then the consumer closes,
 * which acknowledges the last poll's records. Exit status 0 when every record arrived, 3 when the
 * timeout came first, 2 on bad arguments.
 */
public final class ShareDrain {
    private ShareDrain() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> a = parse(args);
        String[] required = {"bootstrap", "topic", "group", "mode", "max-poll-records", "expect", "timeout-ms"};
        for (String k : required) {
            if (!a.containsKey(k)) {
                System.err.println("ShareDrain: missing --" + k);
                System.exit(2);
            }
        }
        long expect = Long.parseLong(a.get("expect"));
        long timeoutMs = Long.parseLong(a.get("timeout-ms"));

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, a.get("mode"));
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "implicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.parseInt(a.get("max-poll-records")));
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, Integer.parseInt(a.getOrDefault("fetch-max-wait-ms", "500")));

        AtomicLong consumed = new AtomicLong();
        Map<Integer, BitSet> seen = new HashMap<>();
        long distinct = 0;
        long duplicates = 0;
        long firstMs = -1;
        long lastMs = -1;
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "share-drain-reporter");
            t.setDaemon(true);
            return t;
        });
        long reportMs = Long.parseLong(a.getOrDefault("report-ms", "1000"));
        reporter.scheduleAtFixedRate(
                () -> emit("S " + elapsedMs(start) + " " + consumed.get()), reportMs, reportMs, TimeUnit.MILLISECONDS);
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(a.get("topic")));
            while (distinct < expect && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    BitSet b = seen.computeIfAbsent(r.partition(), k -> new BitSet());
                    int off = Math.toIntExact(r.offset());
                    if (b.get(off)) {
                        duplicates++;
                    } else {
                        b.set(off);
                        distinct++;
                    }
                }
                if (!recs.isEmpty()) {
                    lastMs = elapsedMs(start);
                    if (firstMs < 0) {
                        firstMs = lastMs;
                    }
                }
                consumed.addAndGet(recs.count());
            }
            reporter.shutdownNow();
            reporter.awaitTermination(5, TimeUnit.SECONDS);
            emit("DONE " + elapsedMs(start) + " " + consumed.get() + " " + distinct + " " + duplicates + " " + firstMs
                    + " " + lastMs);
        }
        System.exit(distinct >= expect ? 0 : 3);
    }

    private static long elapsedMs(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    private static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                System.err.println("ShareDrain: unexpected argument " + args[i]);
                System.exit(2);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        return m;
    }
}
