"""The held-out pairs test_model_quality.py checks the shipped model on: 300 of the (summary,
description) pairs models/train/debian_pairs.py held out of training (every tenth, in file order),
from Debian bookworm's English package descriptions.

Usage: /usr/bin/python3 tests/references/make_quality_subset.py PAIRS.jsonl"""
import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quality", "heldout.json")
rows = [json.loads(line) for line in open(sys.argv[1])]
test = [r for r in rows if r["split"] == "test"][::10][:300]
json.dump({"about": __doc__.split("\n\n")[0], "pairs": [
    {"package": r["package"], "summary": r["summary"], "description": r["description"]} for r in test]},
    open(OUT, "w"), indent=0, ensure_ascii=False)
print("%d pairs into %s" % (len(test), OUT))
