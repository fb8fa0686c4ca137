/* embed_hybrid's "rerank" option: the best rerank_depth fused rows scored again by a cross-encoder
 * against the query, one encoder batch for them all, and put first in the order of that score.
 * A chunked index's row is scored by its chunk nearest the query, the index's own answer to
 * MATCH restricted to the candidates. */
#include "ext_hybrid.h"
#include "ext_registry.h"
#include "base/utf8.h"
#include "sqlite-embed/rerank.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t n;
    sqlite3_int64 *rowid; /* the candidates' rowids, ascending, with their places in rows */
    size_t *at;
    char **text; /* per place: the text scored (sqlite3_malloc'd) */
    size_t *len;
} candidates;

static void candidates_free(candidates *c) {
    for (size_t i = 0; c->text && i < c->n; i++) sqlite3_free(c->text[i]);
    sqlite3_free(c->rowid);
    sqlite3_free(c->at);
    sqlite3_free(c->text);
    sqlite3_free(c->len);
}

static int by_rowid_at(const void *a, const void *b, void *rows) {
    const hybrid_row *r = rows;
    sqlite3_int64 x = r[*(const size_t *)a].rowid, y = r[*(const size_t *)b].rowid;
    return (x > y) - (x < y);
}

/* The places of rows[0, n) by rowid, and the JSON array of the rowids for the statement. */
static int candidates_init(candidates *c, hybrid_row *rows, size_t n, char **json) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->rowid = sqlite3_malloc64(n * sizeof *c->rowid);
    c->at = sqlite3_malloc64(n * sizeof *c->at);
    c->text = sqlite3_malloc64(n * sizeof *c->text);
    c->len = sqlite3_malloc64(n * sizeof *c->len);
    if (!c->rowid || !c->at || !c->text || !c->len) return SQLITE_NOMEM;
    memset(c->text, 0, n * sizeof *c->text);
    sqlite3_str *s = sqlite3_str_new(NULL);
    for (size_t i = 0; i < n; i++) {
        c->at[i] = i;
        sqlite3_str_appendf(s, i ? ",%lld" : "[%lld", rows[i].rowid);
    }
    sqlite3_str_appendchar(s, 1, ']');
    *json = sqlite3_str_finish(s);
    if (!*json) return SQLITE_NOMEM;
    qsort_r(c->at, n, sizeof *c->at, by_rowid_at, rows);
    for (size_t i = 0; i < n; i++) c->rowid[i] = rows[c->at[i]].rowid;
    return SQLITE_OK;
}

static size_t candidate_place(const candidates *c, sqlite3_int64 rowid) {
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->rowid[mid] < rowid) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->n && c->rowid[lo] == rowid ? c->at[lo] : (size_t)-1;
}

/* One row of the index's answer: its text, or the chunk's bytes of it, kept for scoring. */
static int take_text(hybrid_vtab *v, sqlite3_stmt *s, candidates *c, hybrid_row *rows, const table_ref *ix) {
    sqlite3_int64 rowid = sqlite3_column_int64(s, 0);
    size_t at = candidate_place(c, rowid);
    if (at == (size_t)-1 || c->text[at]) return SQLITE_OK;
    const char *text = (const char *)sqlite3_column_text(s, 1);
    sqlite3_int64 len = sqlite3_column_bytes(s, 1), start = 0, end = len;
    if (!text) return hy_fail(v, "option \"rerank\": row %lld of \"%s\" has no text to score", rowid, ix->name);
    hybrid_row *r = &rows[at];
    if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
        start = sqlite3_column_int64(s, 3);
        end = sqlite3_column_int64(s, 4);
        if (start < 0 || start > end || end > len)
            return hy_fail(v, "option \"rerank\": row %lld's chunk [%lld, %lld) is outside its text", rowid, start,
                           end);
        r->has_chunk = 1;
        r->chunk[0] = sqlite3_column_int64(s, 2);
        r->chunk[1] = start;
        r->chunk[2] = end;
    }
    if (!emb_utf8_valid(text + start, (size_t)(end - start), NULL)) {
        /* the index's text column is NAME_rows' text as stored: damage, named as embed_index names it */
        int rc = hy_fail(v,
                         "option \"rerank\": shadow table \"%s_rows\" is damaged: the text of rowid %lld is not "
                         "valid UTF-8",
                         ix->name, rowid);
        return rc == SQLITE_NOMEM ? rc : SQLITE_CORRUPT_VTAB;
    }
    c->len[at] = (size_t)(end - start);
    if (!(c->text[at] = sqlite3_malloc64(c->len[at] + 1))) return SQLITE_NOMEM;
    memcpy(c->text[at], text + start, c->len[at]);
    c->text[at][c->len[at]] = 0;
    return SQLITE_OK;
}

