#!/usr/bin/env bash
# The C sources against .clang-format (clang-format 14, as Debian 12 ships it): each file that
# clang-format would change is a failure, shown with its first differing lines.
# Prints "N passed, N failed". `make format` rewrites them in place.
set -u
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not found (apt-get install clang-format)"; echo "0 passed, 1 failed"; exit 1; }
passed=0 failed=0
for f in $(git ls-files 'core/*.[ch]' 'ext/*.[ch]' 'tests/*.[ch]' 'bench/*.[ch]' 'include/*.h'); do
    if out=$(clang-format --style=file "$f" | diff -u "$f" - | head -n 12) && [ -z "$out" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $f is not formatted as .clang-format says:"
        echo "$out"
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
