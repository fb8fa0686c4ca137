/* embed_hybrid(index, fts, query, k [, options]): one query searched by keywords (an FTS5
 * table, in bm25 order) and by vectors (an embed_index, which embeds the query with its own
 * model), the two lists fused by reciprocal rank fusion: a row's score is the sum, over the
 * sides that found it, of weight / (rrf_k + rank). Both searches are ordinary statements on
 * the caller's connection, so they see its transaction and keep the tables' own checks and
 * errors; table names reach them only quoted as identifiers. */
#include "ext_functions.h"
#include "ext_util.h"
#include "base/utf8.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ext_hybrid.h"

/* ---------- the two searches and their fusion ---------- */

static hybrid_row *new_row(hybrid_cursor *c) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 128;
        hybrid_row *rows = sqlite3_realloc64(c->rows, cap * sizeof *rows);
        if (!rows) return NULL;
        c->rows = rows;
        c->cap = cap;
    }
    hybrid_row *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Runs one side's statement (sql taken): its rows, in the order it returns them, get ranks
 * 1, 2, ... and its second column as their value. */
static int run_side(hybrid_cursor *c, int side, char *sql, const char *match, sqlite3_int64 depth) {
    hybrid_vtab *v = (hybrid_vtab *)c->base.pVtab;
    sqlite3_stmt *s;
    int owned, rc = hy_stmt_get(v, sql, &s, &owned);
    if (rc != SQLITE_OK) return rc;
    if ((rc = sqlite3_bind_text(s, 1, match, -1, SQLITE_STATIC)) == SQLITE_OK &&
        (rc = sqlite3_bind_int64(s, 2, depth)) == SQLITE_OK) {
        for (sqlite3_int64 rank = 1; (rc = hy_stmt_step(v, s)) == SQLITE_ROW; rank++) {
            hybrid_row *r = new_row(c);
            if (!r) {
                rc = SQLITE_NOMEM;
                break;
            }
            r->rowid = sqlite3_column_int64(s, 0);
            r->rank[side] = rank;
            r->value[side] = sqlite3_column_double(s, 1);
            if (side == HY_SIDE_VECTOR && sqlite3_column_type(s, 3) != SQLITE_NULL) { /* a chunked index */
                r->has_chunk = 1;
                for (int j = 0; j < 3; j++) r->chunk[j] = sqlite3_column_int64(s, 2 + j);
            }
        }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    hy_stmt_done(s, owned);
    return rc;
}

static int by_rowid(const void *a, const void *b) {
    sqlite3_int64 x = ((const hybrid_row *)a)->rowid, y = ((const hybrid_row *)b)->rowid;
    return (x > y) - (x < y);
}

/* Highest score first; equal scores by rowid, ascending. */
static int by_score(const void *a, const void *b) {
    const hybrid_row *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return (x->rowid > y->rowid) - (x->rowid < y->rowid);
}

/* Joins the two sides' rows of one rowid and scores each row, highest first. */
static void fuse(hybrid_cursor *c, const hybrid_options *o) {
    qsort(c->rows, c->n, sizeof *c->rows, by_rowid);
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        hybrid_row *r = &c->rows[i];
        if (m && c->rows[m - 1].rowid == r->rowid) {
            hybrid_row *into = &c->rows[m - 1];
            for (int side = 0; side < 2; side++)
                if (r->rank[side]) {
                    into->rank[side] = r->rank[side];
                    into->value[side] = r->value[side];
                }
            if (r->has_chunk) {
                into->has_chunk = 1;
                memcpy(into->chunk, r->chunk, sizeof r->chunk);
            }
        } else {
            c->rows[m++] = *r;
        }
    }
    for (size_t i = 0; i < m; i++) {
        hybrid_row *r = &c->rows[i];
        r->score = 0;
        for (int side = 0; side < 2; side++)
            if (r->rank[side]) r->score += o->weight[side] / (o->rrf_k + (double)r->rank[side]);
    }
    qsort(c->rows, m, sizeof *c->rows, by_score);
    c->n = m;
}

