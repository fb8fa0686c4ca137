#!/usr/bin/env bash
# Runs every benchmark script bench/*.sh (other than this one) with the build folder as $1.
# Benchmarks print ratios against a baseline measured in the same run.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
status=0
for script in bench/*.sh; do
    [ "$(basename "$script")" = run.sh ] && continue
    echo "=== $script"
    bash "$script" "$build" || status=1
done
exit $status
