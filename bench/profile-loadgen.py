#!/usr/bin/env python3
"""Summarise a Java Flight Recorder recording of the load generator.

  profile-loadgen.py FILE.jfr

Prints the CPU samples per thread, the methods the samples were in (self)
and the Kafka client methods they passed through (inclusive), and the
time spent in garbage collection, from `jfr print --json`.
"""
import collections
import json
import os
import re
import subprocess
import sys


def events(path, names):
    out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "40", "--events", ",".join(names), path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["recording"]["events"]


def method(frame):
    m = frame.get("method") or {}
    t = (m.get("type") or {}).get("name", "?")
    return f"{t}.{m.get('name', '?')}"


def thread_name(sample):
    t = sample["values"].get("sampledThread") or {}
    name = t.get("javaName") or t.get("osName") or "?"
    return re.sub(r"\d+", "N", name)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    samples = events(path, ["jdk.ExecutionSample"])
    total = len(samples)
    if not total:
        sys.exit("profile-loadgen: no execution samples in the recording")
    threads = collections.Counter(thread_name(s) for s in samples)
    self_m = collections.Counter()
    incl = collections.Counter()
    for s in samples:
        frames = (s["values"].get("stackTrace") or {}).get("frames") or []
        if not frames:
            continue
        self_m[method(frames[0])] += 1
        seen = set()
        for f in frames:
            name = method(f)
            if name.startswith("org.apache.kafka.") and name not in seen:
                seen.add(name)
                incl[name] += 1

    print(f"## load generator (JFR, {total} CPU samples of Java threads)")
    print()
    print("| thread | share of samples |")
    print("|---|---:|")
    for name, n in threads.most_common(8):
        print(f"| {name} | {n / total:.0%} |")
    print()
    print("| method the sample was in (self) | share |")
    print("|---|---:|")
    for name, n in self_m.most_common(20):
        print(f"| {name} | {n / total:.1%} |")
    print()
    print("| Kafka client method on the stack (inclusive) | share |")
    print("|---|---:|")
    for name, n in incl.most_common(20):
        print(f"| {name} | {n / total:.0%} |")

    cores = os.cpu_count() or 1
    per_thread = collections.defaultdict(list)
    for e in events(path, ["jdk.ThreadCPULoad"]):
        t = e["values"].get("eventThread") or {}
        name = re.sub(r"\d+", "N", t.get("javaName") or t.get("osName") or "?")
        per_thread[name].append(e["values"]["user"] + e["values"]["system"])
    if per_thread:
        print()
        print("| thread | CPU, cores (mean of 1 s samples) | busiest second |")
        print("|---|---:|---:|")
        ranked = sorted(per_thread.items(), key=lambda kv: -sum(kv[1]) / len(kv[1]))
        for name, loads in ranked[:6]:
            print(f"| {name} | {cores * sum(loads) / len(loads):.2f} | {cores * max(loads):.2f} |")

    gcs = events(path, ["jdk.GarbageCollection"])
    pause = 0.0
    for g in gcs:
        d = g["values"].get("sumOfPauses") or g["values"].get("duration") or "PT0S"
        m = re.match(r"PT(?:([\d.]+)M)?([\d.]+)S", d)
        if m:
            pause += float(m.group(1) or 0) * 60 + float(m.group(2))
    loads = events(path, ["jdk.CPULoad"])
    if loads:
        user = sum(e["values"]["jvmUser"] for e in loads) / len(loads)
        system = sum(e["values"]["jvmSystem"] for e in loads) / len(loads)
        machine = sum(e["values"]["machineTotal"] for e in loads) / len(loads)
        print()
        print(f"JVM CPU load (average of {len(loads)} samples, share of the whole machine): "
              f"user {user:.0%}, system {system:.0%}; machine total {machine:.0%}")
    print(f"garbage collections: {len(gcs)}, pauses {pause:.2f} s in total")


if __name__ == "__main__":
    main()
