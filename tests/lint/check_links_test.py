#!/usr/bin/env python3
"""Self-test of check_links.py on a tiny tree: it passes good links and fails each broken kind."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def run(root):
    result = subprocess.run([sys.executable, os.path.join(HERE, "check_links.py"), "--root", root],
                            capture_output=True, text=True)
    return result.returncode, result.stdout


def main():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        write(root, "docs/rule.md", "# The rule\n\n## 5. Identity and privacy\n\n## Notes\n\n"
              "## Notes\n\n<a id=\"custom\"></a>\n")
        write(root, "lib/README.md", "[rule](../docs/rule.md#5-identity-and-privacy) "
              "[second](../docs/rule.md#notes-1) [custom](../docs/rule.md#custom) [up](../README.md)\n")
        write(root, "README.md", "# Top\n\n[rule](docs/rule.md) [here](#top) [web](https://x.invalid/)"
              "\n\n```sh\n[not a link](nowhere.md)\n```\n`[code](nowhere.md)`\n[lib](lib/README.md)\n")
        status, out = run(root)
        if status != 0:
            failures.append(f"good links reported broken:\n{out}")
        write(root, "docs/other.md", "[gone](missing.md) [bad anchor](rule.md#6-alert-record) "
              "[self](#nothing)\n\n[ref]: ../nowhere/file.md\n")
        status, out = run(root)
        if status != 1:
            failures.append(f"broken links passed:\n{out}")
        for expected in ("docs/other.md:1: missing.md: no such file",
                         "docs/other.md:1: rule.md#6-alert-record: no heading or anchor",
                         "docs/other.md:1: #nothing: no heading or anchor",
                         "docs/other.md:3: ../nowhere/file.md: no such file"):
            if expected not in out:
                failures.append(f"not reported: {expected}\n{out}")
    for f in failures:
        print("FAIL:", f)
    print("check_links self-test:", "FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
