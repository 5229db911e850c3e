#!/usr/bin/env python3
"""Summarises a `go test -json` report (gotestsum --jsonfile): the totals, each
failed test with its first failure line, the packages that failed without a
test to blame (a build error, a panic, a timeout), and the ten slowest tests.
make test prints it whether the tests passed or not.

    scripts/test-summary.py .cache/test-report.json
"""

import json
import re
import sys

# A failure line: file_test.go:NN: message, as t.Errorf/t.Fatalf write it.
FAILURE = re.compile(r"^\s+\S+_test\.go:\d+: ")


def main(path):
    results, elapsed, output, broken = {}, {}, {}, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # a line go test wrote outside the JSON (a build error)
            test, pkg, action = ev.get("Test"), ev.get("Package", ""), ev.get("Action")
            if not test:
                if action == "fail":
                    broken.append(pkg)
                continue
            key = (pkg, test)
            if action == "output":
                output.setdefault(key, []).append(ev.get("Output", ""))
            elif action in ("pass", "fail", "skip"):
                results[key] = action
                elapsed[key] = ev.get("Elapsed", 0)
    counts = {a: sum(1 for r in results.values() if r == a) for a in ("pass", "fail", "skip")}
    # A parent fails with its subtests: name the subtests, not the parent too.
    failed = [k for k, r in results.items() if r == "fail" and not any(o[0] == k[0] and o[1].startswith(k[1] + "/") and results[o] == "fail" for o in results)]
    print(f"summary: {len(results)} tests: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    for pkg, test in sorted(failed):
        lines = output.get((pkg, test), [])
        first = next((l.strip() for l in lines if FAILURE.match(l)), next((l.strip() for l in lines if l.strip() and not l.startswith(("=== ", "--- "))), "(no output)"))
        print(f"FAILED {pkg.rsplit('/', 1)[-1]}.{test}: {first[:300]}")
    blamed = {pkg for pkg, _ in failed}
    for pkg in broken:
        if pkg not in blamed:
            print(f"FAILED package {pkg}: no test failed in it (a build error, a panic or the package's timeout: its output above says which)")
    print("the ten slowest tests:")
    top = sorted(((k, s) for k, s in elapsed.items() if "/" not in k[1]), key=lambda kv: -kv[1])[:10]
    for (pkg, test), secs in top:
        print(f"  {secs:8.1f}s {pkg.rsplit('/', 1)[-1]}.{test}")
    return 1 if failed or broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
