-- Attention in SQL: whom each token reads (embed_attention), and the bias a position scheme adds
-- to the scores (embed_attention_bias).
-- Run from the repository root: sqlite3 -box :memory: '.load ./embed' '.read sql/attention.sql'
-- The models are the tiny random-weight ones in tests/fixtures: only the structure is meaningful.

.print '== 1. Each (layer, head, query) spreads a weight of 1 over the keys'
SELECT embed_load('bert-tiny', 'tests/fixtures/models/bert-tiny-uncased') AS loaded;
SELECT layer, head, count(*) AS keys, round(sum(weight), 6) AS total
  FROM embed_attention('bert-tiny', 'I left my phone on the left side of the table.')
 WHERE query = 2 GROUP BY layer, head ORDER BY layer, head;

.print ''
.print '== 2. The two "left"s: the same token row, other positions, so other keys read'
.print '   (the three keys each weighs most, as the mean of the heads, in each layer)'
WITH w AS (SELECT layer, query, key, key_token, avg(weight) AS weight
             FROM embed_attention('bert-tiny', 'I left my phone on the left side of the table.')
            WHERE query_token = 'left' GROUP BY layer, query, key),
     ranked AS (SELECT *, row_number() OVER (PARTITION BY layer, query ORDER BY weight DESC) AS r FROM w)
SELECT layer, query, group_concat(key_token || ' (' || key || ') ' || printf('%.3f', weight), ', ') AS top_keys
  FROM (SELECT * FROM ranked WHERE r <= 3 ORDER BY layer, query, r) GROUP BY layer, query;
.print '   ... and what each "left" takes from the other, head by head, in the last layer:'
SELECT head, query, key, round(weight, 4) AS weight
  FROM embed_attention('bert-tiny', 'I left my phone on the left side of the table.', 2)
 WHERE query_token = 'left' AND key_token = 'left' AND query <> key ORDER BY head, query;

.print ''
.print '== 3. ALiBi (JinaBERT v2): no position vector, a bias -slope_h * |i - j| on the scores'
.print '   slopes 2^(-8h/n) for heads h = 1..n: 1/4, 1/16, 1/64, 1/256 for 4 heads'
SELECT embed_load('jina-tiny', 'tests/fixtures/models2/jina-bert-v2-tiny') AS loaded;
SELECT d AS distance, embed_json(embed_attention_bias('jina-tiny', 10, 10 + d)) AS bias_per_head
  FROM (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 8);
.print '   the steepest head (1/4) weighs near keys more: mean weight by distance, heads 0 and 3'
SELECT abs(query - key) AS distance,
       round(avg(CASE head WHEN 0 THEN weight END), 4) AS head_0, round(avg(CASE head WHEN 3 THEN weight END), 4) AS head_3
  FROM embed_attention('jina-tiny', replace(hex(zeroblob(40)), '00', 'the cat '), 1)
 WHERE abs(query - key) IN (0, 1, 4, 16, 64) GROUP BY 1 ORDER BY 1;

.print ''
.print "== 4. ModernBERT's sliding window: in local layers (2 and 3) a query sees keys |i - j| <= 64"
SELECT embed_load('modern-tiny', 'tests/fixtures/models2/modernbert-tiny') AS loaded;
SELECT layer, hex(embed_attention_bias('modern-tiny', 0, 64, layer)) AS bias_at_64,
       hex(embed_attention_bias('modern-tiny', 0, 65, layer)) AS bias_at_65
  FROM (SELECT 1 AS layer UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4);
.print '   (000080FF is float32 -inf: exp(-inf) = 0) so keys past the window weigh exactly 0:'
SELECT layer, count(*) AS keys_outside, sum(weight > 0) AS weighed, max(weight) AS max_weight
  FROM embed_attention('modern-tiny', replace(hex(zeroblob(100)), '00', 'the cat '))
 WHERE abs(query - key) > 64 GROUP BY layer ORDER BY layer;

SELECT embed_unload('bert-tiny') + embed_unload('jina-tiny') + embed_unload('modern-tiny') AS unloaded;
