#!/usr/bin/env python3
"""The `.clang-tidy` checks on the C++ lines changed since the merge-base with main.

clang-tidy is slow (seconds of CPU per translation unit) and the code base predates some of its
checks, so only what a branch changes is held to it: the lines of .h/.cc/.c files that differ
between the merge-base of HEAD with the base branch and the working tree, plus new untracked
files. Each changed source is checked as its own translation unit; a changed header through
the translation unit of its .cc pair, or else the first one that includes it. Diagnostics
outside the changed lines are not shown. Every diagnostic is an error.

Skips (exit 0, with a message) outside a git checkout, when no base branch exists, or when no
C++ line changed. Needs compile_commands.json in the build directory (any configure writes it).

  check_tidy.py [--root DIR] [--build-dir DIR] [--base REF] [--jobs N] [--clang-tidy PATH]

The base is --base, else $FRAUD_LINT_BASE, else the first of origin/main and main that exists.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

SUFFIXES = (".h", ".cc", ".c")
HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
DIAGNOSTIC_RE = re.compile(r"^.+?:\d+:\d+: (?:warning|error): .* \[([^\]]+)\]$")
NOISE_RE = re.compile(r"^(\d+ warnings? (and \d+ errors? )?generated\.|"
                      r"\d+ errors? generated\.|Suppressed \d+ warnings.*|"
                      r"Use -header-filter=.*|.* warnings? treated as errors?)$")


def git(root, *args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                          timeout=120, check=False)


def changed_lines(root, merge_base):
    """{repository-relative path: [[first, last], ...]} of changed C++ lines; None = all."""
    diff = git(root, "diff", "-U0", "--no-color", "--no-ext-diff", "--diff-filter=AMR",
               merge_base, "--", *[f"*{s}" for s in SUFFIXES])
    if diff.returncode != 0:
        raise RuntimeError(f"git diff failed: {diff.stderr.strip()}")
    changes = {}
    path = None
    for line in diff.stdout.splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else None
        elif path is not None and path.endswith(SUFFIXES):
            m = HUNK_RE.match(line)
            if m:
                first, count = int(m.group(1)), int(m.group(2) or "1")
                if count > 0:
                    changes.setdefault(path, []).append([first, first + count - 1])
    untracked = git(root, "ls-files", "-z", "--others", "--exclude-standard")
    for name in untracked.stdout.split("\0"):
        if name.endswith(SUFFIXES):
            changes[name] = None
    return {p: r for p, r in changes.items() if os.path.isfile(os.path.join(root, p))}


def includes_header(path, header):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return any(re.match(rf'\s*#\s*include\s*"{re.escape(header)}"', line) for line in f)
    except OSError:
        return False


def run_tidy(tool, build_dir, header_filter, line_filter, unit):
    """(unit, findings, compile errors, output): findings are diagnostics of the checks (the
    line filter keeps them to changed lines); compile errors are clang's own, which no filter
    holds back and which are no finding: GCC builds the code, clang may reject some of it."""
    done = subprocess.run(
        [tool, "-p", build_dir, "--quiet", "--warnings-as-errors=*",
         f"--header-filter={header_filter}", f"--line-filter={line_filter}", unit],
        capture_output=True, text=True, timeout=900, check=False)
    lines = [l for l in (done.stdout + done.stderr).splitlines() if not NOISE_RE.match(l.strip())]
    findings, compile_errors = 0, 0
    for line in lines:
        m = DIAGNOSTIC_RE.match(line)
        if not m:
            continue
        checks = {c for c in m.group(1).split(",") if c != "-warnings-as-errors"}
        if checks <= {"clang-diagnostic-error"}:
            compile_errors += 1
        else:
            findings += 1
    if done.returncode != 0 and findings == 0 and compile_errors == 0:
        findings = 1  # clang-tidy failed without a diagnostic: show its output as a failure
    return unit, findings, compile_errors, "\n".join(lines).strip()


def units_to_check(root, database, changes):
    """(the translation units that hold the changed lines, notes on the files none holds): a
    source file is its own unit; a header, its .cc pair or else the first unit including it."""
    with open(database, encoding="utf-8") as f:
        units = sorted({os.path.normpath(os.path.join(e["directory"], e["file"]))
                        for e in json.load(f)})
    unit_set = set(units)
    to_check, notes = set(), []
    for path in sorted(changes):
        full = os.path.join(root, path)
        if not path.endswith(".h"):
            if full in unit_set:
                to_check.add(full)
            else:
                notes.append(f"{path} is in no translation unit of {database}; not checked")
            continue
        pair = full[:-2] + ".cc"
        unit = pair if pair in unit_set else next(
            (u for u in units if u.startswith(root + os.sep) and includes_header(u, path)), None)
        if unit is None:
            notes.append(f"{path}: no translation unit includes it; not checked")
        else:
            to_check.add(unit)
    return to_check, notes


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--build-dir", default=None, help="default: ROOT/build")
    parser.add_argument("--base", default=os.environ.get("FRAUD_LINT_BASE"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clang-tidy", default=os.environ.get("CLANG_TIDY", "clang-tidy"))
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    build_dir = os.path.abspath(args.build_dir or os.path.join(root, "build"))

    inside = git(root, "rev-parse", "--show-toplevel")
    if inside.returncode != 0:
        print(f"tidy: {root} is not a git checkout; skipped")
        return 0
    bases = [args.base] if args.base else ["origin/main", "main"]
    base = next((b for b in bases
                 if git(root, "rev-parse", "--verify", "--quiet", f"{b}^{{commit}}").returncode
                 == 0), None)
    if base is None:
        print(f"tidy: no base branch ({' or '.join(bases)}) to compare with; skipped")
        return 0
    merge_base = git(root, "merge-base", "HEAD", base).stdout.strip()
    if not merge_base:
        print(f"tidy: HEAD has no merge-base with {base}; skipped")
        return 0
    changes = changed_lines(root, merge_base)
    short = merge_base[:10]
    if not changes:
        print(f"tidy: no C++ line changed since the merge-base {short} with {base}; skipped")
        return 0

    tool = shutil.which(args.clang_tidy)
    if tool is None:
        print(f"tidy: {args.clang_tidy} not found (scripts/setup installs it)")
        return 1
    database = os.path.join(build_dir, "compile_commands.json")
    if not os.path.isfile(database):
        print(f"tidy: no {database}: configure first (cmake --preset default)")
        return 1
    to_check, notes = units_to_check(root, database, changes)
    line_filter = json.dumps([{"name": os.path.join(root, p), **({"lines": r} if r else {})}
                              for p, r in sorted(changes.items())])
    header_filter = "^" + re.escape(root + os.sep)

    for note in notes:
        print(f"tidy: {note}")
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(
            lambda u: run_tidy(tool, build_dir, header_filter, line_filter, u), sorted(to_check)))
    failed = [unit for unit, findings, _, _ in results if findings]
    for unit, findings, compile_errors, output in results:
        rel = os.path.relpath(unit, root)
        if findings:
            print(output)
        elif compile_errors:
            first = next(l for l in output.splitlines() if DIAGNOSTIC_RE.match(l))
            print(f"tidy: clang cannot compile {rel} ({compile_errors} error(s), first: {first}); "
                  "its other diagnostics were still checked")
    seconds = time.monotonic() - start
    print(f"tidy: {len(changes)} changed files since {short} ({base}), {len(to_check)} "
          f"translation units checked in {seconds:.1f} s, {len(failed)} with findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
