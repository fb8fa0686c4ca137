/* embed_index's 'build' command, in FTS5's style:
 *
 *   INSERT INTO notes_idx(notes_idx) VALUES ('build');
 *   INSERT INTO notes_idx(notes_idx, text) VALUES ('build', '{"lists": 1000}');
 *
 * trains the IVF's centroids (k-means, core/ivf.c) on a sample of the rows, stores them in
 * NAME_centroids, puts every row in the list of its nearest centroid (the chunks' lists) and
 * stores the rows again list by list.
 * Rows inserted later go into their list as they are placed; a later 'build' starts over. */
#include "ix.h"
#include <cjson/cJSON.h>
#include <string.h>
#include <time.h>

#define BUILD_EXAMPLE "{\"lists\": 1000, \"iterations\": 10, \"sample\": 256, \"target_recall\": 0.95}"

typedef struct {
    sqlite3_int64 lists; /* 0: emb_ivf_default_lists */
    sqlite3_int64 iterations; /* Lloyd iterations */
    sqlite3_int64 sample; /* training rows per list */
    double target; /* 0: NAME_config's target_recall is kept */
} build_options;

static int integer_option(ix_vtab *v, const cJSON *root, const char *key, sqlite3_int64 lo, sqlite3_int64 hi,
                          sqlite3_int64 *out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!x) return SQLITE_OK;
    double d = cJSON_IsNumber(x) ? x->valuedouble : -1;
    if (!cJSON_IsNumber(x) || d != (double)(sqlite3_int64)d || d < (double)lo || d > (double)hi)
        return ix_error(v, "build: option \"%s\" must be an integer from %lld to %lld", key, (long long)lo,
                        (long long)hi);
    *out = (sqlite3_int64)d;
    return SQLITE_OK;
}

/* target_recall: a number in (0, 1], or 0 when absent. */
static int target_option(ix_vtab *v, const char *cmd, const cJSON *root, double *out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, "target_recall");
    *out = 0;
    if (!x) return SQLITE_OK;
    if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0.0001 && x->valuedouble <= 1))
        return ix_error(v, "%s: option \"target_recall\" must be a number above 0 and at most 1, such as 0.95",
                        cmd);
    *out = x->valuedouble;
    return SQLITE_OK;
}

