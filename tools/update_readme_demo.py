#!/usr/bin/env python3
"""Rewrites the ```text block of README.md's "### The demo" with what `make demo` prints for its
model-explaining part: the Makefile's demo command (sqlite3 -box, .load, .read sql/demo.sql) up to
sql/demo_search.sql, whose package search depends on the machine and is not shown. Run it after
the shipped model (models/sqlite-embed-mini) or sql/demo.sql changes; tests/sql/test_demo.py
checks that the block is what the demo prints.

Usage (from anywhere; builds nothing, so `make` first): tools/update_readme_demo.py [EXTENSION]
   EXTENSION defaults to ./embed.so (EMBED_EXT, as the tests take it)
"""
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
README = os.path.join(ROOT, "README.md")
HEADING = "### The demo\n"
SEARCH = ".read sql/demo_search.sql"
README_MAX_LINES = 400


def demo_command(ext):
    """The Makefile's `demo` recipe line that runs the sqlite3 shell, as an argument list: every
    argument before the package search's .read, with `.load ./embed` loading `ext` instead."""
    lines = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read().split("\ndemo:", 1)[1].split("\n")
    recipe = []
    for line in lines[1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip().lstrip("@"))
    shell = [l for l in recipe if l.startswith("sqlite3 ")]
    assert len(shell) == 1, "the Makefile's demo recipe has no single sqlite3 line: %r" % recipe
    args = shlex.split(shell[0])
    assert SEARCH in args and args[-1] == SEARCH, "the demo's last step is no longer %r: %r" % (SEARCH, args)
    assert ".load ./embed" in args, args
    args = args[:args.index(SEARCH)]
    sqlite3 = shutil.which("sqlite3")
    assert sqlite3, "the sqlite3 shell is not installed (scripts/deps.sh installs it)"
    return [sqlite3] + [".load %s" % ext if a == ".load ./embed" else a for a in args[1:]]


def demo_output(ext):
    """What the demo's deterministic part prints, run from the repository root."""
    out = subprocess.run(demo_command(ext), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and not out.stderr, "the demo failed (exit %d): %s" % (out.returncode, out.stderr)
    return out.stdout


def block_span(text):
    """(start, end) character offsets of the content of the first ```text block after HEADING."""
    section = text.index(HEADING)
    fence = text.index("\n```text\n", section) + len("\n```text\n")
    end = text.index("\n```\n", fence - 1) + 1
    nxt = text.find("\n### ", section + 1)
    assert nxt < 0 or end < nxt, "README.md's demo section has no ```text block"
    return fence, end


def main():
    ext = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EMBED_EXT", "embed.so"))
    text = open(README, encoding="utf-8").read()
    start, end = block_span(text)
    new = text[:start] + demo_output(ext) + text[end:]
    if new == text:
        print("README.md: the demo block is already what the demo prints")
        return 0
    with open(README, "w", encoding="utf-8") as f:
        f.write(new)
    lines = len(new.splitlines())
    print("README.md: the demo block rewritten (%d lines in all)" % lines)
    if lines > README_MAX_LINES:
        print("README.md has %d lines, more than %d: shorten sql/demo.sql's output" % (lines, README_MAX_LINES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
