package weir.scenario;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the scenario drivers share: argument parsing, the latency histogram (the same buckets as
 * scenario/histogram.go, so the Go side merges counts exactly), the control lines read from stdin
 * and the report lines written to stdout.
 *
 * <p>Control (stdin, one per line): {@code ON 1|0} (produce or consume now), {@code NOPROC 1|0}
 * (consumers: skip processing time), {@code RATE r} (producers: total records/s of this driver, 0
 * for the schedule), {@code BUDGET n} (producers: records still allowed, -1 none), {@code QUIT}.
 * End of input quits too.
 */
final class Driver {
    private Driver() {}

    /** "buckets US..." prints each latency's bucket, for the Go side's test of the shared layout. */
    public static void main(String[] args) {
        if (args.length < 1 || !args[0].equals("buckets")) {
            fail("usage: Driver buckets US...");
        }
        StringBuilder b = new StringBuilder();
        for (int i = 1; i < args.length; i++) {
            b.append(i > 1 ? " " : "").append(bucketOf(Long.parseLong(args[i])));
        }
        emit(b.toString());
    }

    static final int SUB = 32;
    static final int LINEAR = 2 * SUB;
    static final int BUCKETS = LINEAR + 32 * SUB;

    /** Bucket of a latency in microseconds: exact below 64 us, then 32 per power of two. */
    static int bucketOf(long us) {
        if (us < LINEAR) {
            return (int) Math.max(us, 0);
        }
        int exp = 63 - Long.numberOfLeadingZeros(us);
        int sub = (int) (us >>> (exp - 5)) - SUB;
        return Math.min(LINEAR + (exp - 6) * SUB + sub, BUCKETS - 1);
    }

    /** A histogram several threads record into; drained by the reporter. */
    static final class Histogram {
        private final AtomicLongArray counts = new AtomicLongArray(BUCKETS);
        private final java.util.concurrent.atomic.AtomicLong max = new java.util.concurrent.atomic.AtomicLong();

        void record(long micros) {
            counts.incrementAndGet(bucketOf(micros));
            max.accumulateAndGet(micros, Math::max);
        }

        /** "b:c b:c ... max=us" of the counts since the last drain, and zeroes them. */
        String drain() {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < BUCKETS; i++) {
                long c = counts.getAndSet(i, 0);
                if (c != 0) {
                    b.append(' ').append(i).append(':').append(c);
                }
            }
            b.append(" max=").append(max.getAndSet(0));
            return b.toString();
        }
    }

    /** --key value pairs; --config k=v may repeat. */
    static Map<String, String> parse(String[] args, Map<String, String> configs) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                fail("unexpected argument " + args[i]);
            }
            String k = args[i].substring(2);
            if (k.equals("config")) {
                int eq = args[i + 1].indexOf('=');
                if (eq <= 0) {
                    fail("--config wants k=v, got " + args[i + 1]);
                }
                configs.put(args[i + 1].substring(0, eq), args[i + 1].substring(eq + 1));
            } else {
                m.put(k, args[i + 1]);
            }
        }
        return m;
    }

    static String need(Map<String, String> a, String k) {
        String v = a.get(k);
        if (v == null) {
            fail("missing --" + k);
        }
        return v;
    }

    static void fail(String msg) {
        System.err.println("scenario driver: " + msg);
        System.exit(2);
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Runs on its own daemon thread, applying control lines until QUIT or end of input. */
    interface Control {
        void apply(String cmd, String arg);
    }

    static Thread control(Control c) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    String[] f = line.trim().split("\\s+", 2);
                    if (f[0].isEmpty()) {
                        continue;
                    }
                    if (f[0].equals("QUIT")) {
                        break;
                    }
                    c.apply(f[0], f.length > 1 ? f[1] : "");
                }
            } catch (Exception e) {
                // stdin closed: quit
            }
            c.apply("QUIT", "");
        }, "scenario-control");
        t.setDaemon(true);
        t.start();
        return t;
    }
}
