#!/usr/bin/env python3
"""Checks that every relative link of the project's Markdown pages leads somewhere.

Pages: README.md at the root, every docs/*.md, and every folder's README.md (outside build*/
and hidden folders). Links: inline `[text](target)` and `![alt](target)`, and reference
definitions `[name]: target`, outside code blocks and code spans. A link with a scheme
(https:, mailto:, ...) is not checked. A relative target must name an existing file or folder
(from the page's folder); a `#fragment` on a Markdown page (the same page for `#fragment`
alone) must name one of its headings, as GitHub derives anchors from them (lower-cased,
punctuation dropped, spaces as hyphens, repeats numbered -1, -2, ...), or an explicit
`<a id=...>` / `<a name=...>`. Prints each broken link as path:line: message; exits 1 if any.

  check_links.py [--root DIR]
"""

import argparse
import os
import re
import sys

INLINE_RE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR_RE = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages(root):
    found = []
    readme = os.path.join(root, "README.md")
    if os.path.isfile(readme):
        found.append(readme)
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        found += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs
                            if not d.startswith(".") and not d.startswith("build")
                            and d != "node_modules")
        if directory != root and "README.md" in files:
            found.append(os.path.join(directory, "README.md"))
    return found


def text_lines(path):
    """(line number, text) of the lines outside fenced code blocks, code spans blanked."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None
    for number, line in enumerate(lines, 1):
        m = FENCE_RE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, re.sub(r"`[^`]*`", lambda s: " " * len(s.group(0)), line)


def slug(heading):
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache):
    if path not in cache:
        found, seen = set(), {}
        for _, line in text_lines(path):
            for name in EXPLICIT_ANCHOR_RE.findall(line):
                found.add(name)
        with open(path, encoding="utf-8") as f:
            raw = f.read().split("\n")
        fence = None
        for line in raw:
            m = FENCE_RE.match(line)
            if m:
                fence = m.group(1) if fence is None else (None if m.group(1) == fence else fence)
                continue
            h = HEADING_RE.match(line) if fence is None else None
            if h:
                base = slug(h.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def check(root):
    problems = []
    cache = {}
    checked = 0
    for page in pages(root):
        rel_page = os.path.relpath(page, root)
        for number, line in text_lines(page):
            targets = INLINE_RE.findall(line)
            m = REFERENCE_RE.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if SCHEME_RE.match(target) or target.startswith("//"):
                    continue
                checked += 1
                path_part, _, fragment = target.partition("#")
                if path_part.startswith("/"):
                    problems.append(f"{rel_page}:{number}: {target}: an absolute path; link "
                                    "relative to the page")
                    continue
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path_part)) \
                    if path_part else page
                if not os.path.exists(dest):
                    problems.append(f"{rel_page}:{number}: {target}: no such file")
                    continue
                if fragment and dest.endswith(".md") and os.path.isfile(dest):
                    if fragment not in anchors(dest, cache):
                        problems.append(f"{rel_page}:{number}: {target}: no heading or anchor "
                                        f"#{fragment} in {os.path.relpath(dest, root)}")
    return problems, checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    problems, checked = check(root)
    for p in problems:
        print(p)
    print(f"links: {checked} relative links in {len(pages(root))} pages, "
          f"{len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
