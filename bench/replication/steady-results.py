#!/usr/bin/env python3
"""Reports of bench/replication/steady.

  steady-results.py report RAW   raw `M side run metric value` lines -> Markdown:
                                 medians per side, weir/Kafka ratios, every run
  steady-results.py profile DIR  the profiled run's DIR.t{0,1}, DIR.metrics{1,2,3}.{0,1}
                                 (Prometheus text) and DIR.perfstat{1,2,3} (perf stat -x,)
                                 -> per node rates: requests, system calls, context
                                 switches, CPU
  steady-results.py syscalls SECONDS DIR  DIR.syscalls{1,2,3} (perf stat -x, on the
                                 syscalls:sys_enter_* tracepoints over SECONDS)
                                 -> the most frequent system calls per node, per second
"""
import re
import statistics
import sys

NODES = ["node1_cpu_s", "node2_cpu_s", "node3_cpu_s"]
SIDES = ["weir", "kafka"]


def load(path):
    """{(side, run): {metric: value}} of the runs that did not fail."""
    runs = {}
    for line in open(path):
        f = line.split()
        if len(f) == 5 and f[0] == "M":
            runs.setdefault((f[1], int(f[2])), {})[f[3]] = float(f[4])
    for run in runs.values():
        if all(n in run for n in NODES):
            run["total_cpu_s"] = sum(run[n] for n in NODES)
            if run.get("records"):
                run["us_per_record"] = run["total_cpu_s"] * 1e6 / run["records"]
    return {k: v for k, v in runs.items() if not v.get("failed") and "total_cpu_s" in v}


ROWS = [
    ("broker CPU s, node 1", "node1_cpu_s", "{:.2f}"),
    ("broker CPU s, node 2", "node2_cpu_s", "{:.2f}"),
    ("broker CPU s, node 3", "node3_cpu_s", "{:.2f}"),
    ("broker CPU s, 3 nodes", "total_cpu_s", "{:.2f}"),
    ("broker CPU us per acknowledged record, 3 nodes", "us_per_record", "{:.1f}"),
    ("records acknowledged", "records", "{:,.0f}"),
    ("steady records/s", "steady_rps", "{:,.0f}"),
    ("steady p50 ms", "steady_p50_ms", "{:.0f}"),
    ("steady p99 ms", "steady_p99_ms", "{:.0f}"),
    ("steady p99.9 ms", "steady_p999_ms", "{:.0f}"),
]


def median(runs, side, metric):
    v = [r[metric] for (s, _), r in sorted(runs.items()) if s == side and metric in r]
    return statistics.median(v) if v else None


def cell(fmt, v):
    return "" if v is None else fmt.format(v)


def report(path):
    runs = load(path)
    counts = {s: sum(1 for (side, _) in runs if side == s) for s in SIDES}
    print(f"Medians over {counts['weir']} weir and {counts['kafka']} Kafka runs:\n")
    print("| metric | weir | Kafka | weir/Kafka |")
    print("|---|---:|---:|---:|")
    for label, metric, fmt in ROWS:
        w, k = median(runs, "weir", metric), median(runs, "kafka", metric)
        ratio = f"{w / k:.2f}" if w is not None and k else ""
        print(f"| {label} | {cell(fmt, w)} | {cell(fmt, k)} | {ratio} |")
    print("\nEvery run (CPU seconds of nodes 1, 2, 3 and their sum):\n")
    print("| side | run | node 1 | node 2 | node 3 | 3 nodes | us/record | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (side, run), r in sorted(runs.items(), key=lambda kv: (SIDES.index(kv[0][0]), kv[0][1])):
        cells = [cell("{:.2f}", r.get(m)) for m in NODES + ["total_cpu_s"]]
        cells += [cell("{:.1f}", r.get("us_per_record")), cell("{:.0f}", r.get("steady_p50_ms")),
                  cell("{:.0f}", r.get("steady_p99_ms"))]
        print(f"| {side} | {run} | " + " | ".join(cells) + " |")
    pairs = [(runs[("weir", n)]["total_cpu_s"], runs[("kafka", n)]["total_cpu_s"])
             for (s, n) in sorted(runs) if s == "weir" and ("kafka", n) in runs]
    if pairs:
        print("\nweir/Kafka broker CPU, 3 nodes, per run: " + ", ".join(f"{w / k:.2f}" for w, k in pairs))


SAMPLE = re.compile(r'^(weir_server_requests_total|weir_fetch_requests_total|weir_fetch_partition_reads_total|'
                    r'weir_fetch_response_partitions_total)\{(\w+)="([^"]*)"\} ([\d.e+]+)$')


def counters(path):
    out = {}
    for line in open(path):
        m = SAMPLE.match(line.strip())
        if m:
            out[(m.group(1), m.group(3))] = float(m.group(4))
    return out


def perfstat(path):
    """{event: count} of a `perf stat -x,` output file."""
    out = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) >= 3 and f[0] and not line.startswith("#"):
            try:
                out[f[2]] = float(f[0])
            except ValueError:
                pass
    return out


def profile(d):
    secs = float(open(d + ".t1").read()) - float(open(d + ".t0").read())
    print(f"\nProfiled window {secs:.1f} s, per node (per second; per request = per Fetch + Produce request served):\n")
    print("| node | CPU cores | Produce req/s | Fetch req/s | fetch partition reads/s | fetch partitions answered/s "
          "| syscalls/s | context switches/s | syscalls per request | CPU us per request |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (1, 2, 3):
        a, b = counters(f"{d}.metrics{n}.0"), counters(f"{d}.metrics{n}.1")
        rate = lambda name, label: sum(b[k] - a.get(k, 0) for k in b if k[0] == name and (label is None or k[1] == label)) / secs
        produce, fetch = rate("weir_server_requests_total", "Produce"), rate("weir_server_requests_total", "Fetch")
        reads, answered = rate("weir_fetch_partition_reads_total", None), rate("weir_fetch_response_partitions_total", None)
        p = perfstat(f"{d}.perfstat{n}")
        sys_s, cs_s = p.get("raw_syscalls:sys_enter", 0) / secs, p.get("context-switches", 0) / secs
        cores = p.get("task-clock", 0) / 1e3 / secs  # task-clock is in ms
        req = produce + fetch
        per = lambda x: f"{x / req:.1f}" if req else ""
        print(f"| {n} | {cores:.2f} | {produce:,.0f} | {fetch:,.0f} | {reads:,.0f} | {answered:,.0f} | {sys_s:,.0f} "
              f"| {cs_s:,.0f} | {per(sys_s)} | {per(cores * 1e6)} |")


def syscalls(secs, d, top=10):
    counts = {n: perfstat(f"{d}.syscalls{n}") for n in (1, 2, 3)}
    names = sorted({e for c in counts.values() for e in c}, key=lambda e: -sum(c.get(e, 0) for c in counts.values()))
    names = [e for e in names if sum(c.get(e, 0) for c in counts.values()) > 0][:top]
    print(f"\nSystem calls per second by kind over {secs:g} s (the {len(names)} most frequent):\n")
    print("| system call | node 1 | node 2 | node 3 |")
    print("|---|---:|---:|---:|")
    for e in names:
        print(f"| {e.removeprefix('syscalls:sys_enter_')} | " + " | ".join(f"{counts[n].get(e, 0) / secs:,.0f}" for n in (1, 2, 3)) + " |")
    print("| all | " + " | ".join(f"{sum(counts[n].values()) / secs:,.0f}" for n in (1, 2, 3)) + " |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "profile":
        profile(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "syscalls":
        syscalls(float(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(__doc__)
