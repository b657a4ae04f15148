#!/usr/bin/env python3
"""Checks every #include of every library folder against the layering its README states.

A library folder is a directory outside tests/ (and outside build*/ and hidden directories)
that holds a README.md and C++ sources (.h/.cc); a subfolder with its own README.md is a
library of its own (service/kafka/ is not part of service/). Its README states the layering in
lines of this form (values in backticks; "nothing" for none):

  - may include: `detectors/`, `state/`          library folders besides its own
  - may use: `OpenSSL`, `simdjson`               third-party libraries (names: THIRD_PARTY)
  - public headers must not use: `RocksDB`       also through the project headers they include
  - internal headers: `http_connection.h`        not public; no other folder may include them

A parenthesis after the values is a comment: `- may include: `a/` (not `b/`)` allows a/ only.

Checked, for every .h/.cc of the folder: a quoted include names an existing file rooted at the
repository, in its own folder or one it may include, and not another folder's internal header;
an angled include of a known third-party library is one it may use (any other angled include is
the standard library or the system, always allowed); a public header does not reach a library
its README forbids there, directly or through quoted includes. Prints each violation as
path:line: message and exits 1 if there is any.

  check_layering.py [--root DIR]
"""

import argparse
import os
import re
import sys

# Third-party libraries by the name a README uses, and the include paths that belong to them.
THIRD_PARTY = {
    "boost": ("boost/",),
    "cli11": ("CLI/",),
    "googletest": ("gtest/", "gmock/"),
    "librdkafka": ("librdkafka/",),
    "nlohmann_json": ("nlohmann/",),
    "openssl": ("openssl/",),
    "prometheus-cpp": ("prometheus/",),
    "rocksdb": ("rocksdb/",),
    "simdjson": ("simdjson.h", "simdjson/"),
    "spdlog": ("spdlog/", "fmt/"),
}

