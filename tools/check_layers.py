#!/usr/bin/env python3
"""Checks that the files of a folder form layers: no call cycle between their objects, no
include cycle between their headers, and no call or include against the order of core's folders
(FOLDER_ORDER: each folder calls only those before it).

Usage (from the repository root): tools/check_layers.py BUILD_DIR DIR [DIR...]
   e.g. tools/check_layers.py build core      tools/check_layers.py build ext      (build first)

Calls: for every BUILD_DIR/DIR/*.o, the symbols it leaves undefined (nm -u) are looked up among
the functions and data that the objects of every BUILD_DIR/*/ define (sqlite3_api aside, see
IGNORED); each file is listed with its layer (0: uses no file of the folders checked; n: one
above the highest layer it uses), the files it uses there, and the other folders it uses. Includes: every DIR/*.[ch] and include/sqlite-embed/*.h, with
#include "x.h" resolved as the Makefile's -I flags resolve it (the file's own folder first).
Prints each cycle found and exits 1 if there is one; 0 otherwise.
"""
import glob
import os
import re
import subprocess
import sys

INCLUDE_PATH = ["include", "core", "ext"]  # the Makefile's -I order
# core's layers, bottom to top: a file may use its own folder and those before it.
FOLDER_ORDER = ["core/base", "core/math", "core/text", "core/nn", "core/search", "core/model"]
DEFINED = set("TWiDRBVGS")  # nm types of a definition another object links to (i: a target_clones ifunc)
# SQLITE_EXTENSION_INIT1's API pointer: set once by the entry point (embed_ext.c) and read by every
# ext file, as in every SQLite extension; it is no dependency of theirs on the entry point.
IGNORED = {"sqlite3_api"}


def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def symbols(obj):
    """(defined, undefined) global symbols of an object file: functions and data (a table of
    functions, such as an sqlite3_module, is a path of calls too)."""
    defined = {f[2] for f in nm(obj, "-g", "--defined-only") if len(f) == 3 and f[1] in DEFINED} - IGNORED
    undefined = {f[-1] for f in nm(obj, "-u")}
    return defined, undefined


def call_graph(build, dirs):
    """{object: {used object: [symbols]}} for the objects of dirs, and who defines what."""
    owner = {}
    for obj in sorted(glob.glob(os.path.join(build, "**", "*.o"), recursive=True)):
        src = os.path.relpath(obj, build)[:-2] + ".c"
        if not os.path.exists(src):
            continue  # an object whose source is gone (a renamed file): not linked any more
        for s in symbols(obj)[0]:
            owner.setdefault(s, src)
    graph = {}
    for d in dirs:
        for obj in sorted(glob.glob(os.path.join(build, d, "**", "*.o"), recursive=True)):
            src = os.path.relpath(obj, build)[:-2] + ".c"
            if not os.path.exists(src):
                continue
            uses = {}
            for s in symbols(obj)[1]:
                if s in owner and owner[s] != src:
                    uses.setdefault(owner[s], []).append(s)
            graph[src] = uses
    return graph


def include_graph(dirs):
    files = sorted({f for d in dirs + ["include/sqlite-embed"]
                    for f in glob.glob(os.path.join(d, "**", "*.[ch]"), recursive=True)})
    graph = {}
    for f in files:
        deps = []
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                for base in [os.path.dirname(f)] + INCLUDE_PATH:
                    p = os.path.normpath(os.path.join(base, m.group(1)))
                    if os.path.exists(p):
                        deps.append(p)
                        break
        graph[f] = deps
    return graph


def folder_rank(path):
    """A file's rank by its folder; a folder inside one of core's (core/nn/arch) has its rank."""
    d = os.path.dirname(path)
    while d not in FOLDER_ORDER and d.count("/") > 1:
        d = os.path.dirname(d)
    return FOLDER_ORDER.index(d) if d in FOLDER_ORDER else None


def against_order(graph):
    """(user, used) pairs where a file of core uses one of a later folder."""
    out = []
    for a, used in sorted(graph.items()):
        for b in sorted(used):
            ra, rb = folder_rank(a), folder_rank(b)
            if ra is not None and rb is not None and rb > ra:
                out.append((a, b))
    return out


def cycles(graph):
    """Strongly connected components of more than one node, or with a self-edge (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layers(graph):
    level = {}

    def of(v, seen=()):
        if v in level:
            return level[v]
        if v in seen:
            return 0  # a cycle: reported separately
        inside = [w for w in graph[v] if w in graph]
        level[v] = 1 + max((of(w, seen + (v,)) for w in inside), default=-1)
        return level[v]

    for v in graph:
        of(v)
    return level


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    build, dirs = sys.argv[1], [d.rstrip("/") for d in sys.argv[2:]]
    calls = call_graph(build, dirs)
    if not calls:
        sys.exit("check_layers: no objects in %s/{%s}: build first" % (build, ",".join(dirs)))
    level = layers(calls)
    print("calls (layer, file, the files whose functions or data it uses):")
    for src in sorted(calls, key=lambda s: (level[s], s)):
        inside = sorted(w for w in calls[src] if w in calls)
        outside = sorted({os.path.dirname(w) + "/" for w in calls[src] if w not in calls})
        used = ", ".join(os.path.basename(w) for w in inside) or "-"
        print("  %d %-36s %s%s" % (level[src], src, used, ("   [+ " + " ".join(outside) + "]") if outside else ""))
    found = 0
    for comp in cycles(calls):
        found += 1
        print("CALL CYCLE: " + " <-> ".join(comp))
        for a in comp:
            for b in comp:
                if b in calls[a]:
                    print("    %s uses %s: %s" % (a, b, " ".join(sorted(calls[a][b])[:6])))
    for a, b in against_order(calls):
        found += 1
        print("CALL AGAINST THE FOLDER ORDER: %s uses %s: %s" % (a, b, " ".join(sorted(calls[a][b])[:6])))
    includes = include_graph(dirs)
    for a, b in against_order(includes):
        found += 1
        print("INCLUDE AGAINST THE FOLDER ORDER: %s includes %s" % (a, b))
    for comp in cycles(includes):
        found += 1
        print("INCLUDE CYCLE: " + " <-> ".join(comp))
    n_inc = sum(len(v) for v in includes.values())
    print("%d files, %d call edges, %d include edges: %s" % (
        len(calls), sum(len(v) for v in calls.values()), n_inc,
        "no cycle and nothing against the folder order" if not found else "%d problem(s)" % found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
