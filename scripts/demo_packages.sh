#!/usr/bin/env bash
# The demo's documents: Debian packages as records for the sqlite3 shell's `.import --ascii`
# (name, 0x1F, summary, 0x1F, description, 0x1E: no quoting rules to trip over), into the file $1.
# From the archive's English descriptions when apt has them (Translation-en, after `apt-get
# update`): every EMBED_DEMO_STEP-th package (default 10, about 6,800 of 68,000, which the demo
# indexes in seconds with int8 weights); else, or with EMBED_DEMO_PACKAGES=installed (the tests), the installed
# packages (dpkg-query).
set -euo pipefail
out=${1:?output file}
step=${EMBED_DEMO_STEP:-10}
mkdir -p "$(dirname "$out")"
lists=$(ls /var/lib/apt/lists/*_main_i18n_Translation-en* 2>/dev/null || true)
: > "$out.tmp"
if [ "${EMBED_DEMO_PACKAGES:-}" != installed ] && [ -n "$lists" ]; then
    for f in $lists; do /usr/lib/apt/apt-helper cat-file "$f"; echo; done | awk -v step="$step" '
        function put() { if (pkg != "" && n++ % step == 0) printf "%s\037%s\037%s\036", pkg, summ, desc; pkg = "" }
        /^Package: / { put(); pkg = $2; summ = desc = ""; next }
        /^Description-en: / { sub(/^Description-en: /, ""); summ = $0; next }
        /^ / { line = substr($0, 2); if (line == ".") line = ""; desc = desc (desc == "" ? "" : " ") line; next }
        /^$/ { put() }
        END { put() }' > "$out.tmp"
fi
if [ ! -s "$out.tmp" ]; then
    dpkg-query -W -f="$(printf '${Package}\037${binary:Summary}\037${Description}\036')" > "$out.tmp"
fi
mv "$out.tmp" "$out"
echo "   embedding $(tr -cd '\036' < "$out" | wc -c) package descriptions..."
