#!/usr/bin/env python3
"""Counts test results for test/compat/run.

    tally.py gojson FILE      `go test -json` output: leaf tests (a test with
                              subtests counts through its subtests)
    tally.py junit FILE...    JUnit XML (Maven Surefire, pytest --junitxml)

Prints one line: "PASSED FAILED SKIPPED". Errors count as failures.
"""
import json
import sys
import xml.etree.ElementTree as ET


def gojson(path):
    final = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            test = ev.get("Test")
            if test and ev.get("Action") in ("pass", "fail", "skip"):
                final[(ev.get("Package"), test)] = ev["Action"]
    parents = {(pkg, name.rsplit("/", 1)[0]) for pkg, name in final if "/" in name}
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for key, action in final.items():
        if key not in parents:
            counts[action] += 1
    return counts["pass"], counts["fail"], counts["skip"]


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
    if len(argv) < 3 or argv[1] not in ("gojson", "junit"):
        print(__doc__, file=sys.stderr)
        return 2
    result = gojson(argv[2]) if argv[1] == "gojson" else junit(argv[2:])
    print(*result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
