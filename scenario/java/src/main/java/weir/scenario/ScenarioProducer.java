package weir.scenario;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Producers of one scenario producer entry, on Kafka's Java client, for `weir scenario run` with
 * {@code client: java}: {@code --count} KafkaProducers, each on its own thread, sending at the
 * schedule's rate while the runner says so (Driver documents the control lines).
 *
 * <p>Every {@code --report-ms} (and once more at the end) it prints one line:
 *
 * <pre>
 * T elapsed_ms sent errors | ack c0 c1 ... | lat b:c ... max=us | node id=bytes ...
 * </pre>
 *
 * ack: records acknowledged per partition since the last line; lat: the send-to-callback latency
 * histogram since the last line (scenario/histogram.go's buckets); node: each broker's
 * producer-node-metrics outgoing-byte-total, summed over the producers, since the start. "DONE"
 * follows the last line.
 *
 * <p>Schedule (--schedule): "c:RATE" or "s:REPEAT:SEG,SEG..." where REPEAT is 0 or 1 and a SEG is
 * "RATE@MS" (constant) or "FROM>TO@MS" (a ramp). Distributor (--distributor):
 * "TYPE:alpha:keys:seed".
 */
public final class ScenarioProducer {
    private ScenarioProducer() {}

    static final class Segment {
        double from;
        double to;
        long ms;
    }

    static volatile boolean on;
    static volatile boolean quit;
    static volatile double rateOverride; // records/s for the whole driver; 0: the schedule
    static final AtomicLong budget = new AtomicLong(-1);

    public static void main(String[] args) throws Exception {
        Map<String, String> configs = new HashMap<>();
        Map<String, String> a = Driver.parse(args, configs);
        String topic = Driver.need(a, "topic");
        int partitions = Integer.parseInt(Driver.need(a, "partitions"));
        int recordSize = Integer.parseInt(Driver.need(a, "record-size"));
        int count = Integer.parseInt(a.getOrDefault("count", "1"));
        long records = Long.parseLong(a.getOrDefault("records", "0"));
        long reportMs = Long.parseLong(a.getOrDefault("report-ms", "1000"));
        boolean repeating = false;
        List<Segment> segs = new ArrayList<>();
        String sched = Driver.need(a, "schedule");
        if (sched.startsWith("c:")) {
            Segment s = new Segment();
            s.from = s.to = Double.parseDouble(sched.substring(2));
            s.ms = Long.MAX_VALUE;
            segs.add(s);
        } else {
            String[] f = sched.split(":", 3);
            repeating = f[1].equals("1");
            for (String seg : f[2].split(",")) {
                String[] rm = seg.split("@");
                Segment s = new Segment();
                s.ms = Long.parseLong(rm[1]);
                if (rm[0].contains(">")) {
                    String[] ft = rm[0].split(">");
                    s.from = Double.parseDouble(ft[0]);
                    s.to = Double.parseDouble(ft[1]);
                } else {
                    s.from = s.to = Double.parseDouble(rm[0]);
                }
                segs.add(s);
            }
        }
        String[] dist = Driver.need(a, "distributor").split(":");

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Driver.need(a, "bootstrap"));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.putAll(configs);

        AtomicLongArray acked = new AtomicLongArray(partitions);
        AtomicLong sent = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        Driver.Histogram lat = new Driver.Histogram();
        List<KafkaProducer<byte[], byte[]>> producers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Properties pi = new Properties();
            pi.putAll(p);
            pi.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "scenario-producer-" + i);
            producers.add(new KafkaProducer<>(pi));
        }
        Driver.control((cmd, arg) -> {
            switch (cmd) {
                case "ON":
                    on = arg.equals("1");
                    break;
                case "RATE":
                    rateOverride = Double.parseDouble(arg);
                    break;
                case "BUDGET":
                    budget.set(Long.parseLong(arg));
                    break;
                case "QUIT":
                    quit = true;
                    break;
                default:
                    break;
            }
        });
        long start = System.nanoTime();
        List<Thread> senders = new ArrayList<>();
        final boolean rep = repeating;
        for (int i = 0; i < count; i++) {
            final int inst = i;
            final KafkaProducer<byte[], byte[]> prod = producers.get(i);
            Thread t = new Thread(() -> send(prod, inst, count, topic, partitions, recordSize, records, segs, rep, dist,
                    acked, sent, errors, lat), "scenario-sender-" + i);
            t.start();
            senders.add(t);
        }
        Thread reporter = new Thread(() -> {
            while (!quit) {
                try {
                    Thread.sleep(reportMs);
                } catch (InterruptedException e) {
                    return;
                }
                report(start, sent, errors, acked, lat, producers);
            }
        }, "scenario-reporter");
        reporter.setDaemon(true);
        reporter.start();
        for (Thread t : senders) {
            t.join();
        }
        for (KafkaProducer<byte[], byte[]> prod : producers) {
            prod.flush();
        }
        report(start, sent, errors, acked, lat, producers);
        for (KafkaProducer<byte[], byte[]> prod : producers) {
            prod.close(java.time.Duration.ofSeconds(30));
        }
        Driver.emit("DONE");
        System.exit(0);
    }

    static double rateAt(List<Segment> segs, boolean repeating, long ms) {
        long total = 0;
        for (Segment s : segs) {
            total = s.ms == Long.MAX_VALUE ? Long.MAX_VALUE : total + s.ms;
            if (total == Long.MAX_VALUE) {
                break;
            }
        }
        if (repeating && total > 0 && total != Long.MAX_VALUE) {
            ms %= total;
        }
        for (Segment s : segs) {
            if (ms < s.ms) {
                return s.from + (s.to - s.from) * ms / (double) s.ms;
            }
            ms -= s.ms;
        }
        return segs.get(segs.size() - 1).to;
    }

    static boolean take() {
        while (true) {
            long b = budget.get();
            if (b < 0) {
                return true;
            }
            if (b == 0) {
                return false;
            }
            if (budget.compareAndSet(b, b - 1)) {
                return true;
            }
        }
    }

    static void send(KafkaProducer<byte[], byte[]> prod, int inst, int count, String topic, int partitions,
            int recordSize, long records, List<Segment> segs, boolean repeating, String[] dist, AtomicLongArray acked,
            AtomicLong sent, AtomicLong errors, Driver.Histogram lat) {
        byte[] value = new byte[recordSize];
        for (int i = 0; i < value.length; i++) {
            value[i] = (byte) ('a' + i % 26);
        }
        String type = dist[0];
        double alpha = Double.parseDouble(dist[1]);
        int keys = Integer.parseInt(dist[2]);
        long seed = Long.parseLong(dist[3]);
        double[] cdf = new double[partitions];
        if (type.equals("PARTITION_ZIPF")) {
            double sum = 0;
            for (int k = 0; k < partitions; k++) {
                sum += 1 / Math.pow(k + 1, alpha);
            }
            double acc = 0;
            for (int k = 0; k < partitions; k++) {
                acc += 1 / Math.pow(k + 1, alpha) / sum;
                cdf[k] = acc;
            }
            cdf[partitions - 1] = 1;
        }
        Random rng = new Random(seed + inst);
        long n = inst;
        long mine = 0;
        double owed = 0;
        long start = System.nanoTime();
        long last = start;
        while (!quit && (records == 0 || mine < records)) {
            long now = System.nanoTime();
            double dt = (now - last) / 1e9;
            if (on && dt > 0) {
                double r = rateOverride > 0 ? rateOverride / count
                        : rateAt(segs, repeating, TimeUnit.NANOSECONDS.toMillis((last + now) / 2 - start));
                owed += r * dt;
            }
            last = now;
            if (owed < 1) {
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
                continue;
            }
            while (owed >= 1 && on && !quit && (records == 0 || mine < records) && take()) {
                owed -= 1;
                byte[] key = null;
                Integer part = null;
                switch (type) {
                    case "KEY_ROUND_ROBIN":
                        key = ("key-" + (n % keys)).getBytes(StandardCharsets.UTF_8);
                        break;
                    case "PARTITION_ZIPF": {
                        double u = rng.nextDouble();
                        int k = 0;
                        while (k < partitions - 1 && cdf[k] < u) {
                            k++;
                        }
                        part = k;
                        break;
                    }
                    case "PINNED_PARTITIONS":
                        part = (int) (n % partitions);
                        break;
                    default:
                        break;
                }
                n++;
                mine++;
                final long sentAt = System.nanoTime();
                sent.incrementAndGet();
                ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, part, System.currentTimeMillis(), key, value);
                prod.send(rec, (md, err) -> {
                    if (err != null) {
                        errors.incrementAndGet();
                        return;
                    }
                    lat.record(TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - sentAt));
                    if (md.partition() >= 0 && md.partition() < partitions) {
                        acked.incrementAndGet(md.partition());
                    }
                });
            }
            if (!on) {
                owed = 0; // no catching up after a pause
            }
        }
    }

    static synchronized void report(long start, AtomicLong sent, AtomicLong errors, AtomicLongArray acked,
            Driver.Histogram lat, List<KafkaProducer<byte[], byte[]>> producers) {
        StringBuilder b = new StringBuilder("T ");
        b.append(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).append(' ').append(sent.get()).append(' ')
                .append(errors.get()).append(" | ack");
        for (int i = 0; i < acked.length(); i++) {
            b.append(' ').append(acked.getAndSet(i, 0));
        }
        b.append(" | lat").append(lat.drain()).append(" | node");
        Map<String, Double> nodes = new HashMap<>();
        for (KafkaProducer<byte[], byte[]> prod : producers) {
            for (Map.Entry<MetricName, ? extends Metric> e : prod.metrics().entrySet()) {
                MetricName m = e.getKey();
                String node = m.tags().get("node-id");
                if (m.name().equals("outgoing-byte-total") && m.group().equals("producer-node-metrics") && node != null
                        && node.startsWith("node-")) {
                    Object v = e.getValue().metricValue();
                    if (v instanceof Double) {
                        nodes.merge(node.substring(5), (Double) v, Double::sum);
                    }
                }
            }
        }
        for (Map.Entry<String, Double> e : nodes.entrySet()) {
            b.append(' ').append(e.getKey()).append('=').append(e.getValue().longValue());
        }
        Driver.emit(b.toString());
    }
}
