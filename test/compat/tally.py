#!/usr/bin/env python3
"""Counts test results for test/compat/run.

    tally.py gojson FILE [RESULTS]   `go test -json` output: counts leaf tests (a
                                     test with subtests counts through them); a
                                     test that started and never finished (the
                                     binary timed out or crashed) counts as failed.
                                     With RESULTS, also writes one line per test,
                                     "PASS|FAIL|SKIP|UNFINISHED name seconds".
    tally.py junit FILE...           JUnit XML (Maven Surefire, pytest --junitxml)

Prints one line: "PASSED FAILED SKIPPED". Errors count as failures.

    tally.py gotext FILE             prints the test output carried in `go test -json`
"""
import json
import sys
import xml.etree.ElementTree as ET


def gojson(path, results=None):
    final = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            test, action = ev.get("Test"), ev.get("Action")
            if not test:
                continue
            key = (ev.get("Package"), test)
            if action == "run":
                final.setdefault(key, ("unfinished", 0.0))
            elif action in ("pass", "fail", "skip"):
                final[key] = (action, ev.get("Elapsed", 0.0))
    if results:
        with open(results, "w", encoding="utf-8") as f:
            for (_, name), (action, elapsed) in sorted(final.items(), key=lambda kv: kv[0][1]):
                f.write(f"{action.upper()} {name} {elapsed:.2f}\n")
    parents = {(pkg, name.rsplit("/", 1)[0]) for pkg, name in final if "/" in name}
    counts = {"pass": 0, "fail": 0, "skip": 0, "unfinished": 0}
    for key, (action, _) in final.items():
        if key not in parents:
            counts[action] += 1
    return counts["pass"], counts["fail"] + counts["unfinished"], counts["skip"]


def gotext(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                sys.stdout.write(line)
                continue
            if ev.get("Action") == "output":
                sys.stdout.write(ev["Output"])


def junit(paths):
    passed = failed = skipped = 0
    for path in paths:
        root = ET.parse(path).getroot()
        for case in root.iter("testcase"):
            kinds = {child.tag for child in case}
            if kinds & {"failure", "error"}:
                failed += 1
            elif "skipped" in kinds:
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped


def main(argv):
    if len(argv) < 3 or argv[1] not in ("gojson", "gotext", "junit"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "gotext":
        gotext(argv[2])
        return 0
    if argv[1] == "gojson":
        result = gojson(argv[2], argv[3] if len(argv) > 3 else None)
    else:
        result = junit(argv[2:])
    print(*result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
