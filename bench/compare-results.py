#!/usr/bin/env python3
"""Parsing and reporting for bench/compare.

  compare-results.py producer FILE   ProducerPerformance summary -> "key value" lines
  compare-results.py consumer FILE   ConsumerPerformance summary -> "key value" lines
  compare-results.py report RAW      raw results -> Markdown table of medians and ratios
"""
import re
import statistics
import sys

PRODUCER_SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th")
PRODUCER_KEYS = ["records", "rps", "mbps", "avg_ms", "max_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"]
# With --warmup-records the tool adds a line for the records after the
# warm-up ("N steady state records sent, ...").
STEADY_SUMMARY = re.compile(PRODUCER_SUMMARY.pattern.replace(" records sent", " steady state records sent", 1))

CONSUMER_KEYS = {
    "data.consumed.in.nMsg": "records",
    "MB.sec": "mbps_total",
    "nMsg.sec": "rps_total",
    "rebalance.time.ms": "rebalance_ms",
    "fetch.time.ms": "fetch_ms",
    "fetch.MB.sec": "mbps",
    "fetch.nMsg.sec": "rps",
}


def producer(path):
    found = steady = None
    with open(path) as f:
        for line in f:
            found = PRODUCER_SUMMARY.search(line) or found
            steady = STEADY_SUMMARY.search(line) or steady
    if not found:
        sys.exit(f"compare-results: no ProducerPerformance summary in {path}")
    for key, value in zip(PRODUCER_KEYS, found.groups()):
        print(key, value)
    if steady:
        for key, value in zip(PRODUCER_KEYS, steady.groups()):
            print("steady_" + key, value)


def consumer(path):
    with open(path) as f:
        lines = [l.strip() for l in f if l.strip()]
    header = next((i for i, l in enumerate(lines) if l.startswith("start.time")), None)
    if header is None or header + 1 >= len(lines):
        sys.exit(f"compare-results: no ConsumerPerformance summary in {path}")
    names = [n.strip() for n in lines[header].split(",")]
    values = [v.strip() for v in lines[header + 1].split(",")]
    row = dict(zip(names, values))
    for name, key in CONSUMER_KEYS.items():
        if name not in row:
            sys.exit(f"compare-results: {name} missing from {path}")
        print(key, row[name])


def load(path):
    values = {}  # (broker, metric) -> [values in pair order]
    runs = {}  # (broker, pair) -> {metric: value}
    context = []
    for line in open(path):
        if line.startswith("M "):
            _, broker, pair, metric, value = line.split()
            values.setdefault((broker, metric), []).append(float(value))
            runs.setdefault((broker, pair), {})[metric] = float(value)
        elif line.startswith("# ") and not line.startswith("#   "):
            context.append(line[2:].rstrip())
    # Broker CPU per record of each phase that sent a known number of
    # records (the fixed-rate runs count their warm-up records: the CPU
    # is the broker's over the whole run).
    for (broker, _), run in runs.items():
        for metric, cpu in run.items():
            if not metric.endswith(".broker_cpu_s"):
                continue
            phase = metric[: -len(".broker_cpu_s")]
            records = run.get(f"{phase}.records")
            if records:
                values.setdefault((broker, f"{phase}.broker_cpu_us_per_record"), []).append(cpu / records * 1e6)
    return values, context


def fmt(v):
    if v is None:
        return "n/a"
    if v >= 10000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}"


def fmt_ratio(r):
    if r is None:
        return "n/a"
    return f"{r:.3f}" if r < 0.1 else f"{r:.2f}"


