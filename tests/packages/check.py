"""A small runner for the package suites: @test functions, run in order by main(), each a pass
or a failure; "N passed, N failed" last, as tests/run.sh reads it."""
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
TINY = os.path.join(FIXTURES, "models", "minilm-tiny-st")
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def run(cmd, ok=True, **kw):
    """Runs cmd (a list); returns the CompletedProcess, or raises with its output when its exit
    status is not 0 and ok is set."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)
    if ok and out.returncode != 0:
        raise AssertionError("%s: exit %d\n%s\n%s" % (" ".join(cmd), out.returncode, out.stdout[-3000:],
                                                     out.stderr[-3000:]))
    return out


def version():
    with open(os.path.join(ROOT, "VERSION"), encoding="ascii") as f:
        return f.read().strip()


def main():
    passed = failed = 0
    for fn in TESTS:
        start = time.time()
        try:
            fn()
            passed += 1
            print("ok %s (%.2fs)" % (fn.__name__, time.time() - start), flush=True)
        except Exception:
            failed += 1
            print("FAIL %s" % fn.__name__)
            traceback.print_exc(limit=3, file=sys.stdout)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
