/* Internal to embed_hybrid: the state its files share. ext_hybrid_sql.c (statements kept between
 * calls, the tables named) and ext_hybrid_args.c (errors and arguments) are below
 * ext_hybrid_rerank.c (the cross-encoder's second ranking), below ext_hybrid.c (the two
 * searches, their fusion, and the module). */
#ifndef EMBED_EXT_HYBRID_H
#define EMBED_EXT_HYBRID_H
#include "ext_util.h"

#define HY_FN "embed_hybrid"
#define HY_SIGNATURE "embed_hybrid(index, fts, query, k [, options])"
#define HY_MAX_DEPTH 100000
#define HY_N_CACHED 8
#define HY_RERANK_DEPTH 50 /* candidates the cross-encoder scores by default */

enum {
    HY_COL_SCORE,
    HY_COL_VECTOR_RANK,
    HY_COL_TEXT_RANK,
    HY_COL_DISTANCE,
    HY_COL_BM25,
    HY_COL_RERANK_SCORE,
    HY_COL_CHUNK,
    HY_COL_CHUNK_START,
    HY_COL_CHUNK_END,
    HY_COL_INDEX,
    HY_COL_FTS,
    HY_COL_QUERY,
    HY_COL_K,
    HY_COL_OPTIONS
};
enum { HY_ARG_INDEX, HY_ARG_FTS, HY_ARG_QUERY, HY_ARG_K, HY_ARG_OPTIONS, HY_N_ARGS };
enum { HY_SIDE_VECTOR, HY_SIDE_TEXT };

typedef struct {
    double rrf_k, weight[2]; /* weight[HY_SIDE_VECTOR], weight[HY_SIDE_TEXT] */
    sqlite3_int64 depth;
    char *fts_query; /* NULL: the query's words, each quoted, joined by OR */
    char *rerank; /* the cross-encoder's name, or NULL: no second ranking */
    sqlite3_int64 rerank_depth; /* the best fused rows it scores */
} hybrid_options;

typedef struct {
    sqlite3_int64 rowid;
    sqlite3_int64 rank[2]; /* from 1; 0 where that side did not find the row */
    double value[2]; /* the distance, the bm25 */
    double score;
    double rerank; /* the cross-encoder's score, where reranked */
    int reranked;
    int has_chunk; /* a chunked index's best chunk: number, byte offsets in the row's text */
    sqlite3_int64 chunk[3];
} hybrid_row;

typedef struct {
    char *sql;
    sqlite3_stmt *stmt;
} cached_stmt;

typedef struct {
    sqlite3_vtab base;
    sqlite3 *db;
    cached_stmt cache[HY_N_CACHED]; /* statements kept from call to call, found by their SQL */
    int next; /* the slot to take next */
} hybrid_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    sqlite3_value *args[HY_N_ARGS]; /* as given, for the hidden columns */
    hybrid_row *rows;
    size_t n, cap, at;
} hybrid_cursor;

typedef struct {
    char *schema, *name;
} table_ref;

/* ---------- ext_hybrid_sql.c ---------- */

/* A prepared statement for sql (sqlite3_malloc'd, taken): a kept one that nobody is stepping,
 * else a new one; *owned: the caller finalizes it (hy_stmt_done does either). */
int hy_stmt_get(hybrid_vtab *v, char *sql, sqlite3_stmt **out, int *owned);
void hy_stmt_done(sqlite3_stmt *s, int owned);
/* sqlite3_step, with the connection's error set on a failure. */
int hy_stmt_step(hybrid_vtab *v, sqlite3_stmt *s);
/* The table that argument `arg` names, a virtual table of `module` (errors name `role` and
 * `kind`); free with hy_table_free. */
int hy_find_table(hybrid_vtab *v, const char *arg, const char *role, const char *kind, const char *module,
                  table_ref *t);
void hy_table_free(table_ref *t);

/* ---------- ext_hybrid_rerank.c ---------- */

/* Scores the first min(n, o->rerank_depth) of rows (in fused order) with o->rerank against the
 * query (a chunked index's rows by their chunk nearest the query), and puts them first in the
 * order of that score, highest first. */
int hy_rerank(hybrid_vtab *v, const table_ref *ix, const char *q, int qlen, const hybrid_options *o,
              hybrid_row *rows, size_t n);

/* ---------- ext_hybrid_args.c ---------- */

/* Sets "embed_hybrid: ..." as the error; returns SQLITE_ERROR (SQLITE_NOMEM without memory). */
int hy_fail(hybrid_vtab *v, const char *fmt, ...);
/* "<what> must be <kind>, not <the value>". */
int hy_type_fail(hybrid_vtab *v, const char *what, const char *kind, sqlite3_value *val);

/* Reading the arguments (errors set). */
int hy_name_arg(hybrid_vtab *v, sqlite3_value *val, const char *what, const char **out);
int hy_k_arg(hybrid_vtab *v, sqlite3_value *val, sqlite3_int64 *k);
int hy_query_arg(hybrid_vtab *v, sqlite3_value *val, const char **q, int *len);
/* The options JSON into o (defaults for NULL); free with hy_options_free. */
int hy_options_arg(hybrid_vtab *v, sqlite3_value *val, hybrid_options *o);
void hy_options_free(hybrid_options *o);
/* The FTS5 query of plain words: each word an FTS5 string, joined by OR (*out NULL: none). */
int hy_keyword_query(sqlite3 *db, const char *q, char **out);

#endif
