-- sqlite-embed demo: why one word gets several vectors, in SQL. `make demo` runs it in the shell,
--   sqlite3 -box :memory: '.load ./embed' '.read sql/demo.sql' '.read sql/demo_search.sql'
-- README.md's "The demo" shows what this file prints (tools/update_readme_demo.py rewrites it).
-- Each sentence about the numbers is computed from them, so that it stays true for any model.

CREATE TEMP TABLE loaded AS
SELECT embed_define('lesson', '{
         "vocab":      ["bus", "is", "late", "early"],
         "embeddings": [[1,0,2], [0,1,0], [2,1,1], [2,1,-1]],
         "positions":  [[1,1,0], [0,1,1], [1,0,1]]}') AS lesson,
       embed_load('mini', 'models/sqlite-embed-mini') AS mini;

.print '1. An embedding table is a lookup. A model defined in SQL, 4 words of 3 dimensions: "bus"'
.print '   in two sentences has one token row but two position rows, so two inputs (their sums).'
SELECT s.value AS sentence, t.position, embed_json(t.token_embedding) AS token_row,
       embed_json(t.position_embedding) AS position_row, embed_json(t.input_embedding) AS input
  FROM json_each('["bus is late", "late is bus"]') AS s, embed_tokens('lesson', s.value) AS t
 WHERE t.token = 'bus';

-- Every word piece of the sentences below, with the text of its word and its index in the word.
CREATE TEMP TABLE sentences(id INTEGER PRIMARY KEY, sense TEXT, text TEXT);
INSERT INTO sentences(sense, text) VALUES
  ('left', 'I left my phone on the left side of the table.'),
  ('flies', 'Time flies like an arrow; fruit flies like a banana.'),
  ('шагать', 'шагать шагать'),
  ('verb', 'I left my phone at home.'), ('verb', 'She left the house early.'),
  ('verb', 'They left after dinner.'), ('verb', 'He left the party at midnight.'),
  ('direction', 'Turn left at the corner.'), ('direction', 'The left side of the table.'),
  ('direction', 'Keep to the left lane.'), ('direction', 'Raise your left hand.');
CREATE TEMP TABLE pieces AS
SELECT s.id, s.sense, t.word, t.position - min(t.position) OVER w AS piece, t.token,
       lower(CAST(substr(CAST(s.text AS BLOB), min(t.start) OVER w + 1,
                         max(t."end") OVER w - min(t.start) OVER w) AS TEXT)) AS word_text,
       t.token_embedding, t.position_embedding, t.input_embedding, t.contextual_embedding
  FROM sentences AS s, embed_tokens('mini', s.text) AS t
 WHERE t.word IS NOT NULL
WINDOW w AS (PARTITION BY s.id, t.word);

-- Sentences 1 to 3: the first and the second occurrence of the word, piece by piece, compared
-- at each level n (the mean over the pieces: "шагать" is several).
CREATE TEMP TABLE levels AS
WITH o AS (SELECT *, dense_rank() OVER (PARTITION BY id ORDER BY word) AS occurrence
             FROM pieces WHERE id <= 3 AND word_text = sense),
     p AS (SELECT a.id, a.sense AS word, a.token, a.token_embedding AS ta, b.token_embedding AS tb,
                  a.position_embedding AS pa, b.position_embedding AS pb, a.input_embedding AS ia,
                  b.input_embedding AS ib, a.contextual_embedding AS ca, b.contextual_embedding AS cb
             FROM o AS a JOIN o AS b ON a.id = b.id AND a.piece = b.piece
            WHERE a.occurrence = 1 AND b.occurrence = 2)
SELECT id, word, 1 AS n, avg(embed_cosine(ta, tb)) AS cosine, min(ta = tb) AS equal, count(*) AS pieces,
       group_concat(token, ' ') AS tokens FROM p GROUP BY id
UNION ALL SELECT id, word, 2, avg(embed_cosine(pa, pb)), min(pa = pb), count(*), NULL FROM p GROUP BY id
UNION ALL SELECT id, word, 3, avg(embed_cosine(ia, ib)), min(ia = ib), count(*), NULL FROM p GROUP BY id
UNION ALL SELECT id, word, 4, avg(embed_cosine(ca, cb)), min(ca = cb), count(*), NULL FROM p GROUP BY id;
UPDATE levels SET cosine = round(cosine, 3);  -- as printed: the sentences compare what is shown

.mode list
SELECT '2. A real model: ' || path || ' (' || architecture || ', ' || layers || ' layers, ' || hidden_size ||
       ' dimensions). The cosine' FROM embed_models WHERE name = 'mini';