/* Each candidate's text, from the index: for a chunked index, its chunk nearest the query. */
static int fetch_texts(hybrid_vtab *v, const table_ref *ix, const char *q, candidates *c, hybrid_row *rows,
                       const char *json) {
    sqlite3_stmt *s;
    int owned,
        rc = hy_stmt_get(v,
                         sqlite3_mprintf("SELECT rowid, text, chunk, chunk_start, chunk_end FROM \"%w\".\"%w\" "
                                         "WHERE \"%w\" MATCH ?1 AND k = ?2 AND rowid IN "
                                         "(SELECT value FROM json_each(?3))",
                                         ix->schema, ix->name, ix->name),
                         &s, &owned);
    if (rc != SQLITE_OK) return rc;
    if ((rc = sqlite3_bind_text(s, 1, q, -1, SQLITE_STATIC)) == SQLITE_OK &&
        (rc = sqlite3_bind_int64(s, 2, (sqlite3_int64)c->n)) == SQLITE_OK &&
        (rc = sqlite3_bind_text(s, 3, json, -1, SQLITE_STATIC)) == SQLITE_OK)
        while ((rc = hy_stmt_step(v, s)) == SQLITE_ROW)
            if ((rc = take_text(v, s, c, rows, ix)) != SQLITE_OK) break;
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    hy_stmt_done(s, owned);
    for (size_t i = 0; rc == SQLITE_OK && i < c->n; i++)
        if (!c->text[i])
            rc = hy_fail(v, "option \"rerank\": row %lld of \"%s\" has no text to score", rows[i].rowid, ix->name);
    return rc;
}

/* Highest cross-encoder score first; then the fused order (score, then rowid). */
static int by_rerank(const void *a, const void *b) {
    const hybrid_row *x = a, *y = b;
    if (x->rerank != y->rerank) return x->rerank < y->rerank ? 1 : -1;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return (x->rowid > y->rowid) - (x->rowid < y->rowid);
}

static int score(hybrid_vtab *v, emb_model *m, const char *q, int qlen, candidates *c, hybrid_row *rows) {
    float *scores = sqlite3_malloc64(c->n * sizeof *scores);
    if (!scores) return SQLITE_NOMEM;
    char err[EMB_ERR_LEN];
    int rc = SQLITE_OK;
    if (emb_model_rerank(m, q, (size_t)qlen, (const char *const *)c->text, c->len, c->n, scores, err)) {
        rc = hy_fail(v, "option \"rerank\": %s", err);
    } else {
        for (size_t i = 0; i < c->n; i++) {
            rows[i].rerank = scores[i];
            rows[i].reranked = 1;
        }
        qsort(rows, c->n, sizeof *rows, by_rerank);
    }
    sqlite3_free(scores);
    return rc;
}

int hy_rerank(hybrid_vtab *v, const table_ref *ix, const char *q, int qlen, const hybrid_options *o,
              hybrid_row *rows, size_t n) {
    size_t d = n < (size_t)o->rerank_depth ? n : (size_t)o->rerank_depth;
    char *err = NULL;
    emb_model *m = ext_model_named(o->rerank, (int)strlen(o->rerank), &err);
    if (!m) {
        int rc = err ? hy_fail(v, "option \"rerank\": %s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    int rc = SQLITE_OK;
    if (!emb_model_has_classifier(m))
        rc =
            hy_fail(v,
                    "option \"rerank\": model '%s' has no classifier: it makes embeddings, and reranking takes a "
                    "cross-encoder (a folder whose config.json names a ...ForSequenceClassification architecture)",
                    o->rerank);
    candidates c = {0};
    char *json = NULL;
    if (rc == SQLITE_OK && d > 0 && (rc = candidates_init(&c, rows, d, &json)) == SQLITE_OK &&
        (rc = fetch_texts(v, ix, q, &c, rows, json)) == SQLITE_OK)
        rc = score(v, m, q, qlen, &c, rows);
    sqlite3_free(json);
    candidates_free(&c);
    emb_model_release(m);
    return rc;
}
