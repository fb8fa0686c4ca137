-- sqlite-embed demo: token embeddings and positional encoding, in SQL.
-- Run with `make demo` (or: sqlite3 -box :memory: '.load ./embed' '.read sql/demo.sql').

.print '== 1. A token embedding table is a lookup: 4 words, 3 dimensions, 3 positions'
SELECT embed_define('lesson', '{
  "vocab":      ["bus", "is", "late", "early"],
  "embeddings": [[1,0,2], [0,1,0], [2,1,1], [2,1,-1]],
  "positions":  [[1,1,0], [0,1,1], [1,0,1]]
}') AS defined;

SELECT name, architecture, vocab_size, hidden_size AS dims, max_positions, fingerprint
  FROM embed_models WHERE name = 'lesson';

.print ''
.print '== 2. Input vector = token row + position row'
SELECT position, token,
       embed_json(token_embedding)    AS token_row,
       embed_json(position_embedding) AS position_row,
       embed_json(input_embedding)    AS input_vector
  FROM embed_tokens('lesson', 'bus is late');

.print ''
.print '== 3. Same words, other order: "bus is late" vs "late is bus"'
SELECT a.position, a.token AS token_a, embed_json(a.input_embedding) AS input_a,
       b.token AS token_b, embed_json(b.input_embedding) AS input_b
  FROM embed_tokens('lesson', 'bus is late') AS a
  JOIN embed_tokens('lesson', 'late is bus') AS b USING (position);

.print ''
.print '== 4. "bus" first and "bus" third: equal token rows, so the inputs differ only by position'
SELECT a.token,
       a.token_embedding = b.token_embedding                  AS same_token_row,
       embed_json(embed_sub(a.input_embedding, b.input_embedding))       AS input_difference,
       embed_json(embed_sub(a.position_embedding, b.position_embedding)) AS position_difference
  FROM embed_tokens('lesson', 'bus is late') AS a,
       embed_tokens('lesson', 'late is bus') AS b
 WHERE a.token = 'bus' AND b.token = 'bus';

.print ''
.print '== 5. The sinusoidal encoding of the original Transformer (8 dimensions)'
.print '   PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d))'
WITH RECURSIVE p(pos) AS (SELECT 0 UNION ALL SELECT pos + 1 FROM p WHERE pos < 4)
SELECT pos, embed_json(position_encoding(pos, 8)) AS encoding FROM p;

.print ''
.print '   Nearby positions have similar encodings: cosine similarity to position 10 (d = 64)'
SELECT pos, round(embed_cosine(position_encoding(10, 64), position_encoding(pos, 64)), 4) AS cosine_to_10
  FROM (SELECT 9 AS pos UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 20 UNION ALL SELECT 100);

.print ''
.print '== 6. A real BERT: the two "left"s of "I left my phone on the left side of the table."'
.print '   (sqlite-embed-mini from models/: a small BERT trained on Debian package descriptions,'
.print '    with the real bert-base-uncased vocabulary, 256 dimensions, 4 layers. Small, for demos'
.print '    and offline use: a hub model such as all-MiniLM-L6-v2 is better for real work.)'
SELECT embed_load('mini', 'models/sqlite-embed-mini') AS loaded;
SELECT name, architecture, hidden_size, layers, heads, vocab_size, max_tokens, weight_type, fingerprint
  FROM embed_models WHERE name = 'mini';

SELECT position, token_id, token, start, "end", word
  FROM embed_tokens('mini', 'I left my phone on the left side of the table.');

.print ''
.print '   Cosine similarity of the two "left" rows at each level:'
WITH l AS (
  SELECT * FROM embed_tokens('mini', 'I left my phone on the left side of the table.') WHERE token = 'left'
), a AS (SELECT * FROM l ORDER BY position LIMIT 1),
   b AS (SELECT * FROM l ORDER BY position DESC LIMIT 1)
SELECT 'token (table lookup)' AS level, round(embed_cosine(a.token_embedding, b.token_embedding), 4) AS cosine FROM a, b
UNION ALL SELECT 'position', round(embed_cosine(a.position_embedding, b.position_embedding), 4) FROM a, b
UNION ALL SELECT 'input (token + position + type, LayerNorm)', round(embed_cosine(a.input_embedding, b.input_embedding), 4) FROM a, b
UNION ALL SELECT 'contextual (after 4 layers of attention)', round(embed_cosine(a.contextual_embedding, b.contextual_embedding), 4) FROM a, b;

.print ''
.print '   Sentence vectors (mean pooling, normalised) and their distances:'
SELECT round(embed_distance(embed('mini', 'The bus is late.'), embed('mini', 'My train is delayed.')), 3) AS bus_vs_train,
       round(embed_distance(embed('mini', 'The bus is late.'), embed('mini', 'Buy milk and eggs.')), 3) AS bus_vs_milk;

.print ''
.print "== 7. Search this machine's package descriptions by meaning"
.print '   (a tenth of the packages apt knows of, with their descriptions; the installed ones without apt lists)'
.system bash scripts/demo_packages.sh build/demo_packages.dat
CREATE TABLE packages(name TEXT, summary TEXT, description TEXT);
.import --ascii build/demo_packages.dat packages
CREATE VIRTUAL TABLE packages_idx USING embed_index(model = 'mini');
CREATE VIRTUAL TABLE packages_fts USING fts5(name, summary, description);
INSERT INTO packages_idx(rowid, text) SELECT rowid, summary || '. ' || description FROM packages;
INSERT INTO packages_fts(rowid, name, summary, description) SELECT rowid, name, summary, description FROM packages;

.print ''
.print '   By vectors alone (the index embeds the question and finds the nearest descriptions):'
SELECT q.value AS question,
       (SELECT group_concat(name, ', ') FROM
          (SELECT p.name FROM packages_idx AS h JOIN packages AS p ON p.rowid = h.rowid
            WHERE h.packages_idx MATCH q.value AND h.k = 4 ORDER BY h.distance)) AS nearest_packages
  FROM json_each('["compress files", "edit images", "debug a C program", "play music", "read email"]') AS q;

.print ''
.print '   Keywords and vectors fused (embed_hybrid: FTS5 bm25 and the index, reciprocal rank fusion):'
SELECT q.value AS question,
       (SELECT group_concat(name, ', ') FROM
          (SELECT p.name FROM embed_hybrid('packages_idx', 'packages_fts', q.value, 4) AS h
             JOIN packages AS p ON p.rowid = h.rowid ORDER BY h.score DESC)) AS packages
  FROM json_each('["compress files", "edit images", "debug a C program", "play music", "read email"]') AS q;