/* The JSON options of a command, or NULL for none. */
static int options_json(ix_vtab *v, const char *cmd, sqlite3_value *val, const char *example, cJSON **root) {
    *root = NULL;
    if (!val || sqlite3_value_type(val) == SQLITE_NULL) return SQLITE_OK;
    if (sqlite3_value_type(val) != SQLITE_TEXT)
        return ix_error(v, "%s: the options must be JSON text such as '%s'", cmd, example);
    char *err = NULL;
    if (ext_json_object((const char *)sqlite3_value_text(val), sqlite3_value_bytes(val), example, root, &err)) {
        int rc = err ? ix_error(v, "%s: %s", cmd, err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    return SQLITE_OK;
}

static int read_options(ix_vtab *v, sqlite3_value *val, build_options *o) {
    *o = (build_options){0, 10, 256, 0};
    cJSON *root;
    int rc = options_json(v, "build", val, BUILD_EXAMPLE, &root);
    if (rc != SQLITE_OK || !root) return rc;
    for (const cJSON *x = root->child; x && rc == SQLITE_OK; x = x->next)
        if (strcmp(x->string, "lists") && strcmp(x->string, "iterations") && strcmp(x->string, "sample") &&
            strcmp(x->string, "target_recall"))
            rc = ix_error(v, "build: unknown option \"%s\" (known: lists, iterations, sample, target_recall)",
                          x->string);
    if (rc == SQLITE_OK) rc = integer_option(v, root, "lists", 1, IX_MAX_LISTS, &o->lists);
    if (rc == SQLITE_OK) rc = integer_option(v, root, "iterations", 1, 100, &o->iterations);
    if (rc == SQLITE_OK) rc = integer_option(v, root, "sample", 1, 1 << 16, &o->sample);
    if (rc == SQLITE_OK) rc = target_option(v, "build", root, &o->target);
    cJSON_Delete(root);
    return rc;
}

static sqlite3_int64 now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (sqlite3_int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The IVF build's interrupt check, asked by the k-means between blocks. */
static int stop_asked(void *arg) { return ix_interrupted(arg, "build") != SQLITE_OK; }

/* A seeded sample of `want` rows: their positions (*pos, the first want of n) and float32
 * vectors (*x), both sqlite3_malloc'd (freed by the caller, also on errors). */
static int sample_floats(ix_vtab *v, const ix_cache *c, size_t want, uint64_t seed, size_t **pos, float **x) {
    *pos = sqlite3_malloc64((c->n ? c->n : 1) * sizeof **pos);
    *x = sqlite3_malloc64((want ? want : 1) * c->d * sizeof **x);
    if (!*pos || !*x) return SQLITE_NOMEM;
    ix_sample(c->n, want, seed, *pos);
    return ix_floats_at(v, c, *pos, want, 0, *x);
}

/* Trains the centroids on `sample` rows drawn without replacement (seeded: a build of the same
 * rows gives the same lists). */
static int train(ix_vtab *v, const ix_cache *c, const build_options *o, size_t lists, emb_ivf *ivf) {
    size_t n = c->n, want = (size_t)o->sample * lists < n ? (size_t)o->sample * lists : n, *pos;
    float *x;
    int rc = sample_floats(v, c, want, 0, &pos, &x);
    emb_stop stop = {stop_asked, v};
    int r = rc == SQLITE_OK
                ? emb_ivf_train_stoppable(ivf, x, want, c->d, c->metric, lists, (int)o->iterations, 42, &stop)
                : 0;
    if (r == -2) rc = ix_interrupted(v, "build");
    else if (r) rc = SQLITE_NOMEM;
    sqlite3_free(pos);
    sqlite3_free(x);
    return rc;
}

static int store_centroids(ix_vtab *v, const emb_ivf *ivf) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_CLEAR_CENTROIDS, &rc);
    if (s) rc = ix_run(v, s);
    if (rc == SQLITE_OK) s = ix_stmt(v, IX_STMT_PUT_CENTROID, &rc);
    for (size_t l = 0; rc == SQLITE_OK && l < ivf->lists; l++) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)l);
        sqlite3_bind_blob(s, 2, ivf->centroids + l * ivf->d, (int)(ivf->d * sizeof(float)), SQLITE_STATIC);
        rc = ix_run(v, s);
    }
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_lists", (sqlite3_int64)ivf->lists);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "ivf_serial", ix_new_chunk_ver());
    return rc;
}

/* The nearest list + 1 of every row of the copy, into list1 (n values); each chunk's rows are
 * also scored against the held-out queries t. */
static int assign_all(ix_vtab *v, const ix_cache *c, const emb_ivf *ivf, int32_t *list1, emb_truth *t) {
    size_t ch = c->chunk, n = c->n;
    size_t *pos = sqlite3_malloc64(ch * sizeof *pos);
    float *x = sqlite3_malloc64(ch * c->d * sizeof *x);
    int rc = pos && x ? SQLITE_OK : SQLITE_NOMEM;
    for (size_t at = 0; rc == SQLITE_OK && at < n; at += ch) {
        size_t rows = n - at < ch ? n - at : ch;
        for (size_t i = 0; i < rows; i++) pos[i] = at + i;
        ix_progress(v->key, "build: putting rows in their lists, %zu of %zu", at, n);
        rc = ix_interrupted(v, "build");
        if (rc == SQLITE_OK) rc = ix_floats_at(v, c, pos, rows, 0, x);
        if (rc == SQLITE_OK && emb_ivf_assign(ivf, x, rows, list1 + at)) rc = SQLITE_NOMEM;
        if (rc == SQLITE_OK && t->nq && emb_truth_add(t, x, rows, at)) rc = SQLITE_NOMEM;
        for (size_t i = 0; rc == SQLITE_OK && i < rows; i++) list1[at + i]++;
    }
    sqlite3_free(pos);
    sqlite3_free(x);
    return rc;
}