static int search(hybrid_cursor *c, const table_ref *ix, const table_ref *ft, const char *q, int qlen,
                  const hybrid_options *o, sqlite3_int64 k) {
    hybrid_vtab *v = (hybrid_vtab *)c->base.pVtab;
    int rc = SQLITE_OK;
    if (o->weight[HY_SIDE_VECTOR] > 0)
        rc = run_side(c, HY_SIDE_VECTOR,
                      sqlite3_mprintf("SELECT rowid, distance, chunk, chunk_start, chunk_end FROM \"%w\".\"%w\" "
                                      "WHERE \"%w\" MATCH ?1 AND k = ?2",
                                      ix->schema, ix->name, ix->name),
                      q, o->depth);
    if (rc == SQLITE_OK && o->weight[HY_SIDE_TEXT] > 0) {
        char *words = NULL;
        if (!o->fts_query) rc = hy_keyword_query(v->db, q, &words);
        const char *match = o->fts_query ? o->fts_query : words;
        if (rc == SQLITE_OK && match) /* bm25's ties by rowid, so that the ranks are certain */
            rc = run_side(c, HY_SIDE_TEXT,
                          sqlite3_mprintf("SELECT rowid, bm25(\"%w\") FROM \"%w\".\"%w\" WHERE \"%w\" MATCH ?1 "
                                          "ORDER BY bm25(\"%w\"), rowid LIMIT ?2",
                                          ft->name, ft->schema, ft->name, ft->name, ft->name),
                          match, o->depth);
        sqlite3_free(words);
    }
    if (rc != SQLITE_OK) return rc;
    fuse(c, o);
    if (o->rerank) rc = hy_rerank(v, ix, q, qlen, o, c->rows, c->n);
    if ((sqlite3_uint64)k < c->n) c->n = (size_t)k;
    return rc;
}

/* ---------- the module ---------- */

static int hybrid_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **err) {
    (void)aux;
    (void)argc;
    (void)argv;
    (void)err;
    int rc = sqlite3_declare_vtab(
        db, "CREATE TABLE x(score REAL, vector_rank INTEGER, text_rank INTEGER, distance REAL, bm25 REAL,"
            " rerank_score REAL, chunk INTEGER, chunk_start INTEGER, chunk_end INTEGER,"
            " \"index\" HIDDEN, fts HIDDEN, query HIDDEN, k HIDDEN, options HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    hybrid_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->db = db;
    *out = &v->base;
    return SQLITE_OK;
}

static int hybrid_disconnect(sqlite3_vtab *vtab) {
    hybrid_vtab *v = (hybrid_vtab *)vtab;
    for (int i = 0; i < HY_N_CACHED; i++) {
        sqlite3_finalize(v->cache[i].stmt);
        sqlite3_free(v->cache[i].sql);
    }
    sqlite3_free(v);
    return SQLITE_OK;
}

/* idxNum of a plan without every required argument (above the bits of the arguments given) */
enum { NEED_ARGS = 1 << HY_N_ARGS };

/* Whether the options (constraint `slot`, -1: none) may ask for a second ranking: a value known
 * at planning that does not mention "rerank" does not. */
static int may_rerank(sqlite3_index_info *info, int slot) {
    sqlite3_value *val = NULL;
    if (slot < 0) return 0;
    if (sqlite3_vtab_rhs_value(info, slot, &val) != SQLITE_OK || !val) return 1;
    const unsigned char *json = sqlite3_value_text(val);
    return !json || strstr((const char *)json, "rerank") != NULL;
}

/* The arguments must be usable equalities (ext_plan_arguments says when to wait for a join
 * order, ext_plan_missing how an OR branch's plan without them is priced). */
static int hybrid_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    int slot[HY_N_ARGS];
    if (ext_plan_arguments(info, HY_COL_INDEX, HY_N_ARGS, slot) != SQLITE_OK) return SQLITE_CONSTRAINT;
    if (slot[HY_ARG_INDEX] < 0 || slot[HY_ARG_FTS] < 0 || slot[HY_ARG_QUERY] < 0 || slot[HY_ARG_K] < 0) {
        ext_plan_missing(info, NEED_ARGS);
        return SQLITE_OK;
    }
    info->idxNum = ext_plan_pass(info, slot, HY_N_ARGS, (1 << HY_N_ARGS) - 1);
    /* rows come by score, highest first, equal scores by rowid: unless reranked (options that
     * may name "rerank", or that are not known yet), when SQLite sorts them */
    const struct sqlite3_index_orderby *ob = info->aOrderBy;
    if (info->nOrderBy >= 1 && info->nOrderBy <= 2 && ob[0].iColumn == HY_COL_SCORE && ob[0].desc &&
        (info->nOrderBy == 1 || (ob[1].iColumn == -1 && !ob[1].desc)) && !may_rerank(info, slot[HY_ARG_OPTIONS]))
        info->orderByConsumed = 1;
    info->estimatedCost = 10000;
    info->estimatedRows = 10;
    return SQLITE_OK;
}

static int hybrid_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    hybrid_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void reset(hybrid_cursor *c) {
    for (int a = 0; a < HY_N_ARGS; a++) {
        sqlite3_value_free(c->args[a]);
        c->args[a] = NULL;
    }
    c->n = c->at = 0;
}

