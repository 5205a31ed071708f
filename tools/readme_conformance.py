#!/usr/bin/env python3
"""Regenerates (or with --check, verifies) README.md's conformance table from BUILD/conformance.json,
which every full run of the Python parity suites writes ({"suite": {"passed": P, "total": T}}).

Usage: tools/readme_conformance.py BUILD [--check]

The table holds the counts of the run that regenerated it. --check (run by `make test` after the
suites) verifies the set of suites: each suite the table lists was run, and each suite that ran is
listed. Counts are not compared, since they legitimately vary between machines (skips where
optional data such as the shared MNIST copy is absent); a difference is only reported.
"""
import json
import os
import re
import sys

BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def describe(suite):
    """The first paragraph of the suite file's docstring (python/test_x -> tests/python/test_x.py),
    shortened to about a line."""
    parts = suite.split("/")
    if parts[0] != "python" or len(parts) < 2:
        return ""
    path = os.path.join(ROOT, "tests", "python", parts[1] + ".py")
    try:
        text = open(path).read()
    except OSError:
        return ""
    m = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:\n\s*\n|"""|\'\'\')', text, re.S)
    line = " ".join(m.group(1).split()) if m else ""
    if len(line) > 110:
        line = line[:110].rsplit(" ", 1)[0].rstrip(",;:") + " ..."
    if len(parts) > 2:
        return "%s in the suite above, counted one by one" % parts[2]
    return line.replace("|", "\\|")


def table(data):
    rows = ["| Suite | What it checks | Passed | Total |", "|---|---|---:|---:|"]
    for suite in sorted(data):
        c = data[suite]
        rows.append("| `%s` | %s | %d | %d |" % (suite, describe(suite), c["passed"], c["total"]))
    return "\n".join(rows)


def listed(readme):
    inside = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", inside, re.M)}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: tools/readme_conformance.py BUILD [--check]")
    build, check = sys.argv[1], "--check" in sys.argv[2:]
    path = os.path.join(build, "conformance.json")
    try:
        data = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit("%s: %s (run the suites first: make BUILD=%s test-python)" % (path, e, build))
    readme_path = os.path.join(ROOT, "README.md")
    readme = open(readme_path).read()
    if BEGIN not in readme or END not in readme:
        sys.exit("README.md has no %s ... %s section" % (BEGIN, END))
    if check:
        have, ran = listed(readme), set(data)
        problems = ["listed in README.md but not run: %s" % s for s in sorted(have - ran)]
        problems += ["run but not listed in README.md: %s" % s for s in sorted(ran - have)]
        if problems:
            print("README.md's conformance table is out of date (%s):\n  %s\nrun tools/readme_conformance.py %s" %
                  (path, "\n  ".join(problems), build), file=sys.stderr)
            sys.exit(1)
        old = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in
               re.finditer(r"^\| `([^`]+)` \|.*\| (\d+) \| (\d+) \|$", readme.split(BEGIN, 1)[1].split(END, 1)[0],
                           re.M)}
        moved = ["%s %d/%d (README %d/%d)" % (s, data[s]["passed"], data[s]["total"], *old[s]) for s in sorted(old)
                 if s in data and (data[s]["passed"], data[s]["total"]) != old[s]]
        print("README conformance table: the same %d suites%s" % (len(have), "; counts here differ: " +
                                                                   ", ".join(moved) if moved else ""))
        return
    head, rest = readme.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(readme_path, "w") as f:
        f.write(head + BEGIN + "\n" + table(data) + "\n" + END + tail)
    print("README.md: conformance table regenerated from %s (%d suites)" % (path, len(data)))


if __name__ == "__main__":
    main()
