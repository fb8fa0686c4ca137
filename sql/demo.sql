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
