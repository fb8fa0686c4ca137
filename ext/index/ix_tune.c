/* Recall-targeted defaults: the IVF's probes and compact storage's oversample measured on
 * held-out rows (core/search/tune.c) and kept in NAME_config, so that a search that sets
 * neither reaches target_recall (default 0.95) on data like the index's own.
 *
 *   ivf_probes, ivf_recall, ivf_scanned   the build's measurement (recall and the share of
 *                                          rows probed, in 1/10000); ivf_exact 1 when the
 *                                          target would cost about a scan: searches scan
 *   oversample, oversample_recall,         measured over oversample_rows rows (a sample of at
 *   oversample_rows, oversample_at         most TUNE_ROWS) when the index held oversample_at
 *   target_recall                          the target, in 1/10000
 *
 * Absent keys (older indexes, or too few rows to measure) mean the built-in defaults. */
#include "ix.h"
#include "search/tune.h"
#include <math.h>
#include <string.h>

#define TUNE_QUERIES 200 /* held-out rows measured */
#define TUNE_ROWS 20000 /* the rows a code measurement scores (more are sampled) */
#define TUNE_MIN_ROWS 1000 /* below: the defaults serve */
#define TUNE_K 10
#define TUNE_MARGIN 0.02 /* aimed above the target, so that new queries reach it */
#define EXACT_SHARE 0.5 /* probing more of the rows than this costs about a scan */

int ix_floats_at(ix_vtab *v, const ix_cache *c, const size_t *pos, size_t n, int exact, float *out) {
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        const unsigned char *r = c->records + pos[i] * c->rec;
        float *o = out + i * c->d;
        if (c->storage == EMB_STORAGE_F32) memcpy(o, r, c->d * sizeof *o);
        else if (v->rescore && (exact || c->storage == EMB_STORAGE_BIT))
            rc = ix_read_vector_at(v, c->ids[pos[i]], (sqlite3_int64)pos[i], o, NULL);
        else emb_decode(c->storage, r, c->d, o);
    }
    return rc;
}

void ix_sample(size_t n, size_t want, uint64_t seed, size_t *pos) {
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed ^ n;
    for (size_t i = 0; i < n; i++) pos[i] = i;
    for (size_t i = 0; i < want && i < n; i++) { /* a partial Fisher-Yates shuffle */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t j = i + (size_t)(s % (n - i)), t = pos[i];
        pos[i] = pos[j], pos[j] = t;
    }
}

int ix_target(ix_vtab *v, double *target) {
    sqlite3_int64 bp;
    int rc = ix_get_config_opt(v, "target_recall", 1, 10000, 9500, &bp);
    *target = (double)bp / 10000.0;
    return rc;
}

/* What one part of a two-part search must reach for the whole to reach target, plus the margin. */
static double aim(double target, int parts) {
    double a = (parts > 1 ? 1.0 - (1.0 - target) / parts : target) + TUNE_MARGIN;
    return a > 0.999 ? 0.999 : a;
}

static sqlite3_int64 bp(double x) { return (sqlite3_int64)llround(x * 10000.0); }

size_t ix_tune_queries(size_t n) {
    return n < TUNE_MIN_ROWS / 10 ? 0 : n / 4 < TUNE_QUERIES ? n / 4 : TUNE_QUERIES;
}

/* Too few rows to measure (fewer than 100): every list is probed, an exact search of a small
 * index; a measurement stored by an earlier build (of more lists, perhaps) must not outlive it. */
static int untuned_probes(ix_vtab *v, size_t lists) {
    int rc = ix_set_config(v, "ivf_probes", (sqlite3_int64)lists);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_recall", bp(1));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_scanned", bp(1));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_exact", 1);
    return rc;
}

int ix_tune_probes(ix_vtab *v, const emb_ivf *ivf, const emb_truth *t, const int32_t *list1, size_t n) {
    if (t->nq == 0) return untuned_probes(v, ivf->lists);
    size_t lists = ivf->lists, *sizes = sqlite3_malloc64(lists * sizeof *sizes);
    int32_t *list_of = sqlite3_malloc64((n ? n : 1) * sizeof *list_of);
    double target;
    int rc = sizes && list_of ? ix_target(v, &target) : SQLITE_NOMEM;
    emb_tuned r;
    if (rc == SQLITE_OK) {
        memset(sizes, 0, lists * sizeof *sizes);
        for (size_t i = 0; i < n; i++) {
            list_of[i] = list1[i] - 1;
            if (list_of[i] >= 0 && (size_t)list_of[i] < lists) sizes[list_of[i]]++;
        }
        if (emb_tune_probes(ivf, t, list_of, sizes, n, aim(target, v->storage == EMB_STORAGE_F32 ? 1 : 2), &r))
            rc = SQLITE_NOMEM;
    }
    /* probing the lists costs their rows plus one score per centroid */
    int exact =
        rc == SQLITE_OK && (r.scanned * (double)n + (double)lists >= EXACT_SHARE * (double)n || r.value >= lists);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_probes", (sqlite3_int64)(r.value < lists ? r.value : lists));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_recall", bp(r.recall));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_scanned", bp(r.scanned > 1 ? 1 : r.scanned));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_exact", exact);
    sqlite3_free(sizes);
    sqlite3_free(list_of);
    return rc;
}

/* The code ranks of every query's neighbours among the m rows at positions pos (their exact
 * vectors x), into ranks (nq x k). */
