#!/usr/bin/env python3
"""Self-test of check_format.py and check_tidy.py on tiny fixture trees with the repository's
.clang-format and .clang-tidy: each fails on the defect it exists for and passes without it;
the clang-tidy check holds only changed lines to the checks and skips cleanly."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GIT = ["git", "-c", "user.name=lint-test", "-c", "user.email=lint-test@localhost",
       "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]

FORMATTED = "int answer() { return 42; }\n"
UNFORMATTED = "int   answer( ) {return 42;}\n"
# modernize-avoid-c-arrays flags a C array; the function around it is formatted.
C_ARRAY = "int first() {\n  int values[3] = {1, 2, 3};\n  return values[0];\n}\n"


def run(args, cwd):
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300,
                          check=False)
    return done.returncode, done.stdout + done.stderr


class Fixture:
    def __init__(self, root):
        self.root = root
        shutil.copy(os.path.join(REPO, ".clang-format"), root)
        shutil.copy(os.path.join(REPO, ".clang-tidy"), root)
        os.makedirs(os.path.join(root, "lib"))
        os.makedirs(os.path.join(root, "build"))

    def write(self, path, text):
        with open(os.path.join(self.root, path), "w", encoding="utf-8") as f:
            f.write(text)

    def database(self, *sources):
        entries = [{"directory": os.path.join(self.root, "build"),
                    "file": os.path.join(self.root, s),
                    "command": f"c++ -std=c++20 -c {os.path.join(self.root, s)}"}
                   for s in sources]
        self.write("build/compile_commands.json", json.dumps(entries))

    def git(self, *args):
        code, out = run(GIT + list(args), self.root)
        assert code == 0, out

    def commit_main(self):
        self.write(".gitignore", "build/\n")
        self.git("init", "-q")
        self.git("add", ".")
        self.git("commit", "-q", "-m", "main")
        self.git("checkout", "-q", "-b", "topic")

    def format_check(self):
        return run([sys.executable, os.path.join(HERE, "check_format.py"), "--root", self.root],
                   self.root)

    def tidy_check(self):
        return run([sys.executable, os.path.join(HERE, "check_tidy.py"), "--root", self.root,
                    "--base", "main", "--jobs", "1"], self.root)


class Format(unittest.TestCase):
    def test_formatted_tree_passes_and_unformatted_file_fails_by_name(self):
        with tempfile.TemporaryDirectory(prefix="format-fixture-") as root:
            tree = Fixture(root)
            tree.write("lib/good.cc", FORMATTED)
            code, out = tree.format_check()
            self.assertEqual(code, 0, out)
            tree.write("lib/bad.cc", UNFORMATTED)
            code, out = tree.format_check()
            self.assertEqual(code, 1, out)
            self.assertIn("lib/bad.cc:1:", out)
            self.assertIn("clang-format -i lib/bad.cc", out)
            self.assertNotIn("lib/good.cc", out)


class Tidy(unittest.TestCase):
    def test_outside_a_git_checkout_skips(self):
        with tempfile.TemporaryDirectory(prefix="tidy-fixture-") as root:
            tree = Fixture(root)
            tree.write("lib/a.cc", C_ARRAY)
            tree.database("lib/a.cc")
            code, out = tree.tidy_check()
            self.assertEqual(code, 0, out)
            self.assertIn("not a git checkout; skipped", out)

    def test_nothing_changed_skips(self):
        with tempfile.TemporaryDirectory(prefix="tidy-fixture-") as root:
            tree = Fixture(root)
            tree.write("lib/a.cc", C_ARRAY)
            tree.database("lib/a.cc")
            tree.commit_main()
            code, out = tree.tidy_check()
            self.assertEqual(code, 0, out)
            self.assertIn("no C++ line changed", out)

    def test_finding_on_a_changed_line_fails(self):
        with tempfile.TemporaryDirectory(prefix="tidy-fixture-") as root:
            tree = Fixture(root)
            tree.write("lib/a.cc", FORMATTED)
            tree.database("lib/a.cc")
            tree.commit_main()
            tree.write("lib/a.cc", FORMATTED + "\n" + C_ARRAY)
            code, out = tree.tidy_check()
            self.assertEqual(code, 1, out)
            self.assertIn("a.cc:4:", out)
            self.assertIn("modernize-avoid-c-arrays", out)

    def test_finding_on_an_unchanged_line_is_not_held_against_the_change(self):
        with tempfile.TemporaryDirectory(prefix="tidy-fixture-") as root:
            tree = Fixture(root)
            tree.write("lib/a.cc", C_ARRAY)
            tree.database("lib/a.cc")
            tree.commit_main()
            tree.write("lib/a.cc", C_ARRAY + "\n" + FORMATTED)
            code, out = tree.tidy_check()
            self.assertEqual(code, 0, out)
            self.assertIn("1 translation units checked", out)

    def test_new_untracked_file_is_checked_whole(self):
        with tempfile.TemporaryDirectory(prefix="tidy-fixture-") as root:
            tree = Fixture(root)
            tree.write("lib/a.cc", FORMATTED)
            tree.database("lib/a.cc", "lib/b.cc")
            tree.commit_main()
            tree.write("lib/b.cc", C_ARRAY)
            code, out = tree.tidy_check()
            self.assertEqual(code, 1, out)
            self.assertIn("b.cc:2:", out)


if __name__ == "__main__":
    unittest.main()
