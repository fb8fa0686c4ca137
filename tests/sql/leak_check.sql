-- Exercised by tests/sql/leak_check.sh under LeakSanitizer: success and error paths.
.bail off
SELECT embed_json(embed_add('[1,2,3]', '[4,5,6]')), embed_dims(embed_vector('[1]')),
       embed_distance('[1,0]', '[0,1]', 'l2'), embed_json(embed_normalize('[3,4]')),
       embed_json(position_encoding(5, 16)), embed_version(), length(embed_debug()) > 0;
SELECT embed_json(embed_sum(v)), embed_json(embed_mean(v)) FROM (SELECT '[1,2]' AS v UNION ALL SELECT '[3,4]');
SELECT embed_vector('[1,');
SELECT embed_vector(x'010203');
SELECT embed_add('[1]', '[1,2]');
SELECT embed_sum(v) FROM (SELECT '[1,2]' AS v UNION ALL SELECT '[3]');
SELECT embed_normalize(x''); SELECT embed_dims('[]'); SELECT embed_distance('[1]', '[1]', 'l2', 4);
SELECT embed_sum(1, 2); SELECT embed_sum(1, 2) FROM (SELECT 1 WHERE 0); SELECT position_encoding('1', '4');
SELECT embed_distance('[1]', '[1]', x'00'); SELECT embed_token_ids(CAST(x'ff' AS TEXT), 'a');
SELECT embed_define('lesson', '{"vocab": ["bus", "is", "late", "early"], "embeddings": [[1,0,2],[0,1,0],[2,1,1],[2,1,-1]], "positions": [[1,1,0],[0,1,1],[1,0,1]]}');
SELECT embed_define('bad', '{"vocab": ["a", "a"], "embeddings": [[1],[2]], "positions": [[1]]}');
SELECT position, token, embed_json(input_embedding), embed_json(contextual_embedding) FROM embed_tokens('lesson', 'bus is late');
SELECT * FROM embed_tokens('lesson', 'bus is very late');
SELECT embed_json(embed('lesson', 'late is bus')), embed_token_ids('lesson', 'bus is'), embed_json(contextual_embedding('lesson', 'bus is', 1));
SELECT * FROM embed_models;
SELECT embed_load('tok', 'tests/fixtures/models/bert-tiny-uncased');
SELECT embed_load('missing', '/nonexistent/folder');
SELECT embed_token_ids('tok', 'I left my phone on the left side of the table.');
SELECT position, token, start, "end", length(contextual_embedding) FROM embed_tokens('tok', 'Hello, world', 'pair');
SELECT embed_json(embed('tok', 'hello')), embed_json(contextual_embedding('tok', 'left left', 1, 1));
SELECT layer, head, query_token, key_token, weight FROM embed_attention('tok', 'left left', 2, 1);
SELECT count(*), sum(weight) FROM embed_attention('tok', 'I left my phone') WHERE query = 2;
SELECT * FROM embed_attention('tok', 'a', 3); SELECT * FROM embed_attention('lesson', 'bus');
SELECT * FROM embed_attention('nope', 'a'); SELECT * FROM embed_attention('tok', x'41');
SELECT embed_json(embed_attention_bias('tok', 0, 3)), embed_attention_bias('tok', 0, 3, 9), embed_attention_bias('lesson', 0, 1);
SELECT embed_load('modern', 'tests/fixtures/models2/modernbert-tiny');
SELECT embed_json(embed_rotate('[1, 2, 3, 4]', 7)), embed_rotate(NULL, 1); SELECT embed_rotate('[1, 2, 3]', 1); SELECT embed_rotate('[1, 2]', -1, 0);
SELECT hex(embed_attention_bias('modern', 0, 100, 2)), embed_attention_bias('modern', 0, 100);
SELECT count(*) FROM embed_attention('modern', 'the left side') WHERE layer = 2;
SELECT embed_load('modern8', 'tests/fixtures/models2/modernbert-tiny', '{"weights": "int8"}');
SELECT embed_load('nomic8', 'tests/fixtures/models2/nomic-bert-tiny', '{"weights": "int8"}');
SELECT length(embed('modern8', 'the left side')), length(embed('nomic8', 'the left side')), weights FROM embed_models WHERE name = 'nomic8';
SELECT embed_load('bf', 'tests/fixtures/models2/jina-bert-v2-tiny', '{"weights": "bf16"}'); -- refused on the generic set
SELECT length(embed('bf', 'the left side')); SELECT embed_unload('bf');
SELECT embed_load('bad8', 'tests/fixtures/models/bert-tiny-uncased', '{"weights": "int4"}');
SELECT embed_load('modern8', 'tests/fixtures/models2/modernbert-tiny');
SELECT embed_unload('lesson'), embed_unload('tok');
SELECT embed_unload('modern'), embed_unload('modern8'), embed_unload('nomic8');
