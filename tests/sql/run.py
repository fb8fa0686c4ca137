"""Runs every tests/sql/test_*.py; prints each failure and "N passed, N failed" last."""
import glob
import importlib.util
import os
import sys
import time
import traceback

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import harness  # noqa: E402

only = sys.argv[1:]
for path in sorted(glob.glob(os.path.join(here, "test_*.py"))):
    name = os.path.splitext(os.path.basename(path))[0]
    if only and name not in only:
        continue
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

passed = failed = 0
for fn in harness.TESTS:
    label = "%s.%s" % (fn.__module__, fn.__name__)
    start = time.time()
    try:
        fn()
        passed += 1
        print("ok %s (%.2fs)" % (label, time.time() - start))
    except Exception as e:
        failed += 1
        message = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print("FAIL %s: %s" % (label, message[:300]))
        traceback.print_exc(limit=3, file=sys.stdout)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
