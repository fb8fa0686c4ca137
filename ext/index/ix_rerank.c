/* A search reranked by a cross-encoder:
 *
 *   SELECT rowid, rerank_score FROM notes_idx
 *    WHERE notes_idx MATCH 'late bus' AND k = 10 AND rerank = 'ce' [AND rerank_depth = 50];
 *
 * The nearest rerank_depth candidates (parts, for a chunked index: each chunk's own text; at
 * least enough of them for k rows) are scored against the query's text by the cross-encoder
 * in one batch (emb_model_rerank); a row's score is its best candidate's, and the rows come in
 * the order of their scores, highest first, ties by distance. */
#include "ix.h"
#include "base/utf8.h"
#include "sqlite-embed/rerank.h"
#include <stdlib.h>
#include <string.h>

/* The cross-encoder named, retained. */
static emb_model *cross_encoder(ix_vtab *v, const char *name, int *rc) {
    emb_model *m = ext_registry_get(name);
    *rc = SQLITE_ERROR;
    if (!m) {
        ix_error(v, "rerank: no model named '%s' (load a cross-encoder first with embed_load)", name);
    } else if (!emb_model_has_classifier(m)) {
        ix_error(v,
                 "rerank: model '%s' has no classifier: rerank needs a cross-encoder (a folder whose "
                 "config.json names ...ForSequenceClassification)",
                 name);
        emb_model_release(m);
        m = NULL;
    } else {
        *rc = SQLITE_OK;
    }
    return m;
}

/* The text of candidate i into texts[i] / lens[i] (sqlite3_malloc'd): its row's text, or for a
 * chunked index its chunk of it. */
static int candidate_text(ix_vtab *v, const ix_cache *c, const emb_knn_hit *h, char **text, size_t *len) {
    sqlite3_int64 row = c->rows ? c->rows[h->pos] : h->id;
    ix_part p = {0, 0, -1};
    int rc = c->rows ? ix_part_info(v, h->id, row, &p) : SQLITE_OK;
    sqlite3_stmt *s = rc == SQLITE_OK ? ix_stmt(v, IX_STMT_TEXT, &rc) : NULL;
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, row);
    int step = sqlite3_step(s);
    const char *t = step == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    size_t n = t ? (size_t)sqlite3_column_bytes(s, 0) : 0;
    if (p.end >= 0) { /* checked against the text's length and UTF-8 by ix_part_info */
        t = t ? t + p.start : NULL;
        n = (size_t)(p.end - p.start);
    } else if (t && !emb_utf8_valid(t, n, NULL)) { /* a row's whole text: checked here */
        sqlite3_reset(s);
        return ix_corrupt(v, "rows", "the text of rowid %lld is not valid UTF-8", (long long)row);
    }
    if (!(*text = sqlite3_malloc64(n + 1))) rc = SQLITE_NOMEM;
    else {
        if (n) memcpy(*text, t, n);
        (*text)[n] = 0;
        *len = n;
    }
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE) rc = ix_sql_error(v, step);
    return rc;
}

typedef struct {
    int64_t row;
    float score;
    size_t at;
} scored;

/* Each row's best first (score, then the candidate's order), rows apart. */
static int by_row_score(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* Highest score first; equal scores by the candidates' order (distance, then id). */
static int by_score(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* Keeps each row's best candidate, by score, at most k, in that order (hits, vecs and scores). */
static int order_by_score(const ix_cache *c, emb_knn_hit *hits, float *vecs, size_t *n, size_t k,
                          const float *score, float **out) {
    size_t m = 0, d = c->d;
    scored *x = sqlite3_malloc64((*n + 1) * sizeof *x);
    emb_knn_hit *h = sqlite3_malloc64((*n + 1) * sizeof *h);
    float *vv = vecs ? sqlite3_malloc64((*n + 1) * d * sizeof *vv) : NULL;
    *out = sqlite3_malloc64((*n + 1) * sizeof **out);
    int rc = x && h && *out && (vv || !vecs) ? SQLITE_OK : SQLITE_NOMEM;
    for (size_t i = 0; rc == SQLITE_OK && i < *n; i++)
        x[i] = (scored){c->rows ? c->rows[hits[i].pos] : hits[i].id, score[i], i};
    if (rc == SQLITE_OK) {
        qsort(x, *n, sizeof *x, by_row_score);
        for (size_t i = 0; i < *n; i++)
            if (i == 0 || x[i].row != x[i - 1].row) x[m++] = x[i];
        qsort(x, m, sizeof *x, by_score);
        if (m > k) m = k;
        for (size_t i = 0; i < m; i++) {
            h[i] = hits[x[i].at];
            (*out)[i] = x[i].score;
            if (vecs) memcpy(vv + i * d, vecs + x[i].at * d, d * sizeof *vv);
        }
        memcpy(hits, h, m * sizeof *h);
        if (vecs) memcpy(vecs, vv, m * d * sizeof *vv);
        *n = m;
    }
    sqlite3_free(x);
    sqlite3_free(h);
    sqlite3_free(vv);
    return rc;
}

int ix_rerank(ix_vtab *v, const char *model, const char *query, size_t qlen, const ix_cache *c, emb_knn_hit *hits,
              float *vecs, size_t *n, size_t k, float **scores) {
    int rc;
    *scores = NULL;
    emb_model *m = cross_encoder(v, model, &rc);
    if (!m) return rc;
    size_t nc = *n;
    char **texts = sqlite3_malloc64((nc + 1) * sizeof *texts);
    size_t *lens = sqlite3_malloc64((nc + 1) * sizeof *lens);
    float *score = sqlite3_malloc64((nc + 1) * sizeof *score);
    rc = texts && lens && score ? SQLITE_OK : SQLITE_NOMEM;
    if (texts) memset(texts, 0, (nc + 1) * sizeof *texts);
    for (size_t i = 0; rc == SQLITE_OK && i < nc; i++) rc = candidate_text(v, c, &hits[i], &texts[i], &lens[i]);
    char err[EMB_ERR_LEN];
    if (rc == SQLITE_OK && nc &&
        emb_model_rerank(m, query, qlen, (const char *const *)texts, lens, nc, score, err))
        rc = ix_error(v, "rerank: %s", err);
    if (rc == SQLITE_OK) rc = order_by_score(c, hits, vecs, n, k, score, scores);
    for (size_t i = 0; texts && i < nc; i++) sqlite3_free(texts[i]);
    sqlite3_free(texts);
    sqlite3_free(lens);
    sqlite3_free(score);
    emb_model_release(m);
    return rc;
}