static int code_ranks(const ix_cache *c, const emb_truth *t, const size_t *pos, size_t m, size_t *ranks) {
    float *score = sqlite3_malloc64(m * sizeof *score);
    if (!score) return SQLITE_NOMEM;
    int rc = SQLITE_OK;
    for (size_t j = 0; rc == SQLITE_OK && j < t->nq; j++) {
        emb_code_query q;
        if (emb_code_query_init(&q, c->storage, c->metric, t->q + j * t->d, t->d)) {
            rc = SQLITE_NOMEM;
            break;
        }
        emb_code_scores(&q, c->records, c->aux, pos, m, score);
        emb_code_query_free(&q);
        emb_tune_code_ranks(t, j, score, m, ranks + j * t->k);
    }
    sqlite3_free(score);
    return rc;
}

/* Measures the oversample over a sample of the rows (all of them up to TUNE_ROWS): their exact
 * vectors from NAME_vectors, held-out queries among them. */
static int measure_codes(ix_vtab *v, const ix_cache *c, double target, emb_tuned *r, size_t *m_out) {
    size_t n = c->n, m = n < TUNE_ROWS ? n : TUNE_ROWS, nq = ix_tune_queries(m), d = c->d;
    size_t *pos = sqlite3_malloc64(n * sizeof *pos), *qpos = sqlite3_malloc64(m * sizeof *qpos);
    size_t *ranks = sqlite3_malloc64(nq * TUNE_K * sizeof *ranks);
    float *x = sqlite3_malloc64(m * d * sizeof *x), *q = sqlite3_malloc64(nq * d * sizeof *q);
    emb_truth t = {0};
    int rc = pos && qpos && ranks && x && q ? SQLITE_OK : SQLITE_NOMEM;
    if (rc == SQLITE_OK) {
        ix_sample(n, m, 1, pos);
        rc = ix_floats_at(v, c, pos, m, 1, x);
    }
    if (rc == SQLITE_OK) { /* the queries: the first nq of a shuffle of the sample */
        ix_sample(m, nq, 2, qpos);
        for (size_t j = 0; j < nq; j++) memcpy(q + j * d, x + qpos[j] * d, d * sizeof *q);
        if (emb_truth_init(&t, q, qpos, nq, d, c->metric, TUNE_K) || emb_truth_add(&t, x, m, 0)) rc = SQLITE_NOMEM;
    }
    if (rc == SQLITE_OK) rc = code_ranks(c, &t, pos, m, ranks);
    size_t count = 0;
    for (size_t j = 0; rc == SQLITE_OK && j < nq; j++) {
        memmove(ranks + count, ranks + j * TUNE_K, t.found[j] * sizeof *ranks);
        count += t.found[j];
    }
    if (rc == SQLITE_OK && emb_tune_oversample(ranks, count, TUNE_K, aim(target, v->ivf ? 2 : 1), r))
        rc = SQLITE_NOMEM;
    *m_out = m;
    emb_truth_free(&t);
    sqlite3_free(pos);
    sqlite3_free(qpos);
    sqlite3_free(ranks);
    sqlite3_free(x);
    sqlite3_free(q);
    return rc;
}

int ix_tune_codes(ix_vtab *v, const ix_cache *c) {
    if (c->storage == EMB_STORAGE_F32 || !v->rescore || ix_tune_queries(c->n < TUNE_ROWS ? c->n : TUNE_ROWS) == 0)
        return SQLITE_OK;
    double target;
    emb_tuned r;
    size_t m = 0;
    int rc = ix_target(v, &target);
    if (rc == SQLITE_OK) rc = measure_codes(v, c, target, &r, &m);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "oversample", (sqlite3_int64)r.value);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "oversample_recall", bp(r.recall));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "oversample_rows", (sqlite3_int64)m);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "oversample_at", (sqlite3_int64)c->n);
    return rc;
}

int ix_tune_if_grown(ix_vtab *v) {
    if (v->storage == EMB_STORAGE_F32 || !v->rescore) return SQLITE_OK;
    sqlite3_int64 count, at;
    int rc = ix_count(v, &count);
    if (rc == SQLITE_OK) rc = ix_get_config_opt(v, "oversample_at", 0, (sqlite3_int64)1 << 48, 0, &at);
    if (rc != SQLITE_OK || count < TUNE_MIN_ROWS || count < 2 * at) return rc;
    ix_cache *c = NULL;
    if ((rc = ix_snapshot(v, &c)) != SQLITE_OK) return rc;
    rc = ix_tune_codes(v, c);
    ix_cache_release(c);
    return rc;
}

int ix_tuned_settings(ix_vtab *v, const ix_cache *c, ix_tuned *out) {
    sqlite3_int64 probes = 0, exact = 0, over = 0, rows = 1;
    int rc = SQLITE_OK;
    memset(out, 0, sizeof *out);
    if (c->ivf_ready) {
        rc = ix_get_config_opt(v, "ivf_probes", 1, (sqlite3_int64)c->ivf.lists, 0, &probes);
        if (rc == SQLITE_OK) rc = ix_get_config_opt(v, "ivf_exact", 0, 1, 0, &exact);
    }
    if (rc == SQLITE_OK && c->storage != EMB_STORAGE_F32) {
        rc = ix_get_config_opt(v, "oversample", 1, 1 << 20, 0, &over);
        if (rc == SQLITE_OK) rc = ix_get_config_opt(v, "oversample_rows", 1, (sqlite3_int64)1 << 48, 1, &rows);
    }
    if (rc != SQLITE_OK) return rc;
    out->probes = (size_t)probes;
    out->exact = (int)exact;
    /* the ranks grow with the rows: the oversample measured over `rows` scaled to n */
    double o = ceil((double)over * (double)c->n / (double)rows);
    out->oversample = over ? (size_t)(o < (double)(1 << 20) ? o : (double)(1 << 20)) : 0;
    return SQLITE_OK;
}
