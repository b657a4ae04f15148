#!/usr/bin/env python3
"""Self-test of check_layering.py: on tiny fixture trees, each rule passes a clean tree and
fails the violation it exists for, naming the file and line."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check_layering.py")
sys.path.insert(0, HERE)
import check_layering  # noqa: E402

# A clean miniature of the project's layering.
CLEAN = {
    "core/README.md": """\
        # core/
        - may include: nothing
        - may use: `OpenSSL`
        """,
    "core/codec.h": '#include <string>\n',
    "core/codec.cc": '#include "core/codec.h"\n\n#include <openssl/sha.h>\n',
    "store/README.md": """\
        # store/
        - may include: `core/`
        - may use: `RocksDB`
        - public headers must not use: `RocksDB`
        """,
    "store/db.h": '#include "core/codec.h"\n',
    "store/db.cc": '#include "store/db.h"\n\n#include <rocksdb/db.h>\n',
    "web/README.md": """\
        # web/
        - may include: `core/`, `store/`
        - may use: `Boost`
        - public headers must not use: `Boost`
        - internal headers: `session.h`
        """,
    "web/server.h": '#include "store/db.h"\n',
    "web/session.h": '#include <boost/asio/ip/tcp.hpp>\n',
    "web/server.cc": '#include "web/server.h"\n#include "web/session.h"\n',
    "app/README.md": """\
        # app/
        - may include: `core/`, `store/`, `web/`, `app/kafka/`
        - may use: `librdkafka`
        """,
    "app/run.h": '#include "web/server.h"\n',
    "app/run.cc": '#include "app/run.h"\n#include "app/kafka/client.h"\n',
    "app/kafka/README.md": """\
        # app/kafka/
        - may include: nothing
        - may use: `librdkafka`
        """,
    "app/kafka/client.h": '#include <librdkafka/rdkafka.h>\n',
    "gen/README.md": """\
        # gen/
        - may include: `core/`, `app/kafka/`
        - may use: `librdkafka`
        """,
    "gen/main.cc": '#include "app/kafka/client.h"\n#include "core/codec.h"\n',
    # Not libraries: tests/ is skipped, a README without sources is no library.
    "tests/unit/x_test.cc": '#include "app/run.h"\n#include <gtest/gtest.h>\n',
    "docs/README.md": "# docs\n",
}


def run_on(files, as_program=False):
    """Writes the fixture tree, runs the checker on it (in this process, or as the program
    ctest runs): (exit code, output)."""
    with tempfile.TemporaryDirectory(prefix="layering-fixture-") as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        if as_program:
            done = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True,
                                  text=True, timeout=60, check=False)
            return done.returncode, done.stdout + done.stderr
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = check_layering.main(["--root", root])
        return code, out.getvalue()


def with_changes(**changes):
    files = dict(CLEAN)
    for key, text in changes.items():
        path = key.replace("__", "/").replace("_dot_", ".")
        if text is None:
            del files[path]
        else:
            files[path] = text
    return files


class Layering(unittest.TestCase):
    def assertViolation(self, files, location, phrase):
        code, out = run_on(files)
        self.assertEqual(code, 1, out)
        lines = [l for l in out.splitlines() if l.startswith(location)]
        self.assertTrue(any(phrase in l for l in lines),
                        f"no violation at {location} mentioning {phrase!r} in:\n{out}")

    def test_clean_tree_passes(self):
        code, out = run_on(CLEAN, as_program=True)
        self.assertEqual(code, 0, out)
        self.assertIn("11 files in 6 libraries (app, app/kafka, core, gen, store, web), 0 violation(s)", out)

    def test_include_of_a_folder_not_allowed_fails_with_file_and_line(self):
        files = with_changes(store__db_dot_h='#include "core/codec.h"\n#include "web/server.h"\n')
        self.assertViolation(files, "store/db.h:2:", "store/ may not include web/")
        code, out = run_on(files, as_program=True)
        self.assertEqual(code, 1, out)
        self.assertIn("store/db.h:2: ", out)

    def test_lower_layer_including_upper_layer_fails(self):
        files = with_changes(core__codec_dot_cc='#include "app/run.h"\n')
        self.assertViolation(files, "core/codec.cc:1:", "core/ may not include app/")

    def test_sub_library_is_not_its_parent(self):
        # gen/ may include app/kafka/ (already in the clean tree) but not app/ proper.
        files = with_changes(gen__main_dot_cc='#include "app/kafka/client.h"\n#include "app/run.h"\n')
        self.assertViolation(files, "gen/main.cc:2:", "gen/ may not include app/")

    def test_sub_library_may_not_include_its_parent(self):
        files = with_changes(app__kafka__client_dot_h='#include "app/run.h"\n')
        self.assertViolation(files, "app/kafka/client.h:1:", "app/kafka/ may not include app/")

    def test_public_header_using_forbidden_library_fails(self):
        files = with_changes(store__db_dot_h='#include <rocksdb/db.h>\n')
        self.assertViolation(files, "store/db.h:1:", "public header of store/ reaches rocksdb")

    def test_public_header_reaching_forbidden_library_through_internal_header_fails(self):
        files = with_changes(web__server_dot_h='#include "store/db.h"\n#include "web/session.h"\n')
        self.assertViolation(files, "web/server.h:2:", "web/session.h")

    def test_other_folder_including_an_internal_header_fails(self):
        files = with_changes(app__run_dot_cc='#include "app/run.h"\n#include "web/session.h"\n')
        self.assertViolation(files, "app/run.cc:2:", "internal to web/")

    def test_third_party_library_not_listed_fails(self):
        files = with_changes(core__codec_dot_cc='#include "core/codec.h"\n#include <spdlog/spdlog.h>\n')
        self.assertViolation(files, "core/codec.cc:2:", "spdlog, which core/ may not use")

    def test_include_not_rooted_at_the_repository_fails(self):
        files = with_changes(store__db_dot_cc='#include "db.h"\n')
        self.assertViolation(files, "store/db.cc:1:", "no file rooted at the repository")

    def test_names_in_a_parenthesis_after_the_values_are_a_comment(self):
        readme = "- may include: `core/`, `app/kafka/` (the Kafka layer, not `app/` proper)\n"
        files = with_changes(gen__README_dot_md=readme + "- may use: `librdkafka`\n",
                             gen__main_dot_cc='#include "app/kafka/client.h"\n#include "app/run.h"\n')
        self.assertViolation(files, "gen/main.cc:2:", "gen/ may not include app/")

    def test_readme_without_layering_lines_fails(self):
        files = with_changes(store__README_dot_md="# store/\nDepends on core.\n")
        self.assertViolation(files, "store/README.md", "states no layering")

    def test_unknown_library_name_in_readme_fails(self):
        files = with_changes(core__README_dot_md="- may include: nothing\n- may use: `OpenSLL`\n")
        self.assertViolation(files, "core/README.md", "unknown third-party library `opensll`")

    def test_existing_folder_that_is_no_library_in_may_include_fails(self):
        # app/kafka/ without its README is part of app/: naming it is a mistake, and gen/'s
        # include of it is an include of app/.
        files = with_changes(app__kafka__README_dot_md=None)
        self.assertViolation(files, "app/README.md", "`app/kafka/`, which is no library folder")
        self.assertViolation(files, "gen/main.cc:1:", "gen/ may not include app/")


if __name__ == "__main__":
    unittest.main()
