#!/usr/bin/env bash
# make check-fresh: the README's set-up, tried as a new user would try it on a fresh machine.
#
# Builds a minimal Debian chroot of the host's own suite (debootstrap --variant=minbase, from
# the mirror apt is configured with), clones the committed HEAD of this repository into it and
# runs the README's two commands there, `make demo` then `make test`, as root with a clean
# environment; then `make install`, `.load embed` from another folder, and `make uninstall`.
#
# Beyond minbase the chroot has only what a fresh machine of this kind comes with, and a trap:
#   make, git        to type `make demo` at all, and to clone (gcc is NOT there: deps.sh must
#                    install it, with everything else the build and the tests use)
#   ca-certificates  with the machine's own CAs from /usr/local/share/ca-certificates, so that
#                    HTTPS (npm) works as on the host; /etc/npmrc too, if the host has one
#   libblas-dev      the reference BLAS, whose cblas.h once hid a missing OpenBLAS
# apt uses the host's mirrors and Acquire settings (proxy, validity), the host's resolv.conf,
# and http(s)_proxy when set.
#
# Needs root. The base system is cached in build-fresh/base-SUITE (FRESH_REBUILD=1 remakes it);
# every run starts from a pristine copy, so the clone and the project's own installs are fresh.
# FRESH_COMMIT=REV checks an earlier commit instead of HEAD (4555a06^, with the header-based
# deps.sh, fails: the trap's cblas.h stands in for OpenBLAS's).
# The last line is the verdict; the exit status is non-zero on any failure.
set -Eeuo pipefail
trap 'echo "check-fresh: FAILED: unexpected error at line $LINENO: $BASH_COMMAND" >&2' ERR
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$repo/build-fresh
start=$SECONDS

say() { echo "check-fresh: $*"; }
die() { echo "check-fresh: FAILED: $*" >&2; exit 1; }
elapsed() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts): sudo make check-fresh"
. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
[ "${ID:-}" = debian ] || die "made for Debian hosts (this is ${PRETTY_NAME:-unknown})"
if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } ||
        die "could not install debootstrap"
fi

# The URIs apt is configured with for suite $1 (deb822 .sources, then one-line .list); the
# first one is used.
host_mirror() {
    local s=$1 f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v s="$s" 'BEGIN { RS = ""; FS = "\n" }
            { uri = ""; hit = 0; deb = 0; off = 0
              for (i = 1; i <= NF; i++) {
                  if ($i ~ /^URIs:/)    { split($i, a, /[ \t]+/); uri = a[2] }
                  if ($i ~ /^Suites:/)  { n = split($i, a, /[ \t]+/); for (j = 2; j <= n; j++) if (a[j] == s) hit = 1 }
                  if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb = 1
                  if ($i ~ /^Enabled:[ \t]*no/) off = 1 }
              if (hit && deb && !off && uri != "") { print uri; exit } }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v s="$s" '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
                                     if ($(i + 1) == s) print $i }' "$f"
    done
}
first_mirror() { local m; m=$(host_mirror "$1"); echo "${m%%$'\n'*}"; }
mirror=$(first_mirror "$suite")
[ -n "$mirror" ] || die "no apt source for '$suite' in /etc/apt/sources.list*"

# Mount points below $1, deepest first.
mounts_under() { awk -v r="$1" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r; }
unmount_all() {
    local r=$1 m
    for _ in 1 2 3; do
        for m in $(mounts_under "$r"); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
        [ -z "$(mounts_under "$r")" ] && return 0
        sleep 1
    done
    return 1
}
# Processes left running inside the chroot (after a failure or an interrupt), by their id.
kill_inside() {
    local r=$1 p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$r" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
    done
}
# Removes a chroot folder, never while something is still mounted inside it.
remove_tree() {
    local r=$1
    [ -e "$r" ] || return 0
    unmount_all "$r" || die "still mounted under $r; not deleting it (unmount by hand)"
    rm -rf --one-file-system "$r"
}

