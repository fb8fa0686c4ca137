"""The masked-language corpus of sqlite-embed's own model: English text that Debian ships.

Each package of corpus.json is fetched by name and version (apt-get download), its .deb checked
against the recorded sha256, unpacked with dpkg-deb, and its text cut into paragraphs: GCIDE's
dictionary entries (those taken from WordNet dropped: a word-in-context test is made from
WordNet's examples), the man pages' roff, Debian Reference's HTML, Python's reST sources. The
train split of the archive's English package descriptions (debian_pairs.py) is added; held-out
packages stay out, so the search evaluation never reads text the model was trained on.

Writes OUT.txt (one paragraph a line, sources in a fixed order) and prints its sha256.
Usage: /usr/bin/python3 corpus.py PAIRS.jsonl WORKDIR OUT.txt"""
import glob
import gzip
import hashlib
import html.parser
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def fetch(pkg, debs):
    """The package's .deb in debs/, downloaded when missing, its sha256 checked."""
    path = os.path.join(debs, "%s_%s_all.deb" % (pkg["name"], pkg["version"].replace(":", "%3a")))
    if not os.path.exists(path):
        r = subprocess.run(["apt-get", "download", "%s=%s" % (pkg["name"], pkg["version"])], cwd=debs,
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            sys.exit("corpus: cannot download %s %s (%s); the archive may have moved on: fetch it from "
                     "snapshot.debian.org into %s" % (pkg["name"], pkg["version"], r.stderr.strip(), debs))
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if digest != pkg["sha256"]:
        sys.exit("corpus: %s has sha256 %s, corpus.json says %s" % (path, digest, pkg["sha256"]))
    return path


def unpack(deb, root):
    if not os.path.isdir(root):
        os.makedirs(root + ".tmp", exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", deb, root + ".tmp"], check=True)
        os.rename(root + ".tmp", root)
    return root


def b64num(s):
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def gcide_paragraphs(root):
    base = os.path.join(root, "usr/share/dictd/gcide")
    data = gzip.open(base + ".dict.dz").read()
    for line in open(base + ".index", encoding="utf-8", errors="replace"):
        word, off, size = line.rstrip("\n").split("\t")[:3]
        if word.startswith("00-database"):
            continue
        entry = data[b64num(off):b64num(off) + b64num(size)].decode("utf-8", "replace")
        if "WordNet" in entry:
            continue
        entry = re.sub(r"\\[^\\\n]*\\", " ", entry).replace("{", "").replace("}", "")  # pronunciations, links
        entry = re.sub(r"\[[^\]\n]*(?:Webster|PJC|Century|Supp)[^\]\n]*\]", " ", entry)
        for para in re.split(r"\n\s*\n", entry):
            yield para


ROFF_ESCAPES = [(r"\\f(?:\[[^\]]*\]|\(..|.)", ""), (r"\\\(em|\\\(en", " - "), (r"\\\((?:lq|rq|dq)", '"'),
                (r"\\\(aq", "'"), (r"\\[-e]", lambda m: "-" if m.group(0) == "\\-" else "\\"),
                (r"\\[&|^0 ]", " "), (r"\\\*\(?\w+", ""), (r"\\\(\w\w", "")]


def man_paragraphs(root):
    for path in sorted(glob.glob(os.path.join(root, "usr/share/man/man*/*.gz"))):
        text = gzip.open(path).read().decode("utf-8", "replace")
        para, out = [], []
        for line in text.split("\n"):
            if line.startswith(".\\\"") or line.startswith("'\\\""):
                continue
            m = re.match(r"\.(\w+)\s*(.*)", line)
            if m:
                if m.group(1) in ("PP", "P", "LP", "SH", "SS", "TP", "IP", "HP", "RS", "RE", "nf", "fi",
                                  "EX", "EE", "TH", "br", "sp", "in", "ti"):
                    out.append(" ".join(para))
                    para = []
                    if m.group(1) in ("SH", "SS", "IP"):
                        para.append(m.group(2).strip('"'))
                    continue
                line = re.sub(r'"', "", m.group(2))
            para.append(line)
        out.append(" ".join(para))
        for p in out:
            for pat, rep in ROFF_ESCAPES:
                p = re.sub(pat, rep, p)
            yield p


class TextOf(html.parser.HTMLParser):
    BLOCKS = {"p", "li", "dd", "dt", "h1", "h2", "h3", "h4", "td", "pre", "div", "title"}

    def __init__(self):
        super().__init__()
        self.paras, self.cur, self.skip = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        if tag in self.BLOCKS:
            self.flush()

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip -= 1
        if tag in self.BLOCKS:
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)

    def flush(self):
        self.paras.append("".join(self.cur))
        self.cur = []


def html_paragraphs(root):
    for path in sorted(glob.glob(os.path.join(root, "usr/share/debian-reference/*.en.html"))):
        p = TextOf()
        p.feed(open(path, encoding="utf-8", errors="replace").read())
        p.flush()
        yield from p.paras


def rst_paragraphs(root):
    for path in sorted(glob.glob(os.path.join(root, "usr/share/doc/python3.11/html/_sources/**/*.rst.txt"),
                                 recursive=True)):
        text = open(path, encoding="utf-8", errors="replace").read()
        for para in re.split(r"\n\s*\n", text):
            if para.startswith((" ", "\t", "..", ">>>")) or re.match(r"^[=*\-~^]{3,}", para):
                continue  # code, directives, comments and underlines
            para = re.sub(r":\w+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", para)
            yield re.sub(r"``?([^`]*)``?_?", r"\1", para)


READERS = {"gcide": gcide_paragraphs, "man": man_paragraphs, "html": html_paragraphs, "rst": rst_paragraphs}


def clean(para):
    para = re.sub(r"\s+", " ", para).strip()
    return para if len(para) >= 40 and sum(c.isalpha() for c in para) > len(para) / 2 else None


def main(pairs, work, out):
    manifest = json.load(open(os.path.join(HERE, "corpus.json")))
    debs = os.path.join(work, "debs")
    os.makedirs(debs, exist_ok=True)
    counts, h = {}, hashlib.sha256()
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        def write(source, para):
            para = clean(para)
            if para:
                f.write(para + "\n")
                h.update((para + "\n").encode())
                counts[source] = counts.get(source, 0) + 1
        for pkg in manifest["packages"]:
            root = unpack(fetch(pkg, debs), os.path.join(work, "unpacked", pkg["name"]))
            for para in READERS[pkg["kind"]](root):
                write(pkg["name"], para)
        for line in open(pairs, encoding="utf-8"):
            r = json.loads(line)
            if r["split"] == "train":
                for para in r["description"].split("\n\n"):
                    write("package descriptions", r["summary"] + ". " + para)
    os.rename(out + ".tmp", out)
    for source, n in counts.items():
        print("corpus: %-22s %8d paragraphs" % (source, n), file=sys.stderr)
    print("corpus: %s sha256 %s" % (out, h.hexdigest()), file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:4])
