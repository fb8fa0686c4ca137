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

#define BUILD_EXAMPLE "{\"lists\": 1000, \"iterations\": 10, \"sample\": 256}"

typedef struct {
    sqlite3_int64 lists; /* 0: emb_ivf_default_lists */
    sqlite3_int64 iterations; /* Lloyd iterations */
    sqlite3_int64 sample; /* training rows per list */
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

static int read_options(ix_vtab *v, sqlite3_value *val, build_options *o) {
    *o = (build_options){0, 10, 256};
    if (!val || sqlite3_value_type(val) == SQLITE_NULL) return SQLITE_OK;
    if (sqlite3_value_type(val) != SQLITE_TEXT)
        return ix_error(v, "build: the options must be JSON text such as '%s'", BUILD_EXAMPLE);
    cJSON *root = NULL;
    char *err = NULL;
    if (ext_json_object((const char *)sqlite3_value_text(val), sqlite3_value_bytes(val), BUILD_EXAMPLE, &root,
                        &err)) {
        int rc = err ? ix_error(v, "build: %s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    int rc = SQLITE_OK;
    for (const cJSON *x = root->child; x && rc == SQLITE_OK; x = x->next)
        if (strcmp(x->string, "lists") && strcmp(x->string, "iterations") && strcmp(x->string, "sample"))
            rc = ix_error(v, "build: unknown option \"%s\" (known: lists, iterations, sample)", x->string);
    if (rc == SQLITE_OK) rc = integer_option(v, root, "lists", 1, 1 << 20, &o->lists);
    if (rc == SQLITE_OK) rc = integer_option(v, root, "iterations", 1, 100, &o->iterations);
    if (rc == SQLITE_OK) rc = integer_option(v, root, "sample", 1, 1 << 16, &o->sample);
    cJSON_Delete(root);
    return rc;
}

/* The float32 vectors of the rows at positions pos[0 .. n-1] of copy c into out: the records
 * themselves (f32), the codes decoded (f16, int8: close enough to pick a list), or for sign
 * bits, which are not, the vectors kept in NAME_vectors when there are. */
static int floats_at(ix_vtab *v, const ix_cache *c, const size_t *pos, size_t n, float *out) {
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        const unsigned char *r = c->records + pos[i] * c->rec;
        float *o = out + i * c->d;
        if (c->storage == EMB_STORAGE_F32) memcpy(o, r, c->d * sizeof *o);
        else if (c->storage == EMB_STORAGE_BIT && v->rescore)
            rc = ix_read_vector_at(v, c->ids[pos[i]], (sqlite3_int64)pos[i], o, NULL);
        else emb_decode(c->storage, r, c->d, o);
    }
    return rc;
}

/* Trains the centroids on `sample` rows drawn without replacement (seeded: a build of the same
 * rows gives the same lists). */
static int train(ix_vtab *v, const ix_cache *c, const build_options *o, size_t lists, emb_ivf *ivf) {
    size_t n = c->n, want = (size_t)o->sample * lists < n ? (size_t)o->sample * lists : n;
    size_t *pos = sqlite3_malloc64(n * sizeof *pos);
    float *x = sqlite3_malloc64(want * c->d * sizeof *x);
    int rc = pos && x ? SQLITE_OK : SQLITE_NOMEM;
    if (rc == SQLITE_OK) {
        uint64_t s = 0x9E3779B97F4A7C15ull ^ n;
        for (size_t i = 0; i < n; i++) pos[i] = i;
        for (size_t i = 0; i < want; i++) { /* a partial Fisher-Yates shuffle */
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            size_t j = i + (size_t)(s % (n - i)), t = pos[i];
            pos[i] = pos[j], pos[j] = t;
        }
        rc = floats_at(v, c, pos, want, x);
    }
    if (rc == SQLITE_OK && emb_ivf_train(ivf, x, want, c->d, c->metric, lists, (int)o->iterations, 42))
        rc = SQLITE_NOMEM;
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

/* The nearest list + 1 of every row of the copy, into list1 (n values). */
static int assign_all(ix_vtab *v, const ix_cache *c, const emb_ivf *ivf, int32_t *list1) {
    size_t ch = c->chunk, n = c->n;
    size_t *pos = sqlite3_malloc64(ch * sizeof *pos);
    float *x = sqlite3_malloc64(ch * c->d * sizeof *x);
    int rc = pos && x ? SQLITE_OK : SQLITE_NOMEM;
    for (size_t at = 0; rc == SQLITE_OK && at < n; at += ch) {
        size_t rows = n - at < ch ? n - at : ch;
        for (size_t i = 0; i < rows; i++) pos[i] = at + i;
        rc = floats_at(v, c, pos, rows, x);
        if (rc == SQLITE_OK && emb_ivf_assign(ivf, x, rows, list1 + at)) rc = SQLITE_NOMEM;
        for (size_t i = 0; rc == SQLITE_OK && i < rows; i++) list1[at + i]++;
    }
    sqlite3_free(pos);
    sqlite3_free(x);
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
    emb_ivf ivf;
    memset(&ivf, 0, sizeof ivf);
    if (n == 0)
        rc = ix_error(v,
                      "build: \"%s\" is empty: insert rows first (rows inserted after a build go "
                      "into their lists at once)",
                      v->name);
    else if (lists > n)
        rc = ix_error(v, "build: %lld lists for %lld rows: a list needs at least one row", (long long)lists,
                      (long long)n);
    if (rc == SQLITE_OK) rc = train(v, c, &o, lists, &ivf);
    if (rc == SQLITE_OK) rc = store_centroids(v, &ivf);
    int32_t *list1 = rc == SQLITE_OK ? sqlite3_malloc64(n * sizeof *list1) : NULL;
    if (rc == SQLITE_OK && !list1) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = assign_all(v, c, &ivf, list1);
    if (rc == SQLITE_OK) rc = store_by_list(v, c, list1, lists);
    sqlite3_free(list1);
    emb_ivf_free(&ivf);
    ix_cache_release(c);
    return rc;
}
