#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints a readable account of it.

As tests end, each top-level test's result line (`--- PASS: TestX (1.2s)`);
at the end, the output of every failed test (its last OUTPUT_LINES lines,
subtests included), the output of a package that failed outside any test (a
build error, a panic, a timeout), one `FAILED PACKAGE TEST` line per failed
top-level test, and the summary line

    go test: N passed, N failed, N skipped

counting top-level tests; a package that failed outside its tests, or no
test run at all, adds one failure.
"""

import collections
import json
import sys

OUTPUT_LINES = 300


def top(name):
    return name.split("/", 1)[0]


def main():
    outputs = collections.defaultdict(list)  # (package, top-level test) -> lines
    package_output = collections.defaultdict(list)
    results = {}  # (package, test) -> pass / fail / skip
    failed_packages = []
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except ValueError:
            sys.stdout.write(raw)  # not an event: the go command's own words
            continue
        action, pkg, test = ev.get("Action"), ev.get("Package", ev.get("ImportPath", "")), ev.get("Test")
        if action in ("output", "build-output"):
            (outputs[(pkg, top(test))] if test else package_output[pkg]).append(ev.get("Output", ""))
        elif action in ("pass", "fail", "skip") and test and "/" not in test:
            results[(pkg, test)] = action
            print(f"--- {action.upper()}: {test} ({ev.get('Elapsed', 0)}s)", flush=True)
        elif action in ("fail", "build-fail") and not test:
            failed_packages.append(pkg)

    counts = collections.Counter(results.values())
    failed = [key for key, r in results.items() if r == "fail"]
    for pkg, test in failed:
        lines = outputs[(pkg, test)]
        print(f"\n==== output of {test} ({pkg}), last {min(len(lines), OUTPUT_LINES)} of {len(lines)} lines")
        sys.stdout.write("".join(lines[-OUTPUT_LINES:]))
    extra = 0
    for pkg in dict.fromkeys(failed_packages):
        print(f"\n==== {pkg} failed; its output outside tests:")
        sys.stdout.write("".join(package_output[pkg][-OUTPUT_LINES:]))
        if not any(p == pkg for p, _ in failed):
            extra += 1
            print(f"FAILED {pkg} (outside any test)")
    if not results and not extra:
        extra = 1
        print("FAILED no test ran")
    for pkg, test in failed:
        print(f"FAILED {pkg} {test}")
    print(f"go test: {counts['pass']} passed, {counts['fail'] + extra} failed, {counts['skip']} skipped")


if __name__ == "__main__":
    main()
