package org.apache.kafka.clients.producer.internals;

import java.lang.reflect.Field;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import java.util.Set;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Utils;

/**
 * Drives the Java client's BuiltInPartitioner (the KIP-794 sticky partitioner the record
 * accumulator uses for unkeyed records) through fixed scenarios and prints a transcript: every
 * operation, the raw 32-bit random values it consumed and the resulting sticky partition. The Go
 * test replays each line with the same random values and must reach the same partitions.
 *
 * This class lives in the producer's internals package only because the methods it calls
 * (peekCurrentPartitionInfo, updatePartitionInfo, randomPartition) are package-private.
 */
public final class BuiltInTranscript {
    private static final String TOPIC = "t";

    /** A BuiltInPartitioner whose random numbers come from a script or a seeded generator. */
    static final class Scripted extends BuiltInPartitioner {
        private final Deque<Integer> script = new ArrayDeque<>();
        private final Random seeded;
        final List<Integer> consumed = new ArrayList<>();

        Scripted(int batchSize, Random seeded) {
            super(new LogContext(), TOPIC, batchSize);
            this.seeded = seeded;
        }

        void script(int... raw) {
            for (int r : raw) script.addLast(r);
        }

        @Override
        int randomPartition() {
            int raw = script.isEmpty() ? seeded.nextInt() : script.pollFirst();
            consumed.add(raw);
            return Utils.toPositive(raw);
        }

