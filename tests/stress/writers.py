"""Several processes write one database under WAL with busy_timeout while others search it:
no spurious SQLITE_BUSY (each transaction runs on a fresh connection, whose first statement
touches the index), no lost row, and every search sees exactly the rows of its snapshot.
Usage: writers.py TRANSACTIONS_PER_WRITER [WRITERS] [READERS]. Prints "N passed, N failed"."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def writer(path, wid, n):
    errors = 0
    for i in range(n):
        con = common.connect(path)  # fresh: it has not touched the index yet
        con.execute("SELECT embed_load('m', ?)", (common.MODEL,))
        try:
            common.write_batch(con, wid * 100000 + i, wid)
        except Exception as e:  # counted, then reported by the parent
            errors += 1
            print("writer %d batch %d: %s" % (wid, i, e), flush=True)
        con.close()
    print("errors %d" % errors, flush=True)


def reader(path, stop_file):
    checks = stale = 0
    con = common.connect(path)
    while not os.path.exists(stop_file):
        con.execute("BEGIN")
        rows = sorted(r for r, in con.execute("SELECT rowid FROM vix"))
        hits = con.execute("SELECT rowid FROM vix WHERE vix MATCH ? AND k = ?",
                           (common.blob([0.0] * common.DIMS), len(rows) + 5)).fetchall() if rows else []
        batches = con.execute("SELECT count(*) FROM batches").fetchone()[0]
        con.execute("COMMIT")
        checks += 1
        if sorted(r for r, in hits) != rows or len(rows) != batches * common.ROWS_PER_BATCH:
            stale += 1
    print("checks %d stale %d" % (checks, stale), flush=True)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    writers = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    readers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    folder = tempfile.mkdtemp(prefix="embed-writers-")
    path, stop = os.path.join(folder, "w.db"), os.path.join(folder, "stop")
    common.create(path, "wal")
    me = os.path.abspath(__file__)
    rs = [subprocess.Popen([sys.executable, me, "--reader", path, stop], stdout=subprocess.PIPE, text=True)
          for _ in range(readers)]
    ws = [subprocess.Popen([sys.executable, me, "--writer", path, str(w + 1), str(n)],
                           stdout=subprocess.PIPE, text=True) for w in range(writers)]
    outs = [w.communicate()[0] for w in ws]
    open(stop, "w").close()
    routs = [r.communicate()[0] for r in rs]
    passed = failed = 0

    def verdict(ok, line):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(("ok " if ok else "FAIL ") + line)

    errors = sum(int(o.strip().splitlines()[-1].split()[1]) if o.strip() else n for o in outs)
    verdict(errors == 0, "%d writers x %d transactions on fresh connections: %d failed (busy or other)"
            % (writers, n, errors))
    for o in outs:
        for line in o.splitlines()[:-1][:5]:
            print("   ", line)
    checks = sum(int(o.split()[1]) for o in routs if o.strip())
    stale = sum(int(o.split()[3]) for o in routs if o.strip())
    verdict(stale == 0 and checks > 0, "%d readers: %d searches, %d saw other than their snapshot"
            % (readers, checks, stale))
    con = common.connect(path)
    con.execute("SELECT embed_load('m', ?)", (common.MODEL,))
    committed = con.execute("SELECT count(*) FROM batches").fetchone()[0]
    problems = common.check_exact_state(con, "after the writers")
    verdict(not problems and committed == writers * n - errors,
            "%d batches committed, indexes exactly as committed%s" % (committed, "".join("\n  " + p for p in problems)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--reader":
        reader(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
