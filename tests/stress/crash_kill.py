"""SIGKILL during bulk inserts and commits: after each kill the database holds exactly the
committed state (every committed batch whole, nothing of the others), in rollback-journal and
WAL modes. Usage: crash_kill.py TRIALS_PER_MODE [SEED]. Prints "N passed, N failed"."""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def child(path, first_batch):
    con = common.connect(path)
    con.execute("SELECT embed_load('m', ?)", (common.MODEL,))
    b = first_batch
    while True:  # until killed
        common.write_batch(con, b)
        b += 1


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    passed = failed = 0
    for journal in ("delete", "wal"):
        folder = tempfile.mkdtemp(prefix="embed-crash-")
        path = os.path.join(folder, "crash.db")
        common.create(path, journal)
        for trial in range(trials):
            con = common.connect(path)
            start = (con.execute("SELECT max(id) FROM batches").fetchone()[0] or 0) + 1
            con.close()
            p = subprocess.Popen([sys.executable, __file__, "--child", path, str(start)],
                                 stderr=subprocess.PIPE)
            time.sleep(rng.uniform(0.3, 0.9))  # loading the model takes ~0.1 s
            p.send_signal(signal.SIGKILL)
            p.wait()
            con = common.connect(path)
            con.execute("SELECT embed_load('m', ?)", (common.MODEL,))
            n = con.execute("SELECT count(*) FROM batches").fetchone()[0]
            problems = common.check_exact_state(con, "%s trial %d" % (journal, trial))
            con.close()
            if problems:
                failed += 1
                print("FAIL %s trial %d:\n  %s" % (journal, trial, "\n  ".join(problems)))
            else:
                passed += 1
                print("ok %s trial %d: %d committed batches, exactly as committed" % (journal, trial, n))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(main())
