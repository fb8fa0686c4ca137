/* Internal to embed_hybrid (ext_hybrid_args.c, its errors and arguments, below ext_hybrid.c,
 * the searches and the module): the state they share. */
#ifndef EMBED_EXT_HYBRID_H
#define EMBED_EXT_HYBRID_H
#include "ext_util.h"

#define FN "embed_hybrid"
#define SIGNATURE "embed_hybrid(index, fts, query, k [, options])"
#define MAX_DEPTH 100000
#define N_CACHED 8

enum { COL_SCORE, COL_VECTOR_RANK, COL_TEXT_RANK, COL_DISTANCE, COL_BM25,
       COL_INDEX, COL_FTS, COL_QUERY, COL_K, COL_OPTIONS };
enum { ARG_INDEX, ARG_FTS, ARG_QUERY, ARG_K, ARG_OPTIONS, N_ARGS };
enum { SIDE_VECTOR, SIDE_TEXT };

typedef struct {
    double rrf_k, weight[2]; /* weight[SIDE_VECTOR], weight[SIDE_TEXT] */
    sqlite3_int64 depth;
    char *fts_query; /* NULL: the query's words, each quoted, joined by OR */
} hybrid_options;

typedef struct {
    sqlite3_int64 rowid;
    sqlite3_int64 rank[2]; /* from 1; 0 where that side did not find the row */
    double value[2];       /* the distance, the bm25 */
    double score;
} hybrid_row;

typedef struct {
    char *sql;
    sqlite3_stmt *stmt;
} cached_stmt;

typedef struct {
    sqlite3_vtab base;
    sqlite3 *db;
    cached_stmt cache[N_CACHED]; /* statements kept from call to call, found by their SQL */
    int next;                    /* the slot to take next */
} hybrid_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    sqlite3_value *args[N_ARGS]; /* as given, for the hidden columns */
    hybrid_row *rows;
    size_t n, cap, at;
} hybrid_cursor;

typedef struct {
    char *schema, *name;
} table_ref;

/* ---------- ext_hybrid_args.c ---------- */

/* Sets "embed_hybrid: ..." as the error; returns SQLITE_ERROR (SQLITE_NOMEM without memory). */
int hy_fail(hybrid_vtab *v, const char *fmt, ...);
/* "<what> must be <kind>, not <the value>". */
int hy_type_fail(hybrid_vtab *v, const char *what, const char *kind, sqlite3_value *val);

/* Reading the arguments (errors set). */
int hy_name_arg(hybrid_vtab *v, sqlite3_value *val, const char *what, const char **out);
int hy_k_arg(hybrid_vtab *v, sqlite3_value *val, sqlite3_int64 *k);
int hy_query_arg(hybrid_vtab *v, sqlite3_value *val, const char **q, int *len);
/* The options JSON into o (defaults for NULL); o->fts_query is sqlite3_malloc'd. */
int hy_options_arg(hybrid_vtab *v, sqlite3_value *val, hybrid_options *o);
/* The FTS5 query of plain words: each word an FTS5 string, joined by OR (*out NULL: none). */
int hy_keyword_query(sqlite3 *db, const char *q, char **out);

#endif