.print '   similarity (1: same direction) of a word and its repeat, at each level, in "I left my phone'
.print '   on the left side of the table.", "Time flies like an arrow; fruit flies like a banana." and'
SELECT '   "шагать шагать" (' || CASE WHEN pieces > 1 THEN pieces || ' pieces each, ' || tokens ||
       ': its column is the mean over ' || pieces || ' pairs' ELSE 'one piece each' END || '):'
  FROM levels WHERE word = 'шагать' AND n = 1;
.mode box --wrap 0
SELECT CASE n WHEN 1 THEN 'token row (the lookup)' WHEN 2 THEN 'position row'
              WHEN 3 THEN 'input (sum of rows, normalised)'
              ELSE 'contextual (after ' || (SELECT layers FROM embed_models WHERE name = 'mini') || ' layers)' END AS level,
       max(CASE word WHEN 'left' THEN cosine END) AS "left",
       max(CASE word WHEN 'flies' THEN cosine END) AS flies,
       max(CASE word WHEN 'шагать' THEN cosine END) AS "шагать"
  FROM levels GROUP BY n ORDER BY n;
.mode list
WITH v AS (SELECT n, CASE WHEN min(equal) = 1 THEN 'are equal' WHEN max(cosine) < 1 THEN 'differ'
                          ELSE 'barely differ' END AS verdict FROM levels GROUP BY n)
SELECT '   The token rows ' || (SELECT verdict FROM v WHERE n = 1) ||
       CASE WHEN (SELECT verdict FROM v WHERE n = 1) = 'are equal' THEN ' (one row per word)' ELSE '' END ||
       ', the position rows ' || (SELECT verdict FROM v WHERE n = 2) ||
       ', so the inputs ' || (SELECT verdict FROM v WHERE n = 3) || '.';
WITH w AS (SELECT i.id, i.word, CASE WHEN c.cosine > i.cosine THEN 'less' WHEN c.cosine < i.cosine THEN 'more'
                                      ELSE 'as much as' END AS how
             FROM levels AS i JOIN levels AS c ON c.id = i.id AND i.n = 3 AND c.n = 4),
     g AS (SELECT how, group_concat(word, ', ') AS words, min(id) AS first FROM (SELECT * FROM w ORDER BY id)
            GROUP BY how ORDER BY first),
     c AS (SELECT min(equal) AS equal, max(cosine) AS cosine FROM levels WHERE n = 4)
SELECT '   Attention mixes in the neighbours: the contextual vectors ' ||
       CASE WHEN c.equal = 1 THEN 'are equal.'
            ELSE CASE WHEN c.cosine < 1 THEN 'differ' ELSE 'barely differ' END ||
                 CASE WHEN (SELECT count(*) FROM g) = 1 THEN ', ' || (SELECT how FROM g) || ' than the inputs do.'
                      ELSE char(10) || '   (' || (SELECT group_concat(words || ' ' || replace(how, 'as much as', 'equally'), '; ')
                                      FROM g) || ' than the inputs).' END END
  FROM c;

.print '3. Two senses of "left", each in 4 sentences: the verb ("I left my phone at home.", ...)'
.print '   and the direction ("Turn left at the corner.", ...). The mean cosine of contextual "left"s'
CREATE TEMP TABLE senses AS
WITH l AS (SELECT id, sense, contextual_embedding AS v FROM pieces WHERE id > 3 AND word_text = 'left' AND piece = 0),
     pairs AS (SELECT CASE WHEN a.sense <> b.sense THEN 'across' ELSE a.sense END AS kind,
                      embed_cosine(a.v, b.v) AS cosine FROM l AS a JOIN l AS b ON a.id < b.id)
SELECT round(avg(CASE kind WHEN 'verb' THEN cosine END), 3) AS within_verb,
       round(avg(CASE kind WHEN 'direction' THEN cosine END), 3) AS within_direction,
       round(avg(CASE kind WHEN 'across' THEN cosine END), 3) AS across_senses FROM pairs;
SELECT '   is ' || within_verb || ' within the verb, ' || within_direction || ' within the direction, ' ||
       across_senses || ' across the two senses.' FROM senses;
WITH s AS (SELECT within_verb > across_senses AS verb, within_direction > across_senses AS direction,
                  round(min(within_verb, within_direction) - across_senses, 3) AS margin FROM senses)
SELECT '   ' || CASE WHEN verb AND direction
         THEN 'Each sense''s "left"s are closer to each other than to the other sense''s: this' || char(10) ||
              '   model''s vectors separate the two senses here (by ' || margin || ' in mean cosine at least).'
       ELSE CASE WHEN verb THEN 'The verb "left"s are closer to each other than across, the direction ones are not:'
                 WHEN direction THEN 'The direction "left"s are closer to each other than across, the verb ones are not:'
                 ELSE 'Neither sense''s "left"s are closer to each other than across:' END || char(10) ||
            '   this model does not tell them apart (models trained to fill in a missing word learn to).' END
  FROM s;
.mode box --wrap 0