static int hybrid_close(sqlite3_vtab_cursor *cur) {
    hybrid_cursor *c = (hybrid_cursor *)cur;
    reset(c);
    sqlite3_free(c->rows);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int hybrid_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx_str;
    (void)argc;
    hybrid_cursor *c = (hybrid_cursor *)cur;
    hybrid_vtab *v = (hybrid_vtab *)cur->pVtab;
    reset(c);
    if (mask & NEED_ARGS) return hy_fail(v, "needs an index, an FTS5 table, a query and k: " HY_SIGNATURE);
    for (int a = 0, i = 0; a < HY_N_ARGS; a++)
        if (mask & (1 << a) && !(c->args[a] = sqlite3_value_dup(argv[i++]))) return SQLITE_NOMEM;
    const char *index, *fts, *q = NULL;
    int qlen, rc;
    sqlite3_int64 k = 0;
    hybrid_options o;
    if ((rc = hy_name_arg(v, c->args[HY_ARG_INDEX], "index", &index)) != SQLITE_OK ||
        (rc = hy_name_arg(v, c->args[HY_ARG_FTS], "FTS5 table", &fts)) != SQLITE_OK)
        return rc;
    if (sqlite3_value_type(c->args[HY_ARG_K]) == SQLITE_NULL)
        return hy_fail(v, "k is NULL: it must be a positive integer");
    if ((rc = hy_k_arg(v, c->args[HY_ARG_K], &k)) != SQLITE_OK) return rc;
    if ((rc = hy_options_arg(v, c->args[HY_ARG_OPTIONS], &o)) != SQLITE_OK) {
        hy_options_free(&o);
        return rc;
    }
    table_ref ix = {0}, ft = {0};
    if ((rc = hy_find_table(v, index, "index", "an embed_index table", "embed_index", &ix)) == SQLITE_OK &&
        (rc = hy_find_table(v, fts, "FTS5 table", "an FTS5 table", "fts5", &ft)) == SQLITE_OK &&
        sqlite3_value_type(c->args[HY_ARG_QUERY]) != SQLITE_NULL && /* NULL in: no rows */
        (rc = hy_query_arg(v, c->args[HY_ARG_QUERY], &q, &qlen)) == SQLITE_OK)
        rc = search(c, &ix, &ft, q, qlen, &o, k);
    hy_table_free(&ix);
    hy_table_free(&ft);
    hy_options_free(&o);
    if (rc != SQLITE_OK) c->n = 0;
    return rc;
}

static int hybrid_next(sqlite3_vtab_cursor *cur) {
    ((hybrid_cursor *)cur)->at++;
    return SQLITE_OK;
}

static int hybrid_eof(sqlite3_vtab_cursor *cur) {
    hybrid_cursor *c = (hybrid_cursor *)cur;
    return c->at >= c->n;
}

static int hybrid_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    hybrid_cursor *c = (hybrid_cursor *)cur;
    const hybrid_row *r = &c->rows[c->at];
    int side = col == HY_COL_VECTOR_RANK || col == HY_COL_DISTANCE ? HY_SIDE_VECTOR : HY_SIDE_TEXT;
    switch (col) {
    case HY_COL_SCORE: sqlite3_result_double(ctx, r->score); break;
    case HY_COL_VECTOR_RANK:
    case HY_COL_TEXT_RANK:
        if (r->rank[side]) sqlite3_result_int64(ctx, r->rank[side]);
        break;
    case HY_COL_DISTANCE:
    case HY_COL_BM25:
        if (r->rank[side]) sqlite3_result_double(ctx, r->value[side]);
        break;
    case HY_COL_RERANK_SCORE:
        if (r->reranked) sqlite3_result_double(ctx, r->rerank);
        break;
    case HY_COL_CHUNK:
    case HY_COL_CHUNK_START:
    case HY_COL_CHUNK_END:
        if (r->has_chunk) sqlite3_result_int64(ctx, r->chunk[col - HY_COL_CHUNK]);
        break;
    default:
        if (c->args[col - HY_COL_INDEX]) sqlite3_result_value(ctx, c->args[col - HY_COL_INDEX]);
    }
    return SQLITE_OK;
}

static int hybrid_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    hybrid_cursor *c = (hybrid_cursor *)cur;
    *rowid = c->rows[c->at].rowid;
    return SQLITE_OK;
}

const sqlite3_module ext_hybrid_module = {
    .xConnect = hybrid_connect,
    .xBestIndex = hybrid_best_index,
    .xDisconnect = hybrid_disconnect,
    .xOpen = hybrid_open,
    .xClose = hybrid_close,
    .xFilter = hybrid_filter,
    .xNext = hybrid_next,
    .xEof = hybrid_eof,
    .xColumn = hybrid_column,
    .xRowid = hybrid_rowid,
};
