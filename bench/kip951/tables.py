#!/usr/bin/env python3
"""Tables of bench/kip951/run from its raw files (M lines and ackgap kill lines)."""
import re
import statistics
import sys
from collections import defaultdict


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x):
    if x != x:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}"


def main(paths):
    m = defaultdict(lambda: defaultdict(list))  # (exp, side) -> metric -> values
    kills = []
    baseline = []
    for path in paths:
        for line in open(path):
            f = line.split()
            if len(f) == 6 and f[0] == "M":
                _, exp, side, _run, metric, value = f
                m[(exp, side)][metric].append(float(value))
            elif line.startswith("kill ") and "global_gap_ms=" in line:
                kills.append(dict(re.findall(r"(\w+)=([\w.]+)", line)))
            elif line.startswith("baseline "):
                baseline.append(dict(re.findall(r"(\w+)=([\w.]+)", line)))

    if ("kip951", "true") in m or ("kip951", "false") in m:
        on, off = m[("kip951", "true")], m[("kip951", "false")]
        n = max(len(on["p999"]), len(off["p999"]))
        print(f"### KIP-951: produce latency over the whole run while every leadership moves (median of {n} runs per side)\n")
        print("| metric | hints on | hints off | off/on |")
        print("|---|---:|---:|---:|")
        rows = [("p50 (ms)", "p50"), ("p99 (ms)", "p99"), ("p99.9 (ms)", "p999"), ("max (ms)", "max"), ("avg (ms)", "avg"),
                ("rate achieved (rec/s)", "rate"),
                ("steady-state p99 (ms, after warm-up records)", "steady_p99"), ("steady-state p99.9 (ms)", "steady_p999"),
                ("steady-state max (ms)", "steady_max"),
                ("first second's max (ms, the client's start)", "first_second_max"),
                ("max of the seconds around the move (ms)", "move_window_max"),
                ("max of the other seconds after the first 5 (ms)", "other_seconds_max"),
                ("partitions whose leader moved", "move_moved"), ("reassignment request to visible on all brokers (ms)", "move_reassign_visible_ms"),
                ("ElectLeaders request (ms)", "move_elect_req_ms"), ("election to new leaders on all brokers (ms)", "move_converge_ms"),
                ("whole move (ms)", "move_total_ms"), ("machine CPU used (cores)", "machine_cpu_s_per_s")]
        for name, k in rows:
            a, b = med(on[k]), med(off[k])
            ratio = f"{b / a:.2f}" if a and a == a and b == b and k in ("p99", "p999", "max", "avg", "steady_p99", "steady_p999", "steady_max", "first_second_max", "move_window_max", "other_seconds_max") else ""
            print(f"| {name} | {fmt(a)} | {fmt(b)} | {ratio} |")
        print("\nPer run (p99 / p99.9 / max ms):\n")
        print(f"- hints on: " + ", ".join(f"{a:.0f}/{b:.0f}/{c:.0f}" for a, b, c in zip(on["p99"], on["p999"], on["max"])))
        print(f"- hints off: " + ", ".join(f"{a:.0f}/{b:.0f}/{c:.0f}" for a, b, c in zip(off["p99"], off["p999"], off["max"])))
        print()

    if ("rf", "3") in m or ("rf", "1") in m:
        r3, r1 = m[("rf", "3")], m[("rf", "1")]
        n = max(len(r3["rate"]), len(r1["rate"]))
        print(f"### Single partition, unthrottled (acks=all unless the raw header adds acks=1): RF 3 against RF 1 (median of {n} runs per side)\n")
        print("| metric | RF 3 | RF 1 | RF3/RF1 |")
        print("|---|---:|---:|---:|")
        for name, k in [("records/s", "rate"), ("MB/s", "mb_s"), ("p50 (ms)", "p50"), ("p99 (ms)", "p99"),
                        ("machine CPU used (cores)", "machine_cpu_s_per_s"),
                        ("leader CPU per record (us)", "leader_cpu_us_per_record"),
                        ("followers' CPU (s)", "followers_cpu_s")]:
            if k not in r3 and k not in r1:
                continue  # raw files from before the per-node figures
            a, b = med(r3.get(k, [])), med(r1.get(k, []))
            print(f"| {name} | {fmt(a)} | {fmt(b)} | {a / b:.2f} |" if b else f"| {name} | {fmt(a)} | {fmt(b)} | |")
        # Runs alternate, so run i of each side are neighbours in time.
        ratios = [a / b for a, b in zip(r3["rate"], r1["rate"]) if b]
        if ratios:
            print(f"\nPer-run RF3/RF1 throughput ratios (neighbouring runs): {', '.join(f'{x:.2f}' for x in ratios)}; median {med(ratios):.2f}\n")

    if kills:
        g = [float(k["global_gap_ms"]) for k in kills]
        pg = [float(k["partition_gap_ms"]) for k in kills]
        ml = [float(k["max_latency_ms"]) for k in kills]
        rg = [float(k["restart_global_gap_ms"]) for k in kills]
        rml = [float(k["restart_max_latency_ms"]) for k in kills]
        print(f"### Acknowledgement stall after SIGKILL of a leader under load ({len(kills)} kills)\n")
        print("| kill | node | controller | partitions it led | longest time with no ack (ms) | longest gap of one partition (ms) | slowest record (ms) | lost | after restart: no-ack gap / slowest (ms) | full ISR after (ms) |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for i, k in enumerate(kills, 1):
            print(f"| {i} | {k['node']} | {k['controller']} | {k['led']} | {fmt(float(k['global_gap_ms']))} | {fmt(float(k['partition_gap_ms']))} | "
                  f"{fmt(float(k['max_latency_ms']))} | {k['lost']} | {fmt(float(k['restart_global_gap_ms']))} / {fmt(float(k['restart_max_latency_ms']))} | {fmt(float(k['isr_full_after_kill_ms']))} |")
        print(f"| **median** | | | | **{fmt(med(g))}** | **{fmt(med(pg))}** | **{fmt(med(ml))}** | | {fmt(med(rg))} / {fmt(med(rml))} | |")
        print(f"| **max** | | | | **{fmt(max(g))}** | **{fmt(max(pg))}** | **{fmt(max(ml))}** | | {fmt(max(rg))} / {fmt(max(rml))} | |")
        if baseline:
            b = baseline[0]
            print(f"\nBefore the first kill: longest no-ack gap {b['global_gap_ms']} ms, longest one-partition gap {b['partition_gap_ms']} ms, slowest record {b['max_latency_ms']} ms.\n")


if __name__ == "__main__":
    main(sys.argv[1:])