# The host's network set-up for apt and npm, into the chroot at $1.
copy_host_network() {
    local r=$1 f s u
    cp -L /etc/resolv.conf "$r/etc/resolv.conf"
    : >"$r/etc/apt/sources.list"
    rm -f "$r"/etc/apt/sources.list.d/*
    for s in "$suite" "$suite-updates" "$suite-security"; do
        u=$(first_mirror "$s")
        [ -n "$u" ] && echo "deb $u $s main" >>"$r/etc/apt/sources.list"
    done
    [ -f /etc/apt/apt.conf ] && cp /etc/apt/apt.conf "$r/etc/apt/apt.conf"
    for f in /etc/apt/apt.conf.d/*; do   # proxies, validity checks, index targets
        [ -f "$f" ] && grep -qi '^[^/#]*Acquire' "$f" && cp "$f" "$r/etc/apt/apt.conf.d/"
    done
    [ -f /etc/npmrc ] && cp /etc/npmrc "$r/etc/npmrc"
    return 0
}

env_inside=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!v:-}" ] && env_inside+=("$v=${!v}")
done
in_chroot() { chroot "$root" /usr/bin/env -i "${env_inside[@]}" "$@"; }

mkdir -p "$work"
exec 9>"$work/.lock"
flock -n 9 || die "another check-fresh is running (lock $work/.lock)"

base=$work/base-$suite
root=$work/root
interrupted=0
cleanup() {
    kill_inside "$root"
    wait 2>/dev/null   # the output of the chroot's steps, to its end
    unmount_all "$root" || echo "check-fresh: warning: could not unmount everything under $root" >&2
    kill_inside "$base"
    unmount_all "$base" || true
    [ "$interrupted" = 0 ] || echo "check-fresh: FAILED: interrupted after $(elapsed)" >&2
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT TERM

# 1. The cached base: minbase + what a fresh machine of this kind has + the trap.
if [ "${FRESH_REBUILD:-0}" = 1 ] || [ ! -f "$base/.complete" ]; then
    say "building the base system ($suite, minbase, from $mirror)"
    remove_tree "$base"
    debootstrap --variant=minbase "$suite" "$base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -n 20 "$work/debootstrap.log"; die "debootstrap failed (log: $work/debootstrap.log)"; }
    copy_host_network "$base"
    root=$base   # for in_chroot; mounts are not needed for apt
    in_chroot apt-get update -qq >"$work/base.log" 2>&1 &&
        in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            make git ca-certificates libblas-dev >>"$work/base.log" 2>&1 ||
        { tail -n 20 "$work/base.log"; die "installing make git ca-certificates libblas-dev into the base failed"; }
    in_chroot apt-get clean
    rm -rf "$base"/var/lib/apt/lists/*   # as a fresh image ships: deps.sh must run apt-get update
    root=$work/root
    touch "$base/.complete"
    say "base ready ($(elapsed))"
fi

# 2. A pristine copy, the host's network and CAs, the trap checked.
remove_tree "$root"
cp -a "$base" "$root"
copy_host_network "$root"
if compgen -G '/usr/local/share/ca-certificates/*' >/dev/null; then
    cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
in_chroot update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the chroot"
trap_ok=$(in_chroot dpkg-query -W -f='${db:Status-Status}' libblas-dev 2>/dev/null || true)
[ "$trap_ok" = installed ] || die "the trap (libblas-dev) is not installed in the chroot"
for p in gcc libopenblas-dev python3 clang npm; do
    [ "$(in_chroot dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != installed ] ||
        die "$p is already in the base; it must come from scripts/deps.sh (FRESH_REBUILD=1)"
done

# 3. The committed HEAD, cloned with the chroot's own git.
# FRESH_COMMIT: an earlier commit (an ancestor of HEAD) instead, e.g. to see an old fault fail.
rev=${FRESH_COMMIT:-HEAD}
commit=$(git -C "$repo" rev-parse --short "$rev^{commit}") || die "no commit '$rev'"
git -C "$repo" merge-base --is-ancestor "$commit" HEAD || die "FRESH_COMMIT must be an ancestor of HEAD"
if [ "$rev" = HEAD ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    say "note: uncommitted changes are not part of this check (it clones $commit)"
fi
git -C "$repo" bundle create "$root/tmp/sqlite-embed.bundle" HEAD >/dev/null 2>&1 || die "git bundle of HEAD failed"
in_chroot git -c advice.detachedHead=false clone -q /tmp/sqlite-embed.bundle /root/sqlite-embed ||
    die "git clone in the chroot failed"
if [ "$rev" != HEAD ]; then
    in_chroot git -C /root/sqlite-embed -c advice.detachedHead=false checkout -q "$commit" || die "git checkout $commit failed"
fi

mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"

# 4. The README's commands, output indented so that the chroot's "N passed, N failed" is not
# mistaken for this script's own.
log=$work/fresh.log
say "running 'make demo' then 'make test' in a fresh $suite chroot (commit $commit; log $log)"
steps='
    cd /root/sqlite-embed || exit 1
    echo "== make demo";  make demo || { echo "== make demo failed"; exit 1; }
    echo "== make demo took ${SECONDS}s"; SECONDS=0
    echo "== make test";  make test || { echo "== make test failed"; exit 1; }
    echo "== make test took ${SECONDS}s"
    echo "== make install, then .load embed from /, then make uninstall"
    make install >/dev/null && cd / &&
        [ "$(sqlite3 :memory: ".load embed" "SELECT embed_dims(json_array(1, 2, 3))")" = 3 ] &&
        echo "install: .load embed works from /" &&
        make -C /root/sqlite-embed --no-print-directory uninstall >/dev/null &&
        [ ! -e /usr/local/lib/embed.so ] && echo "uninstall: embed.so removed" ||
        { echo "== make install/uninstall failed"; exit 1; }'
# In the background, so that a signal is handled at once (bash runs traps between commands).
(
    trap - ERR; set +e
    in_chroot /bin/bash -c "$steps" </dev/null 2>&1 | tee "$log" | sed -u 's/^/  | /'
    exit "${PIPESTATUS[0]}"
) &
rc=0
wait $! || rc=$?

counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)
if [ "$rc" -eq 0 ] && [ -n "$counts" ] && [ "${counts#* passed, }" = "0 failed" ] && [ "${counts%% *}" -gt 0 ]; then
    remove_tree "$root"
    say "passed in $(elapsed): make demo, make test ($counts), make install/uninstall in a fresh $suite chroot"
    exit 0
fi
say "FAILED in $(elapsed): ${counts:-no test counts} (the chroot is kept in $root, the log in $log)"
exit 1