def report(path):
    values, context = load(path)
    header_rate = next((re.search(r"rate=([\d,]+)", c).group(1) for c in context if "rate=" in c), "")
    # Older results name one latency phase "latency": it ran at the one rate.
    for (broker, metric) in list(values):
        if metric.startswith("latency.") and header_rate.isdigit():
            values[(broker, f"latency_{header_rate}." + metric[len("latency."):])] = values.pop((broker, metric))
    rates = sorted({int(m.split(".")[0][len("latency_"):]) for (_, m) in values
                    if re.match(r"latency_\d+\.", m)})
    cores = next((int(re.search(r"machine: (\d+) cores", c).group(1)) for c in context if "machine: " in c), 0)

    def median(broker, metric):
        v = values.get((broker, metric))
        return statistics.median(v) if v else None

    def runs(broker, metric):
        return " / ".join(fmt(v) for v in values.get((broker, metric), [])) or "n/a"

    # (label, metric, better, target ratio or None)
    rows = [
        ("produce acks=1, records/s", "produce_acks1.rps", "higher", 1.5),
        ("produce acks=1, MB/s", "produce_acks1.mbps", "higher", 1.5),
        ("produce acks=all, records/s", "produce_acksall.rps", "higher", 1.5),
        ("produce acks=all, MB/s", "produce_acksall.mbps", "higher", 1.5),
        ("consume, MB/s (fetch phase)", "consume.mbps", "higher", 1.5),
        ("consume, records/s (fetch phase)", "consume.rps", "higher", 1.5),
        ("consume, MB/s incl. group join", "consume.mbps_total", "higher", None),
    ]
    for r in rates:
        rows += [
            (f"latency at {r} rec/s acks=all, p50 ms", f"latency_{r}.steady_p50_ms", "lower", None),
            (f"latency at {r} rec/s acks=all, p99 ms", f"latency_{r}.steady_p99_ms", "lower", 0.5),
            (f"latency at {r} rec/s acks=all, p99.9 ms", f"latency_{r}.steady_p999_ms", "lower", None),
            (f"latency run at {r} rec/s achieved, records/s", f"latency_{r}.steady_rps", "higher", None),
        ]
    rows += [
        ("broker peak RSS, MiB", "rss_peak_mib", "lower", 0.25),
        ("broker RSS after start-up, MiB", "rss_idle_mib", "lower", None),
        ("start-up to first ack, ms", "startup_ms", "lower", 0.05),
        ("start-up from the start command (Kafka: incl. storage format), ms", "startup_with_format_ms", "lower", None),
        ("unthrottled acks=1 p99 ms (queueing in the client)", "produce_acks1.p99_ms", "lower", None),
        ("broker CPU s, unthrottled acks=1 produce", "produce_acks1.broker_cpu_s", "lower", None),
        ("broker CPU s, unthrottled acks=all produce", "produce_acksall.broker_cpu_s", "lower", None),
        ("broker CPU s, consume", "consume.broker_cpu_s", "lower", None),
    ]
    for r in rates:
        rows += [
            (f"broker CPU s, {r} rec/s latency run", f"latency_{r}.broker_cpu_s", "lower", 0.25),
            (f"broker CPU us per record, {r} rec/s latency run", f"latency_{r}.broker_cpu_us_per_record", "lower", None),
        ]

    def unsustained(metric):
        m = re.match(r"latency_(\d+)\.", metric)
        if not m:
            return []
        return [b for b in ("weir", "kafka") if (median(b, f"latency_{m.group(1)}.steady_rps") or 0) < 0.97 * int(m.group(1))]
    out = []
    out.append("| measure | weir | Kafka | weir/Kafka | target | met |")
    out.append("|---|---:|---:|---:|---|---|")
    for label, metric, better, target in rows:
        w, k = median("weir", metric), median("kafka", metric)
        ratio = w / k if w is not None and k else None
        if metric.endswith("_ms") and metric.startswith("latency_") and w is not None and k is not None and max(w, k) < 2:
            ratio = None  # the tool reports whole milliseconds
        if target is None:
            goal, met = "", ""
        else:
            goal = (">= " if better == "higher" else "<= ") + f"{target:g}"
            if ratio is None:
                met = "n/a"
            else:
                met = "yes" if (ratio >= target if better == "higher" else ratio <= target) else "no"
                if unsustained(metric):
                    met += f" ({' and '.join(unsustained(metric))} below the rate)"
        out.append(f"| {label} | {fmt(w)} | {fmt(k)} | {fmt_ratio(ratio)} | {goal} | {met} |")

    # (label, metric, better, target of weir/ceiling or None)
    ceiling_rows = [(label, metric, better, 0.8 if better == "higher" and metric.endswith("rps") else None)
                    for label, metric, better, _ in rows
                    if metric.startswith(("produce_", "latency_", "consume."))
                    and not metric.endswith(("broker_cpu_s", "broker_cpu_us_per_record"))]
    # At a fixed rate the null broker sets the floor of the broker's CPU:
    # weir's own work is what it spends beyond it.
    for r in rates:
        ceiling_rows += [
            (f"broker CPU s, {r} rec/s latency run", f"latency_{r}.broker_cpu_s", "lower", 1.5),
            (f"broker CPU us per record, {r} rec/s latency run", f"latency_{r}.broker_cpu_us_per_record", "lower", None),
        ]
    if any(values.get(("null", m)) for _, m, _, _ in ceiling_rows):
        out.append("")
        out.append("The ceiling: the same load generator against weir `--null-storage`, a broker that "
                   "acknowledges produce without storing and answers fetches from memory (medians):")
        out.append("")
        out.append("| measure | null broker | weir | weir/ceiling | target | met | Kafka/ceiling |")
        out.append("|---|---:|---:|---:|---|---|---:|")
        for label, metric, better, target in ceiling_rows:
            n, w, k = median("null", metric), median("weir", metric), median("kafka", metric)
            if n is None:
                continue
            wr = w / n if w is not None and n else None
            kr = k / n if k is not None and n else None
            goal = met = ""
            if target is not None:
                goal = (">= " if better == "higher" else "<= ") + f"{target:g}"
                met = "n/a" if wr is None else ("yes" if (wr >= target if better == "higher" else wr <= target) else "no")
            if metric.endswith("_ms") and max(n, w or 0, k or 0) < 2:
                wr = kr = None  # whole milliseconds
            out.append(f"| {label} | {fmt(n)} | {fmt(w)} | {fmt_ratio(wr)} | {goal} | {met} | {fmt_ratio(kr)} |")

    notes = []
    for r in rates:
        for broker in ("weir", "kafka"):
            got = values.get((broker, f"latency_{r}.steady_rps"), [])
            short = [g for g in got if g < 0.97 * r]
            if short:
                notes.append(f"{broker} did not sustain {r} records/s in {len(short)} of {len(got)} latency runs "
                             f"({', '.join(fmt(g) for g in short)} records/s): its latencies there include queueing.")
            burst = [g for g in got if g > 1.03 * r]
            if burst:
                notes.append(f"{broker}: in {len(burst)} of {len(got)} latency runs at {r} records/s the load "
                             f"generator fell behind after its warm-up and caught up in a burst "
                             f"({', '.join(fmt(g) for g in burst)} records/s over the measured part): "
                             "those latencies include the burst.")
        slower = min((median(b, "produce_acksall.rps") or 0) for b in ("weir", "kafka"))
        if slower:
            notes.append(f"the fixed rate {r} records/s is {r / slower:.0%} of the slower broker's "
                         f"unthrottled acks=all median ({fmt(slower)} records/s).")
    for (broker, metric), v in sorted(values.items()):
        if metric.startswith("failed."):
            notes.append(f"{broker}: {metric[len('failed.'):]} failed in {len(v)} run(s): see the raw results.")

    out.append("")
    out.append("Per run (pair order), to judge the noise:")
    out.append("")
    out.append("| measure | weir runs | Kafka runs |")
    out.append("|---|---|---|")
    has_null = any(b == "null" for b, _ in values)
    if has_null:
        out[-2] = "| measure | weir runs | Kafka runs | null broker runs |"
        out[-1] = "|---|---|---|---|"
    for label, metric, _, _ in rows:
        if metric.endswith("broker_cpu_us_per_record"):
            continue  # the CPU seconds' runs over the records sent
        line = f"| {label} | {runs('weir', metric)} | {runs('kafka', metric)} |"
        if has_null:
            line += f" {runs('null', metric)} |"
        out.append(line)

    out.append("")
    out.append("Where the CPU went (medians, seconds; the machine has "
               f"{cores} cores shared by broker, load generator and anything else running):")
    out.append("")
    out.append("| phase | broker | wall | broker CPU | load generator CPU | interrupts (loopback TCP) | other processes | machine busy |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for phase in ["produce_acks1", "produce_acksall", "consume"] + [f"latency_{r}" for r in rates]:
        for broker in ("weir", "kafka", "null"):
            wall = median(broker, f"{phase}.wall_s")
            if wall is None:
                continue
            b, g, i, o = (median(broker, f"{phase}.{k}_cpu_s") or 0 for k in ("broker", "loadgen", "irq", "other"))
            # Process times and machine counters are sampled differently:
            # a saturated machine can add up to a little over 100%.
            busy = f"{min(1.0, (b + g + i + max(o, 0)) / (wall * cores)):.0%}" if cores and wall else "n/a"
            out.append(f"| {phase} | {broker} | {wall:.1f} | {b:.1f} | {g:.1f} | {i:.1f} | {o:.1f} | {busy} |")
    for (broker, metric), v in sorted(values.items()):
        if not metric.endswith(".other_cpu_s"):
            continue
        phase = metric[: -len(".other_cpu_s")]
        walls = values.get((broker, f"{phase}.wall_s"), [])
        busy = [o / w for o, w in zip(v, walls) if w and o / w > 0.25]
        if busy:
            notes.append(f"{broker} {phase}: other processes used {', '.join(f'{b:.2f}' for b in busy)} of a core "
                         f"on average in {len(busy)} of {len(v)} runs: those runs were disturbed.")

    if notes:
        out.append("")
        out.extend(f"- {n}" for n in notes)
    out.append("")
    out.append("Settings:")
    out.append("")
    out.extend(f"- {c}" for c in context)
    print("\n".join(out))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("producer", "consumer", "report"):
        sys.exit(__doc__)
    {"producer": producer, "consumer": consumer, "report": report}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
