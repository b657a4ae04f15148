#!/usr/bin/env python3
"""`clang-format --dry-run -Werror` over every C++ source of the repository.

The files are those git tracks plus new ones it does not ignore (outside a git checkout: every
.h/.cc/.c under the root, build directories excepted). Prints clang-format's findings (the
first lines of each file's), the files to fix and the command that fixes them; exits 1 if any
file is not formatted as `.clang-format` says.

  check_format.py [--root DIR] [--clang-format PATH] [--jobs N]
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import time

SUFFIXES = (".h", ".cc", ".c", ".hpp", ".cpp")
SHOWN_LINES_PER_FILE = 12


def sources(root):
    try:
        done = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True, check=True, timeout=60)
        names = [n for n in done.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            names += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
    return sorted({n for n in names
                   if n.endswith(SUFFIXES) and os.path.isfile(os.path.join(root, n))})


def check(clang_format, root, names):
    """[(name, exit code, output)]: one clang-format for the batch, one per file if it fails."""
    def run(batch):
        return subprocess.run([clang_format, "--dry-run", "-Werror", "--style=file", *batch],
                              cwd=root, capture_output=True, text=True, timeout=300, check=False)
    if run(names).returncode == 0:
        return [(name, 0, "") for name in names]
    results = []
    for name in names:
        done = run([name])
        results.append((name, done.returncode, done.stderr + done.stdout))
    return results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--clang-format", default=os.environ.get("CLANG_FORMAT", "clang-format"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    tool = shutil.which(args.clang_format)
    if tool is None:
        print(f"format: {args.clang_format} not found (scripts/setup installs it)")
        return 1
    version = subprocess.run([tool, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    names = sources(root)
    if not names:
        print(f"format: no C++ source under {root}")
        return 1
    start = time.monotonic()
    jobs = max(1, args.jobs)
    batches = [names[i::jobs * 4] for i in range(min(len(names), jobs * 4))]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = sorted(r for batch in pool.map(lambda b: check(tool, root, b), batches)
                         for r in batch)
    bad = []
    for name, code, output in results:
        if code != 0:
            bad.append(name)
            lines = output.rstrip().splitlines()
            print("\n".join(lines[:SHOWN_LINES_PER_FILE]))
            if len(lines) > SHOWN_LINES_PER_FILE:
                print(f"... ({len(lines) - SHOWN_LINES_PER_FILE} more lines for {name})")
    seconds = time.monotonic() - start
    print(f"format: {len(names)} files checked in {seconds:.1f} s ({version}), "
          f"{len(bad)} not formatted")
    if bad:
        print("format: not formatted as .clang-format says:\n  " + "\n  ".join(bad))
        print("format: fix with: clang-format -i " + " ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
