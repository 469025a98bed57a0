package weir.scenario;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Consumers of one scenario consumer entry, on Kafka's Java client, for `weir scenario run` with
 * {@code client: java}: {@code --count} members of one group (a classic/consumer group with
 * KafkaConsumer, or a share group with KafkaShareConsumer, implicit acknowledgement), each on its
 * own thread, polling while the runner says so and sleeping each poll's simulated processing time.
 *
 * <p>Every {@code --report-ms} (and once more at the end) it prints:
 *
 * <pre>
 * T elapsed_ms | del c0 c1 ... | distinct d0 d1 ... | lat b:c ... max=us
 * </pre>
 *
 * del: records delivered per partition since the last line (redeliveries count); distinct: distinct
 * (partition, offset) pairs delivered per partition since the start, over all members; lat: the
 * end-to-end latency histogram (record timestamp to delivery) since the last line. "DONE" follows.
 */
public final class ScenarioConsumer {
    private ScenarioConsumer() {}

    /** One member's poll loop: KafkaConsumer or KafkaShareConsumer behind one face. */
    interface Member extends AutoCloseable {
        /** Polls once; calls seen for each record (partition, offset, timestamp ms). */
        int poll(Seen seen);
    }

    interface Seen {
        void record(int partition, long offset, long timestampMs);
    }

    static volatile boolean on;
    static volatile boolean noProcessing;
    static volatile boolean quit;

    public static void main(String[] args) throws Exception {
        Map<String, String> configs = new HashMap<>();
        Map<String, String> a = Driver.parse(args, configs);
        String type = Driver.need(a, "type");
        String topic = Driver.need(a, "topic");
        int partitions = Integer.parseInt(Driver.need(a, "partitions"));
        int count = Integer.parseInt(a.getOrDefault("count", "1"));
        long reportMs = Long.parseLong(a.getOrDefault("report-ms", "1000"));
        String[] proc = a.getOrDefault("processing", "0:0:1").split(":");
        double minMs = Double.parseDouble(proc[0]);
        double maxMs = Double.parseDouble(proc[1]);
        int parallelism = Integer.parseInt(proc[2]);

        Properties p = new Properties();
        p.put("bootstrap.servers", Driver.need(a, "bootstrap"));
        p.put("group.id", Driver.need(a, "group"));
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        if (type.equals("share")) {
            p.put("share.acquire.mode", Driver.need(a, "mode"));
            p.put("share.acknowledgement.mode", "implicit");
        } else {
            p.put("auto.offset.reset", "earliest");
        }
        p.putAll(configs);

        AtomicLongArray delivered = new AtomicLongArray(partitions);
        BitSet[] seen = new BitSet[partitions];
        long[] distinct = new long[partitions];
        for (int i = 0; i < partitions; i++) {
            seen[i] = new BitSet();
        }
        Driver.Histogram lat = new Driver.Histogram();
        Driver.control((cmd, arg) -> {
            switch (cmd) {
                case "ON":
                    on = arg.equals("1");
                    break;
                case "NOPROC":
                    noProcessing = arg.equals("1");
                    break;
                case "QUIT":
                    quit = true;
                    break;
                default:
                    break;
            }
        });
        long start = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Properties pi = new Properties();
            pi.putAll(p);
            pi.putIfAbsent("client.id", "scenario-consumer-" + i);
            final int inst = i;
            Member m = type.equals("share") ? share(pi, topic) : new GroupMember(pi, topic);
            Thread t = new Thread(() -> {
                Random rng = new Random(inst);
                try (Member mem = m) {
                    while (!quit) {
                        if (!on) {
                            Thread.sleep(20);
                            continue;
                        }
                        // Stamped when the poll has returned (its records are handed
                        // over after it), not when it started: a record that arrived
                        // during the poll waited until then.
                        long[] now = {0};
                        int n = mem.poll((part, off, ts) -> {
                            if (now[0] == 0) {
                                now[0] = System.currentTimeMillis();
                            }
                            lat.record(Math.max(0, now[0] - ts) * 1000);
                            if (part < 0 || part >= partitions) {
                                return;
                            }
                            delivered.incrementAndGet(part);
                            synchronized (seen) {
                                if (!seen[part].get((int) off)) {
                                    seen[part].set((int) off);
                                    distinct[part]++;
                                }
                            }
                        });
                        if (n > 0 && !noProcessing && maxMs > 0) {
                            Thread.sleep((long) processingMs(n, minMs, maxMs, parallelism, rng));
                        }
                    }
                } catch (Exception e) {
                    System.err.println("scenario consumer " + inst + ": " + e);
                }
            }, "scenario-consumer-" + i);
            t.start();
            threads.add(t);
        }
        while (!quit) {
            Thread.sleep(reportMs);
            report(start, delivered, seen, distinct, lat);
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(60));
        }
        report(start, delivered, seen, distinct, lat);
        Driver.emit("DONE");
        System.exit(0);
    }

    /** As scenario/clients.go processingTime: each record to the lane that frees first. */
    static double processingMs(int n, double minMs, double maxMs, int parallelism, Random rng) {
        int lanes = parallelism < 0 || parallelism > n ? n : parallelism;
        double[] busy = new double[Math.max(lanes, 1)];
        for (int i = 0; i < n; i++) {
            int best = 0;
            for (int j = 1; j < busy.length; j++) {
                if (busy[j] < busy[best]) {
                    best = j;
                }
            }
            busy[best] += minMs + (maxMs - minMs) * rng.nextDouble();
        }
        double max = 0;
        for (double b : busy) {
            max = Math.max(max, b);
        }
        return max;
    }

    static Member share(Properties p, String topic) throws Exception {
        // Loaded by name: the class needs kafka-clients 4, and the driver
        // also builds against 3.x (without it) for the producers.
        return (Member) Class.forName("weir.scenario.ShareMember").getDeclaredConstructor(Properties.class, String.class)
                .newInstance(p, topic);
    }

    static void report(long start, AtomicLongArray delivered, BitSet[] seen, long[] distinct, Driver.Histogram lat) {
        StringBuilder b = new StringBuilder("T ");
        b.append(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).append(" | del");
        for (int i = 0; i < delivered.length(); i++) {
            b.append(' ').append(delivered.getAndSet(i, 0));
        }
        b.append(" | distinct");
        synchronized (seen) {
            for (long d : distinct) {
                b.append(' ').append(d);
            }
        }
        b.append(" | lat").append(lat.drain());
        Driver.emit(b.toString());
    }
}