SOURCE_SUFFIXES = (".h", ".cc")
SKIPPED_TOP_LEVEL = {"tests", "docs", "helm", "scripts", "cmake"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
RULE_RE = re.compile(
    r"^\s*[-*]\s*(may include|may use|public headers must not use|internal headers)\s*:(.*)$",
    re.IGNORECASE,
)
TICKED_RE = re.compile(r"`([^`]+)`")


class Library:
    def __init__(self, folder):
        self.folder = folder  # repository-relative, no trailing slash, "/" separators
        self.may_include = set()
        self.may_use = set()
        self.public_must_not_use = set()
        self.internal_headers = set()  # repository-relative paths
        self.has_rules = False


class Checker:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.violations = []
        self.includes_cache = {}
        self.libraries = {}  # folder -> Library
        self.files_checked = 0

    # --- discovery -------------------------------------------------------------------------

    def skipped_dir(self, rel_dir, name):
        if name.startswith(".") or name.startswith("build"):
            return True
        return rel_dir == "" and name in SKIPPED_TOP_LEVEL

    def discover(self):
        """Finds library folders: a README.md plus C++ sources in it or below it."""
        candidates = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = self.rel(dirpath)
            dirnames[:] = sorted(d for d in dirnames if not self.skipped_dir(rel_dir, d))
            if rel_dir and "README.md" in filenames:
                candidates.append(rel_dir)
        for folder in candidates:
            if any(self.sources_of(folder, own_only=False)):
                self.libraries[folder] = self.parse_readme(folder)

    def parse_readme(self, folder):
        lib = Library(folder)
        readme = os.path.join(folder, "README.md")
        with open(os.path.join(self.root, readme), encoding="utf-8") as f:
            for line in f:
                m = RULE_RE.match(line)
                if not m:
                    continue
                lib.has_rules = True
                kind = m.group(1).lower()
                # What follows the values in parentheses is a comment, backticks and all.
                values = TICKED_RE.findall(m.group(2).split("(")[0])
                if kind == "may include":
                    lib.may_include.update(v.strip().rstrip("/") for v in values)
                elif kind == "internal headers":
                    lib.internal_headers.update(f"{folder}/{v.strip()}" for v in values)
                else:
                    names = {v.strip().lower() for v in values}
                    for name in sorted(names - THIRD_PARTY.keys()):
                        self.report(readme, 0, f"unknown third-party library `{name}` "
                                    f"(known: {', '.join(sorted(THIRD_PARTY))})")
                    target = lib.may_use if kind == "may use" else lib.public_must_not_use
                    target.update(names & THIRD_PARTY.keys())
        if not lib.has_rules:
            self.report(readme, 0, "states no layering: add the lines `- may include: ...`, "
                        "`- may use: ...` (see tests/lint/check_layering.py)")
        return lib

    def sources_of(self, folder, own_only=True):
        """The folder's .h/.cc files, without those of sub-libraries when own_only."""
        for dirpath, dirnames, filenames in os.walk(os.path.join(self.root, folder)):
            rel_dir = self.rel(dirpath)
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and not d.startswith("build")
                and not (own_only and f"{rel_dir}/{d}" in self.libraries))
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    yield f"{rel_dir}/{name}"

    # --- helpers ---------------------------------------------------------------------------

    def rel(self, path):
        rel = os.path.relpath(path, self.root)
        return "" if rel == "." else rel.replace(os.sep, "/")

    def report(self, path, line, message):
        self.violations.append((path, line, message))

    def owner(self, path):
        """The library folder a repository-relative path belongs to (the longest match)."""
        best = None
        for folder in self.libraries:
            if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
                best = folder
        return best

    def includes(self, path):
        """[(line, '<' or '"', target)] of a repository-relative file."""
        if path not in self.includes_cache:
            found = []
            with open(os.path.join(self.root, path), encoding="utf-8", errors="replace") as f:
                for number, text in enumerate(f, 1):
                    m = INCLUDE_RE.match(text)
                    if m:
                        found.append((number, m.group(1), m.group(2).strip()))
            self.includes_cache[path] = found
        return self.includes_cache[path]

    @staticmethod
    def third_party(target):
        for name, prefixes in THIRD_PARTY.items():
            if any(target == p or (p.endswith("/") and target.startswith(p)) for p in prefixes):
                return name
        return None

    def exists(self, target):
        return os.path.isfile(os.path.join(self.root, target))

    def reached_third_party(self, header, forbidden):
        """The first include chain from header to a forbidden library, or None."""
        seen = set()
        stack = [(header, [])]
        while stack:
            path, chain = stack.pop()
            if path in seen:
                continue
            seen.add(path)
            for line, kind, target in self.includes(path):
                if kind == "<":
                    name = self.third_party(target)
                    if name in forbidden:
                        return chain + [(path, line, f"<{target}>")], name
                elif self.exists(target):
                    stack.append((target, chain + [(path, line, f'"{target}"')]))
        return None

    # --- the checks ------------------------------------------------------------------------

    def check(self):
        self.discover()
        if not self.libraries:
            self.report(".", 0, "no library folder found (a README.md beside C++ sources)")
        for folder in sorted(self.libraries):
            lib = self.libraries[folder]
            for name in sorted(lib.may_include):
                # A folder that does not exist yet is a library still to come; one that exists
                # must be a library (README.md and sources), or the rule means nothing.
                if name not in self.libraries and os.path.isdir(os.path.join(self.root, name)):
                    self.report(f"{folder}/README.md", 0, f"`may include` names `{name}/`, "
                                "which is no library folder (a README.md beside C++ sources)")
            for path in self.sources_of(folder):
                self.files_checked += 1
                self.check_file(lib, path)
        return self.violations

    def check_file(self, lib, path):
        for line, kind, target in self.includes(path):
            if kind == "<":
                name = self.third_party(target)
                if name is not None and name not in lib.may_use:
                    self.report(path, line, f"<{target}> is {name}, which {lib.folder}/ may not "
                                "use (README.md `may use`)")
                continue
            if not self.exists(target):
                self.report(path, line, f'"{target}" is no file rooted at the repository')
                continue
            owner = self.owner(target)
            if owner is None:
                self.report(path, line, f'"{target}" is in no library folder')
            elif owner != lib.folder and owner not in lib.may_include:
                allowed = ", ".join(f"{f}/" for f in sorted(lib.may_include)) or "nothing"
                self.report(path, line, f'"{target}": {lib.folder}/ may not include {owner}/ '
                            f"(README.md `may include`: {allowed})")
            elif owner != lib.folder and target in self.libraries[owner].internal_headers:
                self.report(path, line, f'"{target}" is internal to {owner}/')
        is_public = path.endswith(".h") and path not in lib.internal_headers
        if is_public and lib.public_must_not_use:
            found = self.reached_third_party(path, lib.public_must_not_use)
            if found:
                chain, name = found
                via = " -> ".join(step for _, _, step in chain)
                first_line = chain[0][1]
                self.report(path, first_line, f"public header of {lib.folder}/ reaches {name} "
                            f"({via}); keep it in a .cc or an internal header")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                        help="repository root (default: this script's repository)")
    args = parser.parse_args(argv)
    checker = Checker(args.root)
    violations = checker.check()
    for path, line, message in violations:
        print(f"{path}:{line}: {message}" if line else f"{path}: {message}")
    print(f"layering: {checker.files_checked} files in {len(checker.libraries)} libraries "
          f"({', '.join(sorted(checker.libraries))}), {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
