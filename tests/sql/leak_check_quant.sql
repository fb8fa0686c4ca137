-- compact storage, the IVF and the process-wide copy (an attached file is shared; :memory: is not)
ATTACH '/tmp/embed_leak_check_quant.db' AS f;
DROP TABLE IF EXISTS f.qx;
CREATE VIRTUAL TABLE f.qx USING embed_index(dims = 4, storage = 'int8', index = 'ivf', chunk_size = 4, tag integer);
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 50)
INSERT INTO f.qx(rowid, vector, tag) SELECT n, json_array(n % 7, n % 11, n % 13, 1 + n % 5), n % 3 FROM i;
INSERT INTO f.qx(qx) VALUES ('build');
INSERT INTO f.qx(qx, text) VALUES ('build', '{"lists": 3, "iterations": 2}');
INSERT INTO f.qx(qx, text) VALUES ('build', '{"lists": 300}');
SELECT rowid, distance, vector FROM f.qx WHERE qx MATCH '[1, 1, 1, 2]' AND k = 5 AND probes = 2 AND oversample = 3;
SELECT rowid FROM f.qx WHERE qx MATCH '[1, 1, 1, 2]' AND k = 5 AND tag = 1;
BEGIN;
INSERT INTO f.qx(rowid, vector, tag) VALUES (100, '[1, 1, 1, 2]', 1);
SELECT rowid FROM f.qx WHERE qx MATCH '[1, 1, 1, 2]' AND k = 2;
DELETE FROM f.qx WHERE rowid = 3;
SELECT rowid FROM f.qx WHERE qx MATCH '[1, 1, 1, 2]' AND k = 2;
ROLLBACK;
UPDATE f.qx SET vector = '[2, 2, 2, 4]' WHERE rowid = 5;
SELECT rowid FROM f.qx WHERE qx MATCH '[1, 1, 1, 2]' AND k = 2 AND oversample = 0;
SELECT embed_index_cache_bytes() > 0;
CREATE VIRTUAL TABLE bx USING embed_index(dims = 16, storage = 'bit', rescore = false);
INSERT INTO bx(rowid, vector) VALUES (1, '[1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1]');
SELECT rowid, vector FROM bx WHERE bx MATCH '[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]' AND k = 1;
CREATE VIRTUAL TABLE hx2 USING embed_index(dims = 4, storage = 'f16');
INSERT INTO hx2(rowid, vector) VALUES (1, '[1, 2, 3, 4]');
SELECT vector FROM hx2;
DROP TABLE hx2;
DROP TABLE bx;
DROP TABLE f.qx;
DETACH f;
-- recall targets: a build and 'optimize' measure probes and oversample; status reads them
CREATE VIRTUAL TABLE tq USING embed_index(dims = 8, storage = 'bit', index = 'ivf');
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 1500)
INSERT INTO tq(rowid, vector) SELECT n, json_array(n % 7 - 3, n % 11 - 5, n % 13 - 6, 1 + n % 5, n % 3 - 1, n % 17 - 8, n % 19 - 9, 2) FROM i;
INSERT INTO tq(tq, text) VALUES ('build', '{"lists": 20, "target_recall": 0.9}');
INSERT INTO tq(tq) VALUES ('optimize');
INSERT INTO tq(tq, text) VALUES ('optimize', '{"target_recall": 7}');
SELECT count(*) FROM tq WHERE tq MATCH '[1, 1, 1, 2, 0, 1, 1, 2]' AND k = 10;
SELECT count(*) FROM embed_index_status('tq');
SELECT * FROM embed_index_status('nope');
SELECT * FROM embed_index_status();
DROP TABLE tq;
