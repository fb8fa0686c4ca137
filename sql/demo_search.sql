-- sqlite-embed demo, second part: search this machine's package descriptions by meaning.
-- `make demo` runs it after sql/demo.sql; alone: sqlite3 -box :memory: '.load ./embed' '.read sql/demo_search.sql'
-- Its results depend on the machine's apt lists, so README.md does not show them.

CREATE TEMP TABLE search_model AS   -- the same model with int8 weights: 3 times faster, as good
SELECT embed_load('mini8', 'models/sqlite-embed-mini', '{"weights": "int8"}') AS mini8;

.print '4. Search by meaning: a sample of the package descriptions apt knows (1 in 10; without apt'
.print '   lists, the installed packages), in an embed_index that embeds each description.'
.system bash scripts/demo_packages.sh build/demo_packages.dat
CREATE TABLE packages(name TEXT, summary TEXT, description TEXT);
.import --ascii build/demo_packages.dat packages
CREATE VIRTUAL TABLE packages_idx USING embed_index(model = 'mini8');
CREATE VIRTUAL TABLE packages_fts USING fts5(name, summary, description);
INSERT INTO packages_idx(rowid, text) SELECT rowid, summary || '. ' || description FROM packages;
INSERT INTO packages_fts(rowid, name, summary, description) SELECT rowid, name, summary, description FROM packages;

.print '   By vectors alone (the index embeds the question and finds the nearest descriptions):'
SELECT q.value AS question,
       (SELECT group_concat(name, ', ') FROM
          (SELECT p.name FROM packages_idx AS h JOIN packages AS p ON p.rowid = h.rowid
            WHERE h.packages_idx MATCH q.value AND h.k = 4 ORDER BY h.distance)) AS nearest_packages
  FROM json_each('["compress files", "edit images", "debug a C program", "play music", "read email"]') AS q;

.print '   Keywords and vectors fused (embed_hybrid: FTS5 bm25 and the index, reciprocal rank fusion):'
SELECT q.value AS question,
       (SELECT group_concat(name, ', ') FROM
          (SELECT p.name FROM embed_hybrid('packages_idx', 'packages_fts', q.value, 4) AS h
             JOIN packages AS p ON p.rowid = h.rowid ORDER BY h.score DESC)) AS packages
  FROM json_each('["compress files", "edit images", "debug a C program", "play music", "read email"]') AS q;
