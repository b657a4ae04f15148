#!/usr/bin/env python3
"""Clang's thread-safety analysis over the project's sources, its warnings as errors.

Members declared FRAUD_GUARDED_BY(mu_) and functions declared FRAUD_REQUIRES(mu_)
(detectors/base/thread_annotations.h) are checked against where the code locks: GCC ignores
the attributes, so this compiles every translation unit of the libraries and programs
(detectors/, state/, api/, service/, loadgen/; not the tests) with clang's -fsyntax-only and
-Wthread-safety, from the build directory's compile_commands.json (any configure writes it;
nothing needs to be built). Only the thread-safety diagnostics are turned on, and each is an
error: the GCC build's own warnings are its business. Prints each diagnostic and a summary;
exits 1 on any.

  check_thread_safety.py [--root DIR] [--build-dir DIR] [--jobs N] [--clang PATH] [FILE ...]

FILE limits the run to those sources (paths relative to the root).
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

CHECKED_FOLDERS = ("detectors/", "state/", "api/", "service/", "loadgen/")
CLANG_NAMES = ("clang++", "clang++-19", "clang++-14")
# Only the analysis: GCC's warning flags are dropped, clang's own warnings off, then these on.
ANALYSIS_FLAGS = ["-fsyntax-only", "-Wno-everything", "-Wthread-safety",
                  "-Werror=thread-safety"]
# Flags of the GCC command clang does not take or that would write files.
DROPPED_WITH_VALUE = {"-o", "-MF", "-MT", "-MQ"}
DROPPED = {"-c", "-MD", "-MMD"}


def clang_command(entry, clang):
    """The clang command that checks one compile_commands.json entry."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out = [clang]
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in DROPPED_WITH_VALUE:
            skip = True
            continue
        if arg in DROPPED or arg.startswith("-W") or arg.startswith("-fdiagnostics-color"):
            continue
        if arg.startswith("-fsanitize") or arg.startswith("-fno-sanitize"):
            continue  # irrelevant to the analysis, and clang's runtimes differ from GCC's
        out.append(arg)
    return out + ANALYSIS_FLAGS


def check(entry, clang):
    started = time.monotonic()
    proc = subprocess.run(clang_command(entry, clang), cwd=entry["directory"],
                          capture_output=True, text=True, timeout=600, check=False)
    return entry["file"], proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--build-dir", default=None, help="default: ROOT/build")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clang", default=None, help="default: the first clang++ on PATH")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.realpath(args.root)
    build_dir = os.path.realpath(args.build_dir or os.path.join(root, "build"))
    clang = args.clang or next((c for c in map(shutil.which, CLANG_NAMES) if c), None)
    if clang is None:
        print("check_thread_safety: no clang++ found (scripts/setup installs it)", file=sys.stderr)
        return 2
    database = os.path.join(build_dir, "compile_commands.json")
    try:
        with open(database, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_thread_safety: cannot read {database}: {e} (configure first)",
              file=sys.stderr)
        return 2

    wanted = {os.path.normpath(p) for p in args.files}
    chosen = {}
    for entry in entries:
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(path, root)
        if rel.startswith("..") or not rel.startswith(CHECKED_FOLDERS):
            continue  # the tests, generated sources in the build directory, third-party code
        if wanted and rel not in wanted:
            continue
        chosen.setdefault(rel, dict(entry, file=path))
    if wanted - set(chosen):
        print("check_thread_safety: not in the compile database: "
              + ", ".join(sorted(wanted - set(chosen))), file=sys.stderr)
        return 2
    if not chosen:
        print("check_thread_safety: no source of the project in the compile database",
              file=sys.stderr)
        return 2

    started = time.monotonic()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, code, output, _ in pool.map(lambda e: check(e, clang), chosen.values()):
            if code != 0:
                failed.append(os.path.relpath(path, root))
                sys.stdout.write(output)
    elapsed = time.monotonic() - started
    print(f"check_thread_safety: {len(chosen)} translation units, {len(failed)} failed "
          f"(thread-safety errors), {elapsed:.0f} s ({os.path.basename(clang)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
