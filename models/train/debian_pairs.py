"""(summary, description) pairs from the English package descriptions of the Debian archive, the
training and evaluation data of sqlite-embed's own small model.

`apt-get -o Acquire::Languages=en update` leaves the archive's Translation-en files under
/var/lib/apt/lists (lz4- or xz-compressed; apt-helper cat-file reads either). Each entry has a
package name, a one-line summary and a paragraph or more of description. Entries that share a
description (a library and its -dev and -doc packages, say) are kept once, so that no two pairs
in a batch are the same text. A seeded 5 % of the packages is held out for evaluation.

Usage: python3 debian_pairs.py OUT.jsonl  (each line: {"package", "summary", "description", "split"})"""
import glob
import hashlib
import json
import re
import subprocess
import sys

HELD_OUT = 0.05
SEED = "sqlite-embed-1"


def translation_files():
    files = sorted(glob.glob("/var/lib/apt/lists/*_i18n_Translation-en*"))
    if not files:
        sys.exit("no Translation-en files: run apt-get -o Acquire::Languages=en update")
    return files


def read_entries(path):
    text = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path], check=True,
                          capture_output=True).stdout.decode("utf-8", "replace")
    for block in text.split("\n\n"):
        pkg = re.search(r"^Package: (.+)$", block, re.M)
        desc = re.search(r"^Description-en: (.*)$((?:\n .*)*)", block, re.M)
        if not pkg or not desc:
            continue
        lines = [ln[1:] for ln in desc.group(2).split("\n") if ln.startswith(" ")]
        body = "\n".join("" if ln.strip() == "." else ln for ln in lines)
        body = re.sub(r"\n{3,}", "\n\n", body).strip()
        yield pkg.group(1).strip(), desc.group(1).strip(), body


def split_of(package):
    h = int(hashlib.sha256((SEED + package).encode()).hexdigest()[:8], 16)
    return "test" if h < HELD_OUT * 2**32 else "train"


def main(out):
    seen_desc, seen_pkg, n = set(), set(), {"train": 0, "test": 0}
    with open(out, "w") as f:
        for path in translation_files():
            for pkg, summary, body in read_entries(path):
                key = re.sub(r"\s+", " ", body.lower())
                if pkg in seen_pkg or len(body) < 40 or key in seen_desc:
                    continue
                seen_pkg.add(pkg)
                seen_desc.add(key)
                split = split_of(pkg)
                n[split] += 1
                f.write(json.dumps({"package": pkg, "summary": summary, "description": body,
                                    "split": split}) + "\n")
    print("pairs: %d train, %d held out" % (n["train"], n["test"]), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
