#!/usr/bin/python3
"""The documented operator path installs a compiler before it compiles.

In INSTALL.md (what an operator follows on a server, which usually has no
compiler), every `sh` line that runs cc, gcc or make must come after an
`apt-get install` line in the same `## ` section that installs gcc (or
build-essential) and, for make, make: each section may be the first one a
reader follows, on another machine (section 1 builds the packages on a
build host).

  compiler_first.py FILE...
"""
import re
import sys


def check(path):
    problems, have = [], set()
    fence = None
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if fence is None and line.startswith("## "):
            have = set()
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
            continue
        if fence != "sh":
            continue
        cmd = line.split("#", 1)[0]
        if re.search(r"\bapt-get install\b", cmd):
            words = set(cmd.split())
            if words & {"gcc", "build-essential"}:
                have.add("cc")
            if words & {"make", "build-essential"}:
                have.add("make")
        for tool, need in (("cc", "cc"), ("gcc", "cc"), ("make", "make")):
            if re.match(r"\s*(sudo\s+)?%s\b" % tool, cmd) and need not in have:
                problems.append(f"{path}:{n}: runs {tool} before any apt-get install of "
                                f"{'gcc' if need == 'cc' else 'make'} in its section")
    return problems


problems = [p for f in sys.argv[1:] for p in check(f)]
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
