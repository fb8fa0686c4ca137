#!/usr/bin/env bash
# A change's effect on the encoder's speed, measured in one process (bench/ab_encoder.c): this
# tree's build against the build of an older commit, pass by pass in alternation, on the
# benchmark's random-weight models. Prints, per model, weights, shape and thread count, the
# median ratio of the pairs' times new / old (below 1: the change is faster) with its quartiles.
# Usage: bench/ab_encoder.sh BUILD_DIR OLD_COMMIT
# Environment: MODELS (default minilm,base), WEIGHTS (default f32; f32,int8 for both), THREADS
# (default 1,2), SHAPES (B x T x pairs, default "1x16x200 1x128x40 32x23x20 32x128x8"; bert-base
# runs a quarter of the pairs of the batches), AB_DIR (where the old build and the models go;
# default a temporary folder, removed at the end).
# OpenBLAS picks its own kernels (OPENBLAS_CORETYPE unset, as in encoder_peers.sh); the driver
# asks its idle threads to sleep at once (bench_openblas_sleeps), as the other C benchmarks do.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: bench/ab_encoder.sh BUILD_DIR OLD_COMMIT}
old=${2:?usage: bench/ab_encoder.sh BUILD_DIR OLD_COMMIT}
bench="$build/bench/bench_encoder"
[ -x "$bench" ] && [ -f "$build/libembedcore.a" ] ||
    { echo "ab_encoder.sh: build first (make BUILD=$build all $bench)" >&2; exit 1; }
dir=${AB_DIR:-$(mktemp -d /tmp/ab_encoder_XXXXXX)}
[ -n "${AB_DIR:-}" ] || trap 'git worktree remove --force "$dir/old" 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir"
rev=$(git rev-parse "$old^{commit}")
if [ ! -f "$dir/old.a" ] || [ "$(cat "$dir/old.rev" 2>/dev/null)" != "$rev" ]; then # built once per commit
    echo "### building $old in $dir/old"
    git worktree remove --force "$dir/old" 2>/dev/null || true
    git worktree add --force --detach "$dir/old" "$rev" >/dev/null
    make -C "$dir/old" -s BUILD=build-ab -j"$(nproc)" build-ab/libembedcore.a
    # every symbol the old library defines becomes old_*, its own calls included
    nm -g --defined-only "$dir/old/build-ab/libembedcore.a" | awk 'NF == 3 { print $3 " old_" $3 }' | sort -u \
        >"$dir/old.map"
    objcopy --redefine-syms="$dir/old.map" "$dir/old/build-ab/libembedcore.a" "$dir/old.a"
    echo "$rev" >"$dir/old.rev"
fi
# the driver is built with the Makefile's own flags and libraries (its ALL_CFLAGS and LIBS)
# shellcheck disable=SC2016 # $(...) is for make to expand
{ read -r cflags; read -r libs; } < <(printf 'ab-flags:\n\t@echo $(ALL_CFLAGS)\n\t@echo $(LIBS)\n' |
    make -s --no-print-directory -f Makefile -f - ab-flags)
# shellcheck disable=SC2086
cc $cflags bench/ab_encoder.c -o "$dir/ab_encoder" "$build/libembedcore.a" "$dir/old.a" $libs
models=${MODELS:-minilm,base}
weights=${WEIGHTS:-f32}
threads=${THREADS:-1,2}
for m in ${models//,/ }; do
    [ -f "$dir/models/$m/config.json" ] || "$bench" --write "$dir/models" --model "$m" >/dev/null
done
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "### $(git rev-parse --short HEAD) (new) against $(git rev-parse --short "$old") (old); $(uptime)"
for m in ${models//,/ }; do
    for w in ${weights//,/ }; do
        for th in ${threads//,/ }; do
            for s in ${SHAPES:-1x16x200 1x128x40 32x23x20 32x128x8}; do
                IFS=x read -r B T n <<<"$s"
                [ "$m" != base ] || [ "$B" = 1 ] || n=$(((n + 3) / 4))
                "$dir/ab_encoder" "$dir/models/$m" "$w" "$B" "$T" "$n" "$th"
            done
        done
    done
done
echo "### $(uptime)"
