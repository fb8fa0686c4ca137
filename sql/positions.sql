-- Where position goes in newer encoders: rotary (RoPE) instead of a position table.
-- Run from the repository root: sqlite3 -box :memory: '.load ./embed' '.read sql/positions.sql'
-- BERT is the model that comes with the repository (models/sqlite-embed-mini); the rotary model is a
-- tiny random-weight one from tests/fixtures: only its structure is meaningful.

.print '== 1. BERT adds a position vector to each token; a rotary model adds none'
SELECT embed_load('mini', 'models/sqlite-embed-mini') AS loaded;
SELECT embed_load('nomic-tiny', 'tests/fixtures/models2/nomic-bert-tiny') AS loaded;
SELECT 'mini' AS model, position, token, embed_dims(position_embedding) AS position_dims
  FROM embed_tokens('mini', 'the cat') WHERE position < 2
UNION ALL
SELECT 'nomic-tiny', position, token, embed_dims(position_embedding)
  FROM embed_tokens('nomic-tiny', 'the cat') WHERE position < 2;

.print ''
.print '== 2. RoPE rotates each pair (i, i + d/2) by pos * base^(-2i/d)'
.print '   Rotating the unit vector e_0 by position 3 gives cos(3) and sin(3):'
SELECT embed_json(embed_rotate('[1, 0, 0, 0]', 3)) AS rotated_e0,
       round(cos(3), 7) AS cos_3, round(sin(3), 7) AS sin_3;
.print '   ... the same numbers as the sinusoidal encoding of the original Transformer at position 3:'
SELECT embed_json(position_encoding(3, 4)) AS pe_3;

.print ''
.print '== 3. A query at m and a key at n: the score depends only on m - n'
WITH pairs(m, n) AS (VALUES (2, 0), (7, 5), (102, 100), (1002, 1000), (5, 4), (105, 104))
SELECT m, n, m - n AS distance,
       round(embed_dot(embed_rotate('[1, 2, 3, 4]', m), embed_rotate('[4, 3, 2, 1]', n)), 4) AS score
  FROM pairs ORDER BY distance, m;

.print ''
.print "== 4. A rotary model's own angles: position_encoding(model, pos) is the cos and sin"
.print '   of its per-head angles with its base (first the cosines, then the sines)'
SELECT pos, embed_json(position_encoding('nomic-tiny', pos)) AS cos_then_sin
  FROM (SELECT 0 AS pos UNION ALL SELECT 1 UNION ALL SELECT 2);

SELECT embed_unload('mini') + embed_unload('nomic-tiny') AS unloaded;
