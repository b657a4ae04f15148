#!/usr/bin/env python3
"""Checks that every script of scripts/ answers --help with its usage text and nothing else.

Runs `DIR/NAME --help` for each executable file of scripts/, scripts/bench/ and loadgen/bench/
(not their subfolders: scripts/lib/ holds sourced files) and fails
when one exits non-zero, prints nothing, or prints a line of shell code (a script's help is the
comment at its top: a help printed by line numbers drifts into the code when the comment
changes). A script that handles no `--help` is a problem too, and is not run (it would do its
work). Prints each problem as DIR/NAME: message; exits 1 if any.

  check_script_help.py [--root DIR]
"""

import argparse
import os
import re
import subprocess
import sys

# Lines that are shell, not prose: `set -e...`, `cd "...`, `name=value`, `#!`.
CODE_RE = re.compile(r"^\s*(set\s+-[a-zA-Z]+|cd\s+\"|[a-z_]+=\S|#!)")
# The folders whose scripts are checked, relative to the root.
FOLDERS = ("scripts", "scripts/bench", "loadgen/bench")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    problems = []
    names = []
    for folder in FOLDERS:
        path = os.path.join(root, folder)
        if os.path.isdir(path):
            names += sorted(f"{folder}/{n}" for n in os.listdir(path)
                            if os.path.isfile(os.path.join(path, n))
                            and os.access(os.path.join(path, n), os.X_OK))
    for name in names:
        with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
            if not re.search(r"^\s*(-h\s*\|\s*)?--help\b[^)]*\)", f.read(), re.M):
                problems.append(f"{name}: handles no --help")
                continue
        result = subprocess.run([os.path.join(root, name), "--help"], capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            problems.append(f"{name}: --help exits {result.returncode}: "
                            f"{result.stderr.strip()[:200]}")
            continue
        if not result.stdout.strip():
            problems.append(f"{name}: --help prints nothing")
        for line in result.stdout.split("\n"):
            if CODE_RE.match(line):
                problems.append(f"{name}: --help prints shell code: {line.strip()}")
    for p in problems:
        print(p)
    print(f"script help: {len(names)} scripts, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