/* The held-out queries of the build's measurement: a seeded sample of the rows. */
static int pick_queries(ix_vtab *v, const ix_cache *c, emb_truth *t) {
    size_t nq = ix_tune_queries(c->n), *pos = NULL;
    float *q = NULL;
    memset(t, 0, sizeof *t);
    if (!nq) return SQLITE_OK;
    int rc = sample_floats(v, c, nq, 3, &pos, &q);
    if (rc == SQLITE_OK && emb_truth_init(t, q, pos, nq, c->d, c->metric, 10)) rc = SQLITE_NOMEM;
    sqlite3_free(pos);
    sqlite3_free(q);
    return rc;
}

/* Writes the rows again in the order of their lists, so that each list's rows are
 * consecutive positions, which a search scores as one block (rows inserted later are appended
 * and scored one by one until the next build). */
static int store_by_list(ix_vtab *v, const ix_cache *c, const int32_t *list1, size_t lists) {
    size_t n = c->n, ch = c->chunk, rec = c->rec;
    size_t *start = sqlite3_malloc64((lists + 2) * sizeof *start), *order = sqlite3_malloc64(n * sizeof *order);
    unsigned char *recs = sqlite3_malloc64(ch * rec);
    int64_t *ids = sqlite3_malloc64(ch * sizeof *ids);
    int32_t *l1 = sqlite3_malloc64(ch * sizeof *l1);
    int rc = start && order && recs && ids && l1 ? SQLITE_OK : SQLITE_NOMEM;
    if (rc == SQLITE_OK) { /* a counting sort by list, stable */
        memset(start, 0, (lists + 2) * sizeof *start);
        for (size_t i = 0; i < n; i++) start[(size_t)list1[i] + 1]++;
        for (size_t l = 1; l < lists + 2; l++) start[l] += start[l - 1];
        for (size_t i = 0; i < n; i++) order[start[list1[i]]++] = i;
    }
    for (size_t at = 0; rc == SQLITE_OK && at < n; at += ch) {
        size_t rows = n - at < ch ? n - at : ch;
        ix_progress(v->key, "build: storing rows list by list, %zu of %zu", at, n);
        if ((rc = ix_interrupted(v, "build")) != SQLITE_OK) break;
        for (size_t i = 0; i < rows; i++) {
            size_t from = order[at + i];
            memcpy(recs + i * rec, c->records + from * rec, rec);
            ids[i] = c->ids[from];
            l1[i] = list1[from];
        }
        rc = ix_write_chunk(v, (sqlite3_int64)(at / ch), recs, ids, l1, rows);
    }
    sqlite3_free(start);
    sqlite3_free(order);
    sqlite3_free(recs);
    sqlite3_free(ids);
    sqlite3_free(l1);
    return rc;
}

/* Lists, rows stored list by list, and the probes measured; the recorded time of the build. */
static int build_lists(ix_vtab *v, const ix_cache *c, const build_options *o, size_t lists) {
    size_t n = c->n;
    emb_ivf ivf;
    emb_truth t;
    memset(&ivf, 0, sizeof ivf);
    memset(&t, 0, sizeof t);
    ix_progress(v->key, "build: training %zu lists (k-means) on a sample of %zu rows", lists, n);
    int rc = train(v, c, o, lists, &ivf);
    if (rc == SQLITE_OK) rc = store_centroids(v, &ivf);
    int32_t *list1 = rc == SQLITE_OK ? sqlite3_malloc64(n * sizeof *list1) : NULL;
    if (rc == SQLITE_OK && !list1) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = pick_queries(v, c, &t);
    if (rc == SQLITE_OK) rc = assign_all(v, c, &ivf, list1, &t);
    ix_progress(v->key, "build: measuring the probes for the target recall");
    if (rc == SQLITE_OK) rc = ix_tune_probes(v, &ivf, &t, list1, n);
    if (rc == SQLITE_OK) rc = ix_interrupted(v, "build");
    if (rc == SQLITE_OK) rc = store_by_list(v, c, list1, lists);
    ix_progress(v->key, "build: measuring the oversample for the target recall");
    if (rc == SQLITE_OK) rc = ix_tune_codes(v, c); /* the codes' ranks do not depend on positions */
    ix_progress(v->key, NULL);
    emb_truth_free(&t);
    sqlite3_free(list1);
    emb_ivf_free(&ivf);
    return rc;
}

