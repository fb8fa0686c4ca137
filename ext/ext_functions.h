/* Registration and the SQL functions' implementations. Scalar and aggregate functions are
 * registered from one table (ext_function_table.c), where each sql_X implements the SQL
 * function X; virtual tables from one table of modules (embed_ext.c). */
#ifndef EMBED_EXT_FUNCTIONS_H
#define EMBED_EXT_FUNCTIONS_H
#include <sqlite3ext.h>

/* Registers every scalar and aggregate function of the table, and the argument-count
 * fallbacks. On failure *failed is the name of the function that could not be registered. */
int ext_register_functions(sqlite3 *db, const char **failed); /* ext_function_table.c */
extern const sqlite3_module ext_models_module; /* ext_models_table.c: embed_models */
extern const sqlite3_module ext_tokens_module; /* ext_tokens_table.c: embed_tokens */
extern const sqlite3_module ext_index_module; /* ext_index.c: embed_index */
extern const sqlite3_module ext_hybrid_module; /* ext_hybrid.c: embed_hybrid */
extern const sqlite3_module ext_attention_module; /* ext_attention_table.c: embed_attention */
extern const sqlite3_module ext_chunks_module; /* ext_chunks_table.c: embed_chunks */
extern const sqlite3_module ext_index_status_module; /* index/ix_status.c: embed_index_status */
extern const sqlite3_module ext_rerank_module; /* ext_rerank_table.c: embed_rerank_batch */

#define EXT_SQL_FUNCTION(name) void name(sqlite3_context *ctx, int argc, sqlite3_value **argv)

/* ext_vector.c */
EXT_SQL_FUNCTION(sql_embed_vector);
EXT_SQL_FUNCTION(sql_embed_json);
EXT_SQL_FUNCTION(sql_embed_dims);
EXT_SQL_FUNCTION(sql_embed_add);
EXT_SQL_FUNCTION(sql_embed_sub);
EXT_SQL_FUNCTION(sql_embed_scale);
EXT_SQL_FUNCTION(sql_embed_normalize);
EXT_SQL_FUNCTION(sql_embed_truncate);
EXT_SQL_FUNCTION(sql_embed_dot);
EXT_SQL_FUNCTION(sql_embed_cosine);
EXT_SQL_FUNCTION(sql_embed_distance);
EXT_SQL_FUNCTION(sql_embed_sum_step);
EXT_SQL_FUNCTION(sql_embed_mean_step);
void sql_embed_sum_final(sqlite3_context *ctx);
void sql_embed_mean_final(sqlite3_context *ctx);
/* ext_position.c */
EXT_SQL_FUNCTION(sql_position_encoding);
EXT_SQL_FUNCTION(sql_embed_rotate);
/* ext_attention.c */
EXT_SQL_FUNCTION(sql_embed_attention_bias);
/* ext_info.c */
EXT_SQL_FUNCTION(sql_embed_version);
EXT_SQL_FUNCTION(sql_embed_debug);
/* ext_models.c: these change the process-wide registry */
EXT_SQL_FUNCTION(sql_embed_define);
EXT_SQL_FUNCTION(sql_embed_load);
EXT_SQL_FUNCTION(sql_embed_unload);
/* ext_index.c: the bytes of the process-wide copies of embed_index tables */
EXT_SQL_FUNCTION(sql_embed_index_cache_bytes);
/* ext_text.c */
EXT_SQL_FUNCTION(sql_embed_token_ids);
EXT_SQL_FUNCTION(sql_contextual_embedding);
EXT_SQL_FUNCTION(sql_embed);
/* ext_rerank.c */
EXT_SQL_FUNCTION(sql_embed_rerank);

/* embed_rerank's options argument ({"activation": "none" | "sigmoid"}; NULL: the defaults) into
 * *kind; -1 with *err (sqlite3_malloc'd; NULL when out of memory) when it is not one. */
#include "sqlite-embed/rerank.h"
int ext_rerank_options(sqlite3_value *val, emb_rerank_score *kind, char **err);
#endif
