#!/usr/bin/env python3
"""Lists every place where a page's snippets and their shown results disagree, page after page:
tests/sql/test_readme.py's run_page, reporting each mismatch (with the values returned) instead
of stopping at the first. For the day the shipped model changes and its numbers move.

Usage (from the repository root, after make): tools/list_doc_mismatches.py PAGE.md [PAGE.md ...]
   the extension is EMBED_EXT, or ./embed.so
"""
import os
import sys

os.environ.setdefault("EMBED_EXT", os.path.abspath("embed.so"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "sql"))
import test_readme  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for page in sys.argv[1:]:
        test_readme.run_page(os.path.abspath(page), fail=print)
