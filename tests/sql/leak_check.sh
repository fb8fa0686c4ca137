#!/usr/bin/env bash
# Leak check of the SQL surface under the sanitizer build: the sqlite3 shell (which frees
# what it allocates) runs statements touching every function and table, with LeakSanitizer
# on. Prints "N passed, N failed".
set -u
ext=${1:?extension path}
cd "$(dirname "$0")/../.."
out=$(LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
      ASAN_OPTIONS=detect_leaks=1 sqlite3 :memory: ".load ${ext%.so}" ".read tests/sql/leak_check.sql" ".read tests/sql/leak_check_index.sql" \
      ".read tests/sql/leak_check_hybrid.sql" ".read tests/sql/leak_check_quant.sql" 2>&1)
rc=$?
# The shell exits non-zero after the expected SQL errors; only sanitizer reports count.
if [ $rc -lt 2 ] && ! grep -q "ERROR: LeakSanitizer\|ERROR: AddressSanitizer\|runtime error" <<<"$out"; then
    echo "1 passed, 0 failed"
else
    echo "$out" | tail -n 40
    echo "0 passed, 1 failed"
    exit 1
fi
