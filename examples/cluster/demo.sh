#!/usr/bin/env bash
# A three-node dqlite cluster on 127.0.0.1 whose every node runs sqlite-embed (make cluster-demo).
# Each node is Debian's dqlite-demo (package go-dqlite) with embed_preload.so preloaded and the
# same model loaded from EMBED_MODELS. We create an index, insert texts, search, kill the leader
# with SIGKILL, search and insert again on the new leader, and stop everything we started.
# Usage: examples/cluster/demo.sh [EMBED_SO] [MODEL_FOLDER]
set -euo pipefail
cd "$(dirname "$0")/../.."
ext=$(realpath "${1:-./embed.so}")
model=$(realpath "${2:-tests/fixtures/models/minilm-tiny-st}")
work=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap stop EXIT

servers=127.0.0.1:29001,127.0.0.1:29002,127.0.0.1:29003
sql() { dqlite -s "$servers" demo "$1"; }

echo "== starting three nodes (model 'st' = $model)"
for i in 1 2 3; do
    join=(); [ "$i" -gt 1 ] && join=(--join 127.0.0.1:29001)
    LD_PRELOAD="$(dirname "$ext")/embed_preload.so" EMBED_EXTENSION="$ext" EMBED_MODELS="st=$model" \
        dqlite-demo --api "127.0.0.1:2800$i" --db "127.0.0.1:2900$i" --dir "$work/node$i" "${join[@]}" \
        >"$work/node$i.log" 2>&1 &
    pids+=($!)
    sleep 1
done
# joining nodes start as spares; the cluster makes them voters shortly after
until [ "$(sql .cluster 2>/dev/null | grep -c '|voter$')" = 3 ]; do sleep 0.2; done
sql ".cluster"

echo "== an index whose texts are embedded on the leader"
sql "CREATE VIRTUAL TABLE docs USING embed_index(model = 'st')"
sql "INSERT INTO docs(text) VALUES ('the cat sat on the mat'), ('a dog barked at the mailman'),
     ('stock markets fell sharply'), ('kittens chase a ball of yarn'), ('bonds rallied after the report')"
echo "leader: $(sql .leader)"
sql "SELECT rowid, text, round(distance, 4) FROM docs WHERE docs MATCH 'a small cat playing' AND k = 3"

leader=$(sql .leader)
port=${leader##*:}
node=$((port - 29000))
echo "== kill -9 of the leader (node $node, $leader)"
kill -9 "${pids[$((node - 1))]}"
while ! sql "INSERT INTO docs(text) VALUES ('written after the failover')" >/dev/null 2>&1; do sleep 0.2; done
new=$(sql .leader)
echo "new leader: $new (it has the model already: text queries work at once)"
sql "SELECT rowid, text, round(distance, 4) FROM docs WHERE docs MATCH 'money and markets' AND k = 3"
sql "SELECT count(*) FROM docs"
echo "== stopping the nodes"