int ix_build(ix_vtab *v, sqlite3_value *options) {
    if (!v->ivf)
        return ix_error(v,
                        "\"%s\" has no IVF to build: it was made without index = 'ivf' (its searches "
                        "are exact scans)",
                        v->name);
    build_options o;
    int rc = read_options(v, options, &o);
    ix_cache *c = NULL;
    /* the shared copy, unless this transaction wrote already: the build reads it only */
    if (rc == SQLITE_OK) rc = ix_snapshot(v, &c);
    if (rc != SQLITE_OK) return rc;
    v->dirty = 1;
    size_t n = c->n, lists = o.lists ? (size_t)o.lists : emb_ivf_default_lists(n);
    sqlite3_int64 t0 = now_ms();
    if (n == 0)
        rc = ix_error(v,
                      "build: \"%s\" is empty: insert rows first (rows inserted after a build go "
                      "into their lists at once)",
                      v->name);
    else if (lists > n)
        rc = ix_error(v, "build: %lld lists for %lld rows: a list needs at least one row", (long long)lists,
                      (long long)n);
    if (rc == SQLITE_OK && o.target > 0)
        rc = ix_set_config(v, "target_recall", (sqlite3_int64)(o.target * 10000 + 0.5));
    if (rc == SQLITE_OK) rc = build_lists(v, c, &o, lists);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "built_at", (sqlite3_int64)time(NULL));
    if (rc == SQLITE_OK) rc = ix_set_config(v, "build_ms", now_ms() - t0);
    ix_cache_release(c);
    return rc;
}

int ix_optimize(ix_vtab *v, sqlite3_value *options) {
    static const char *example = "{\"target_recall\": 0.95}";
    if (v->storage == EMB_STORAGE_F32 || !v->rescore)
        return ix_error(v,
                        "optimize measures the oversample of compact storage with float32 copies, and "
                        "\"%s\" has %s (%s)",
                        v->name, v->storage == EMB_STORAGE_F32 ? "storage = 'f32'" : "rescore = false",
                        v->storage == EMB_STORAGE_F32 ? "its scans are exact; an IVF is measured by 'build'"
                                                      : "nothing to measure the codes against");
    cJSON *root;
    double target = 0;
    int rc = options_json(v, "optimize", options, example, &root);
    for (const cJSON *x = root ? root->child : NULL; x && rc == SQLITE_OK; x = x->next)
        if (strcmp(x->string, "target_recall"))
            rc = ix_error(v, "optimize: unknown option \"%s\" (known: target_recall)", x->string);
    if (rc == SQLITE_OK && root) rc = target_option(v, "optimize", root, &target);
    cJSON_Delete(root);
    ix_cache *c = NULL;
    if (rc == SQLITE_OK && target > 0)
        rc = ix_set_config(v, "target_recall", (sqlite3_int64)(target * 10000 + 0.5));
    if (rc == SQLITE_OK) rc = ix_snapshot(v, &c);
    if (rc != SQLITE_OK) return rc;
    v->dirty = 1;
    if (c->n < 1000)
        rc = ix_error(v, "optimize: \"%s\" has %lld rows, too few to measure (1,000 at least)", v->name,
                      (long long)c->n);
    else rc = ix_tune_codes(v, c);
    ix_cache_release(c);
    return rc;
}