        String drainConsumed() {
            if (consumed.isEmpty()) return "-";
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < consumed.size(); i++) {
                if (i > 0) sb.append(',');
                sb.append(Integer.toUnsignedString(consumed.get(i)));
            }
            consumed.clear();
            return sb.toString();
        }
    }

    private final StringBuilder out = new StringBuilder();
    private Scripted bp;
    private Cluster cluster;

    private void scenario(String name, int partitions, int batchSize, Set<Integer> leaderless, long seed) {
        Node node = new Node(1, "localhost", 9092);
        List<PartitionInfo> parts = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            Node leader = leaderless.contains(p) ? null : node;
            parts.add(new PartitionInfo(TOPIC, p, leader, new Node[] {node}, new Node[] {node}));
        }
        cluster = new Cluster("c", List.of(node), parts, Set.of(), Set.of());
        bp = new Scripted(batchSize, new Random(seed));
        out.append("\nscenario ").append(name)
           .append(" partitions=").append(partitions)
           .append(" batch=").append(batchSize)
           .append(" leaderless=").append(leaderless.isEmpty() ? "-" : join(leaderless.stream().sorted().mapToInt(i -> i).toArray()))
           .append('\n');
    }

    private void peek() {
        int p = bp.peekCurrentPartitionInfo(cluster).partition();
        out.append("peek r=").append(bp.drainConsumed()).append(" -> ").append(p).append('\n');
    }

    private void update(int bytes, boolean enableSwitch) {
        BuiltInPartitioner.StickyPartitionInfo info = bp.peekCurrentPartitionInfo(cluster);
        String before = bp.drainConsumed();
        if (!before.equals("-")) throw new IllegalStateException("update without a current partition");
        bp.updatePartitionInfo(info, bytes, cluster, enableSwitch);
        int p = bp.peekCurrentPartitionInfo(cluster).partition();
        out.append("update bytes=").append(bytes).append(" switch=").append(enableSwitch)
           .append(" r=").append(bp.drainConsumed()).append(" -> ").append(p).append('\n');
    }

    private void stats(int[] queueSizes, int[] ids, int length) throws Exception {
        bp.updatePartitionLoadStats(queueSizes == null ? null : queueSizes.clone(), ids, length);
        Field f = BuiltInPartitioner.class.getDeclaredField("partitionLoadStats");
        f.setAccessible(true);
        String cft = f.get(bp) == null ? "none" : Integer.toString(bp.loadStatsRangeEnd());
        out.append("stats q=").append(queueSizes == null ? "nil" : join(queueSizes))
           .append(" ids=").append(ids == null ? "nil" : join(ids))
           .append(" len=").append(length)
           .append(" -> ").append(cft).append('\n');
    }

    private static String join(int[] a) {
        if (a.length == 0) return "-";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < a.length; i++) {
            if (i > 0) sb.append(',');
            sb.append(a[i]);
        }
        return sb.toString();
    }

    private void run() throws Exception {
        out.append("# generated by gen.sh from org.apache.kafka:kafka-clients:4.3.0 BuiltInPartitioner\n");
        out.append("# r= lists the raw 32-bit random values (unsigned decimal) each step consumed, in order\n");
        Random ops = new Random(794);

        // Uniform switching among partitions that have a leader, random byte deltas, some switches deferred.
        scenario("uniform-all-leaders", 5, 100, Set.of(), 1);
        peek();
        for (int i = 0; i < 80; i++) update(ops.nextInt(71), ops.nextInt(10) < 7);

        scenario("uniform-some-leaderless", 6, 100, Set.of(1, 4), 2);
        peek();
        for (int i = 0; i < 80; i++) update(ops.nextInt(71), ops.nextInt(10) < 7);

        scenario("no-leaders", 3, 50, Set.of(0, 1, 2), 3);
        peek();
        for (int i = 0; i < 30; i++) update(ops.nextInt(60), ops.nextInt(2) == 0);

        // Deferred switch and the 2x cap at exact boundaries.
        scenario("boundaries", 4, 100, Set.of(), 4);
        peek();
        update(99, true);
        update(1, false);
        update(0, true);
        update(100, false);
        update(99, false);
        update(1, false);
        update(199, false);
        update(0, true);
        update(250, true);
        update(1000, false);

        // The worked example from the KIP-794 code: queues (0,3,1) -> CFT (4,5,8).
        scenario("cft-worked-example", 3, 10, Set.of(), 5);
        stats(new int[] {0, 3, 1}, new int[] {0, 1, 2}, 3);
        bp.script(0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, -1, -2, 0x80000004, 0x80000005, Integer.MIN_VALUE);
        peek();
        for (int i = 0; i < 15; i++) update(20, false);

        // Partitions dropped by the availability timeout: the logical length is shorter than the array.
        scenario("cft-excluded", 5, 10, Set.of(), 6);
        stats(new int[] {2, 0, 1, 9, 9}, new int[] {0, 2, 4, 1, 3}, 3);
        peek();
        for (int i = 0; i < 40; i++) update(10 + ops.nextInt(15), true);

        scenario("all-equal", 3, 10, Set.of(), 7);
        stats(new int[] {3, 3, 3}, new int[] {0, 1, 2}, 3);
        peek();
        for (int i = 0; i < 10; i++) update(10, true);
        stats(new int[] {3, 3, 3}, new int[] {0, 2, 1}, 2);
        for (int i = 0; i < 10; i++) update(10, true);
        stats(new int[] {0, 0, 0}, new int[] {1, 0, 2}, 1);
        for (int i = 0; i < 5; i++) update(10, true);

        scenario("too-few", 2, 10, Set.of(), 8);
        stats(new int[] {5}, new int[] {1}, 1);
        stats(new int[] {5, 1}, new int[] {0, 1}, 0);
        stats(null, null, 0);
        peek();
        for (int i = 0; i < 6; i++) update(10, true);

        // Long mixed run: load stats change every few steps, lengths shrink and grow.
        scenario("mixed", 8, 1000, Set.of(3), 9);
        peek();
        for (int i = 0; i < 300; i++) {
            if (i % 5 == 0) {
                int n = 8;
                int[] q = new int[n];
                for (int j = 0; j < n; j++) q[j] = ops.nextInt(7);
                int[] ids = {0, 1, 2, 3, 4, 5, 6, 7};
                for (int j = n - 1; j > 0; j--) {
                    int k = ops.nextInt(j + 1);
                    int t = ids[j];
                    ids[j] = ids[k];
                    ids[k] = t;
                }
                int len = n - ops.nextInt(3);
                if (i % 35 == 0) Arrays.fill(q, 2);
                stats(q, ids, len);
            }
            update(ops.nextInt(1500), ops.nextInt(10) < 8);
        }
        System.out.print(out);
    }

    public static void main(String[] args) throws Exception {
        new BuiltInTranscript().run();
    }
}
