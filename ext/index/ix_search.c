/* embed_index's cursors: a k-nearest-neighbour search (MATCH with k or LIMIT), a scan in
 * rowid order, or a rowid lookup. A search runs over a copy of the chunks (ix_load.c),
 * which the cursor holds while it reads the results: an exact scan of float32 vectors, or a
 * scan of compact codes whose best k x oversample candidates are rescored exactly from the
 * float32 vectors in NAME_vectors; with an IVF, over the rows of the `probes` lists nearest
 * the query only. Reads only: pending rows are placed before xFilter gets here (ix_module.c). */
#include "ix.h"
#include "base/utf8.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    sqlite3_vtab_cursor base;
    int plan;
    /* a search's results, nearest first */
    emb_knn_hit *hits;
    size_t n, at;
    sqlite3_int64 k;
    /* scan and rowid lookup */
    sqlite3_stmt *stmt;
    int eof;
    float *one; /* a vector read without the copy */
    float *vecs; /* a search of compact codes: the hits' float32 vectors, in their order */
    int64_t *part; /* a chunked index: each hit's part id (the hits' ids are rowids) */
    float *score; /* a reranked search: each hit's score */
    ix_part info; /* the part of hit info_at, once read */
    size_t info_at;
    ix_cache *cache;
} ix_cursor;

int ix_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
    (void)vt;
    ix_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->info_at = (size_t)-1;
    *out = &c->base;
    return SQLITE_OK;
}

static void cursor_reset(ix_cursor *c) {
    sqlite3_free(c->hits);
    c->hits = NULL;
    c->n = c->at = 0;
    sqlite3_finalize(c->stmt);
    c->stmt = NULL;
    sqlite3_free(c->one);
    c->one = NULL;
    sqlite3_free(c->vecs);
    c->vecs = NULL;
    sqlite3_free(c->part);
    c->part = NULL;
    sqlite3_free(c->score);
    c->score = NULL;
    c->info_at = (size_t)-1;
    ix_cache_release(c->cache);
    c->cache = NULL;
    c->eof = 1;
}

int ix_close(sqlite3_vtab_cursor *cur) {
    cursor_reset((ix_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* The query vector of a MATCH, decided by type: a BLOB is a vector; text is a vector when it
 * is a JSON array of numbers, else text to embed with the index's model ('[CLS] tokens' and
 * '[1] Introduction' are text). */
static int query_vector(ix_vtab *v, sqlite3_value *val, ext_vec *q, int *is_text) {
    memset(q, 0, sizeof *q);
    *is_text = 0;
    int t = sqlite3_value_type(val);
    if (t == SQLITE_NULL) return ix_error(v, "the query of a search of \"%s\" is NULL", v->name);
    if (t != SQLITE_TEXT) return ix_read_vector(v, val, "the query", q);
    const char *s = (const char *)sqlite3_value_text(val);
    size_t len = (size_t)sqlite3_value_bytes(val);
    if (!s) return SQLITE_NOMEM;
    char *err = NULL;
    size_t i = strspn(s, " \t\n\r");
    if (i < len && s[i] == '[') {
        ext_rc r = ext_value_vector(val, "the query", q, &err);
        if (r == EXT_OK) {
            if (q->n == (size_t)v->dims || !v->model) return ix_check_vector(v, "the query", q);
            ext_vec_free(q); /* numbers, but not this index's vector: perhaps a text */
        }
        if (!v->model) {
            int rc = err ? ix_error(v,
                                    "%s (\"%s\" has no model to embed text, so a query must be a "
                                    "vector)",
                                    err, v->name)
                         : SQLITE_NOMEM;
            sqlite3_free(err);
            return rc;
        }
        sqlite3_free(err);
    }
    if (!v->model)
        return ix_error(v,
                        "\"%s\" has no model (it was created with dims = %d): the query must be a "
                        "vector, not text",
                        v->name, v->dims);
    if (!emb_utf8_valid(s, len, NULL)) return ix_error(v, "the query text is not valid UTF-8");
    float *f = sqlite3_malloc64((size_t)v->dims * sizeof *f);
    if (!f) return SQLITE_NOMEM;
    int rc = ix_embed_texts(v, IX_ROLE_QUERY, &s, &len, 1, f);
    if (rc == SQLITE_OK && v->metric == EMB_METRIC_COSINE && emb_vec_norm2(f, (size_t)v->dims) == 0.0)
        rc = ix_error(v,
                      "the query text \"%.40s\" embeds to a zero vector, which has no direction "
                      "(the index's metric is cosine)",
                      s);
    if (rc != SQLITE_OK) {
        sqlite3_free(f);
        return rc;
    }
    q->v = q->buf = f;
    q->n = (size_t)v->dims;
    *is_text = 1;
    return SQLITE_OK;
}

/* A per-query setting (oversample, probes): a positive integer. */
static int positive_setting(ix_vtab *v, const char *name, sqlite3_value *x, sqlite3_int64 *out) {
    int t = sqlite3_value_type(x);
    double d = sqlite3_value_double(x);
    if (t == SQLITE_INTEGER) *out = sqlite3_value_int64(x);
    else if (t == SQLITE_FLOAT && d == floor(d) && fabs(d) < 9e15) *out = (sqlite3_int64)d;
    else return ix_error(v, "%s must be a positive integer, not %s", name, ext_type_name(t));
    if (*out <= 0) return ix_error(v, "%s must be a positive integer, not %lld", name, *out);
    return SQLITE_OK;
}

/* How many candidates of a scan of compact codes are rescored, per result: enough for
 * recall@10 1.000 on the clustered benchmark data for f16 and int8 at 100k and 1M rows
 * (bench/search.sh); for bit only at 100k (0.55 at 1M): a bit index needs a larger one. */
static size_t default_oversample(emb_storage s) {
    return s == EMB_STORAGE_BIT ? 16 : s == EMB_STORAGE_INT8 ? 4 : 2;
}

/* The k nearest among the m rows at positions rows (NULL: every row) into c->hits / c->n:
 * exact over float32 records; over compact codes, the best k x oversample by the codes, then
 * those rescored exactly. */
static int search_rows(ix_cursor *c, ix_vtab *v, const float *q, size_t k, const size_t *rows, size_t m,
                       size_t oversample) {
    ix_cache *s = c->cache;
    size_t d = s->d, room = k < m ? k : m, nh = 0;
    c->n = 0;
    sqlite3_free(c->vecs); /* a wider search of a chunked index runs again */
    c->vecs = NULL;
    sqlite3_free(c->hits);
    if (!(c->hits = sqlite3_malloc64((room ? room : 1) * sizeof *c->hits))) return SQLITE_NOMEM;
    if (!room) return SQLITE_OK;
    if (s->storage == EMB_STORAGE_F32) {
        emb_knn_index ix = {(const float *)s->records, s->aux, s->ids, s->n, d, s->metric};
        if (emb_knn_search_rows(&ix, q, room, rows, m, &v->scratch, c->hits, &nh)) return SQLITE_NOMEM;
        c->n = nh;
        return SQLITE_OK;
    }
    size_t keep = room > m / oversample ? m : room * oversample;
    size_t *cand = sqlite3_malloc64(keep * sizeof *cand);
    float *vecs = sqlite3_malloc64(keep * d * sizeof *vecs);
    int64_t *ids = sqlite3_malloc64(keep * sizeof *ids);
    emb_code_query cq;
    int rc = cand && vecs && ids ? SQLITE_OK : SQLITE_NOMEM;
    if (rc == SQLITE_OK && emb_code_query_init(&cq, s->storage, s->metric, q, d)) rc = SQLITE_NOMEM;
    size_t nc = 0;
    if (rc == SQLITE_OK) {
        nc = emb_code_candidates(&cq, s->records, s->aux, rows, rows ? m : s->n, keep, 0, &v->cscratch, cand);
        emb_code_query_free(&cq);
        if (nc == (size_t)-1) rc = SQLITE_NOMEM;
    }
    /* the candidates' float32 vectors: kept in NAME_vectors, or without them the codes decoded */
    for (size_t j = 0; rc == SQLITE_OK && j < nc; j++) {
        ids[j] = s->ids[cand[j]];
        if (v->rescore) rc = ix_read_vector_at(v, ids[j], (sqlite3_int64)cand[j], vecs + j * d, NULL);
        else emb_decode(s->storage, s->records + cand[j] * s->rec, d, vecs + j * d);
    }
    if (rc == SQLITE_OK) {
        nh = emb_knn_rescore(s->metric, q, d, vecs, ids, nc, room, c->hits);
        if (nh == (size_t)-1) nh = 0, rc = SQLITE_NOMEM;
        else if (!(c->vecs = sqlite3_malloc64((nh ? nh : 1) * d * sizeof *c->vecs))) rc = SQLITE_NOMEM;
        for (size_t j = 0; rc == SQLITE_OK && j < nh; j++) {
            memcpy(c->vecs + j * d, vecs + c->hits[j].pos * d, d * sizeof *vecs);
            c->hits[j].pos = cand[c->hits[j].pos];
        }
        c->n = rc == SQLITE_OK ? nh : 0;
    }
    sqlite3_free(cand);
    sqlite3_free(vecs);
    sqlite3_free(ids);
    return rc;
}

/* The positions in both sorted lists a (na) and b (nb), into a; returns how many. */
static size_t intersect(size_t *a, size_t na, const size_t *b, size_t nb) {
    size_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) i++;
        else if (a[i] > b[j]) j++;
        else a[n++] = a[i++], j++;
    }
    return n;
}

/* A search through the IVF: the rows of the p lists nearest the query (and rows not yet in a
 * list), among those the filters pass (rows, m; NULL: all). *done 0 when the search should
 * scan the filtered rows instead: every list probed (a scan costs no more), a filter so
 * selective that its rows are fewer than the lists hold, or lists that held fewer than k of
 * its rows. */
static int search_ivf(ix_cursor *c, ix_vtab *v, const float *q, size_t k, const size_t *rows, size_t m,
                      size_t oversample, size_t p, int *done) {
    ix_cache *s = c->cache;
    size_t lists = s->ivf.lists;
    *done = 0;
    if (p >= lists || (rows && m <= s->n / lists * p)) return SQLITE_OK;
    int32_t *pl = sqlite3_malloc64(p * sizeof *pl);
    if (!pl) return SQLITE_NOMEM;
    size_t np = emb_ivf_probe(&s->ivf, q, p, pl), *cand = NULL;
    size_t nc = emb_ivf_groups_collect(&s->ivf_groups, pl, np, &cand);
    sqlite3_free(pl);
    if (nc == (size_t)-1) return SQLITE_NOMEM;
    if (rows) nc = intersect(cand, nc, rows, m);
    int rc = search_rows(c, v, q, k, cand, nc, oversample);
    free(cand);
    *done = rc != SQLITE_OK || c->n >= (k < m ? k : m) || np == lists;
    return rc;
}

/* The search's settings read from xFilter's arguments: k, then from argv[*at] on oversample,
 * probes, rerank and rerank_depth as flags say. */
typedef struct {
    sqlite3_int64 k, oversample, probes, depth;
    const char *rerank;
} knn_settings;

static int read_settings(ix_vtab *v, int flags, sqlite3_value **argv, int *at, knn_settings *o) {
    int rc = SQLITE_OK;
    *o = (knn_settings){.depth = 50};
    if (flags & IX_F_K) {
        if ((rc = positive_setting(v, "k", argv[1], &o->k)) != SQLITE_OK) return rc;
    } else {
        o->k = sqlite3_value_int64(argv[1]);
        if (o->k < 0) o->k = (sqlite3_int64)1 << 62; /* LIMIT -1: no limit */
        if (flags & IX_F_OFFSET) {
            sqlite3_int64 off = sqlite3_value_int64(argv[2]);
            if (off > 0) o->k = o->k > ((sqlite3_int64)1 << 62) - off ? (sqlite3_int64)1 << 62 : o->k + off;
        }
    }
    if ((flags & IX_F_OVERSAMPLE) && (rc = positive_setting(v, "oversample", argv[(*at)++], &o->oversample)))
        return rc;
    if ((flags & IX_F_PROBES) && (rc = positive_setting(v, "probes", argv[(*at)++], &o->probes))) return rc;
    if (flags & IX_F_RERANK) {
        sqlite3_value *x = argv[(*at)++];
        if (sqlite3_value_type(x) != SQLITE_TEXT)
            return ix_error(v, "rerank must be the name of a loaded cross-encoder, not %s",
                            ext_type_name(sqlite3_value_type(x)));
        o->rerank = (const char *)sqlite3_value_text(x);
    }
    if ((flags & IX_F_RERANK_DEPTH) && (rc = positive_setting(v, "rerank_depth", argv[(*at)++], &o->depth)))
        return rc;
    if ((flags & IX_F_RERANK_DEPTH) && !o->rerank)
        return ix_error(v, "rerank_depth needs rerank = 'name of a cross-encoder'");
    if (o->depth > 1 << 20) o->depth = 1 << 20;
    return SQLITE_OK;
}

/* The nearest parts, as many as it takes: k of them for an index without chunks; for a
 * chunked index, enough to hold k distinct rows (and `parts` parts), widening the search until
 * it does or has seen every part the filters pass. */
static int search_parts(ix_cursor *c, ix_vtab *v, const float *q, const knn_settings *o, const size_t *rows,
                        size_t m, size_t parts) {
    size_t k = (size_t)o->k, want = k > parts ? k : parts, over = o->oversample ? (size_t)o->oversample : 0;
    size_t lists = c->cache->ivf_ready ? c->cache->ivf.lists : 0, probes = (size_t)o->probes;
    ix_tuned t = {0};
    int rc = SQLITE_OK;
    if ((lists && !probes) || (!over && c->cache->storage != EMB_STORAGE_F32))
        rc = ix_tuned_settings(v, c->cache, &t);
    if (rc != SQLITE_OK) return rc;
    /* a query's own setting, else the one measured for the target, else the built-in default */
    if (!over)
        over = t.oversample > default_oversample(c->cache->storage) ? t.oversample
                                                                    : default_oversample(c->cache->storage);
    if (over > (size_t)1 << 20) over = (size_t)1 << 20;
    if (lists && !probes) probes = t.exact ? lists : t.probes ? t.probes : emb_ivf_default_probes(lists);
    for (size_t ask = want;;) {
        int done = 0;
        if (lists) rc = search_ivf(c, v, q, ask, rows, m, over, probes, &done);
        if (rc == SQLITE_OK && !done) rc = search_rows(c, v, q, ask, rows, m, over);
        if (rc != SQLITE_OK || !c->cache->rows) return rc;
        size_t prefix, distinct = ix_count_rows(c->cache, c->hits, c->n, k, &prefix);
        if (distinct == (size_t)-1) return SQLITE_NOMEM;
        if ((distinct >= k && c->n >= parts) || c->n < ask || ask >= m) return SQLITE_OK;
        ask = ask > m / 4 ? m : ask * 4;
    }
}

/* A chunked index's hits carry rowids from here on, their part ids kept in c->part. */
static int hits_to_rows(ix_cursor *c) {
    if (!c->cache->rows || !c->n) return SQLITE_OK;
    if (!(c->part = sqlite3_malloc64(c->n * sizeof *c->part))) return SQLITE_NOMEM;
    for (size_t i = 0; i < c->n; i++) {
        c->part[i] = c->hits[i].id;
        c->hits[i].id = c->cache->rows[c->hits[i].pos];
    }
    return SQLITE_OK;
}

/* The results from the parts found: each row at its nearest part, k of them; reranked, the
 * candidates' rows at their best-scored part, in the order of the scores. */
static int finish_hits(ix_cursor *c, ix_vtab *v, const knn_settings *o, sqlite3_value *query) {
    size_t k = (size_t)o->k;
    if (o->rerank) {
        size_t prefix, distinct = ix_count_rows(c->cache, c->hits, c->n, k, &prefix);
        if (distinct == (size_t)-1) return SQLITE_NOMEM;
        size_t n = (size_t)o->depth > prefix ? (size_t)o->depth : prefix;
        if (n > c->n) n = c->n;
        int rc = ix_rerank(v, o->rerank, (const char *)sqlite3_value_text(query),
                           (size_t)sqlite3_value_bytes(query), c->cache, c->hits, c->vecs, &n, k, &c->score);
        c->n = rc == SQLITE_OK ? n : 0;
        return rc == SQLITE_OK ? hits_to_rows(c) : rc;
    }
    size_t n = ix_group_hits(c->cache, c->hits, c->vecs, c->n);
    if (n == (size_t)-1) return SQLITE_NOMEM;
    c->n = n < k ? n : k;
    return hits_to_rows(c);
}

static int filter_knn(ix_cursor *c, ix_vtab *v, int flags, const char *idx_str, sqlite3_value **argv) {
    if (flags & IX_F_NEED_K)
        return ix_error(v,
                        "a search of \"%s\" needs k: WHERE \"%s\" MATCH :query AND k = 10 "
                        "(LIMIT 10 works too from SQLite 3.41)",
                        v->name, v->name);
    int at = (flags & IX_F_OFFSET) ? 3 : 2, is_text = 0;
    knn_settings o;
    int rc = read_settings(v, flags, argv, &at, &o);
    if (rc != SQLITE_OK) return rc;
    c->k = o.k;
    ext_vec q;
    rc = query_vector(v, argv[0], &q, &is_text);
    if (rc == SQLITE_OK && o.rerank && !is_text)
        rc = ix_error(v, "rerank scores the candidates against the query's text: the query must be text, "
                         "not a vector");
    if (rc == SQLITE_OK) rc = ix_snapshot(v, &c->cache);
    if (rc != SQLITE_OK) {
        ext_vec_free(&q);
        return rc;
    }
    ix_filters f;
    size_t *rows = NULL, m = c->cache->n;
    rc = ix_read_filters(v, idx_str, argv + at, &f);
    if (rc == SQLITE_OK && f.n) rc = ix_filter_rows(v, c->cache, &f, &rows, &m);
    if (rc == SQLITE_OK) rc = search_parts(c, v, q.v, &o, rows, m, o.rerank ? (size_t)o.depth : 0);
    if (rc == SQLITE_OK) rc = finish_hits(c, v, &o, argv[0]);
    ix_filters_free(&f);
    sqlite3_free(rows);
    ext_vec_free(&q);
    if (rc != SQLITE_OK) return rc;
    c->eof = c->n == 0;
    return SQLITE_OK;
}

static int scan_step(ix_cursor *c) {
    int rc = sqlite3_step(c->stmt);
    if (rc == SQLITE_ROW) return SQLITE_OK;
    c->eof = 1;
    return rc == SQLITE_DONE ? SQLITE_OK : ix_sql_error((ix_vtab *)c->base.pVtab, rc);
}

int ix_search_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, sqlite3_value **argv) {
    ix_cursor *c = (ix_cursor *)cur;
    ix_vtab *v = (ix_vtab *)cur->pVtab;
    cursor_reset(c);
    c->plan = idx_num & IX_PLAN_MASK;
    if (c->plan == IX_PLAN_KNN) return filter_knn(c, v, idx_num, idx_str, argv);
    int rc = SQLITE_OK;
    /* a scan reading every float32 vector reads them from a copy, not chunk by chunk */
    if ((idx_num & IX_F_VECTOR) && c->plan == IX_PLAN_SCAN && v->storage == EMB_STORAGE_F32 && !v->chunk_tokens)
        rc = ix_snapshot(v, &c->cache);
    if (rc == SQLITE_OK) rc = ix_prepare(v, c->plan == IX_PLAN_ROWID ? IX_STMT_LOOKUP : IX_STMT_SCAN, &c->stmt);
    if (rc != SQLITE_OK) return rc;
    if (c->plan == IX_PLAN_ROWID) {
        if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER && sqlite3_value_numeric_type(argv[0]) != SQLITE_INTEGER)
            return SQLITE_OK; /* no integer rowid equals it: no rows */
        sqlite3_bind_value(c->stmt, 1, argv[0]);
    }
    c->eof = 0;
    return scan_step(c);
}

int ix_next(sqlite3_vtab_cursor *cur) {
    ix_cursor *c = (ix_cursor *)cur;
    if (c->plan == IX_PLAN_KNN) {
        if (++c->at >= c->n) c->eof = 1;
        return SQLITE_OK;
    }
    return scan_step(c);
}

int ix_eof(sqlite3_vtab_cursor *cur) { return ((ix_cursor *)cur)->eof; }

int ix_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
    ix_cursor *c = (ix_cursor *)cur;
    *out = c->plan == IX_PLAN_KNN ? c->hits[c->at].id : sqlite3_column_int64(c->stmt, 0);
    return SQLITE_OK;
}

/* The stored vector of the current row of a scan or lookup. */
static const float *scan_vector(ix_cursor *c, ix_vtab *v, int *rc) {
    *rc = SQLITE_OK;
    /* pending: no vector yet; a chunked row has one per chunk, which only a search picks from */
    if (sqlite3_column_type(c->stmt, 1) != SQLITE_INTEGER || v->chunk_tokens) return NULL;
    sqlite3_int64 loc = sqlite3_column_int64(c->stmt, 1);
    if (c->cache)
        return loc >= 0 && (size_t)loc < c->cache->n ? (const float *)c->cache->records + loc * v->dims : NULL;
    if (!c->one && !(c->one = sqlite3_malloc64((size_t)v->dims * sizeof(float)))) {
        *rc = SQLITE_NOMEM;
        return NULL;
    }
    *rc = ix_read_vector_at(v, sqlite3_column_int64(c->stmt, 0), loc, c->one, NULL);
    return *rc == SQLITE_OK ? c->one : NULL;
}

int ix_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    ix_cursor *c = (ix_cursor *)cur;
    ix_vtab *v = (ix_vtab *)cur->pVtab;
    int knn_row = c->plan == IX_PLAN_KNN;
    switch (col) {
    case IX_COL_VECTOR: {
        if (sqlite3_vtab_nochange(ctx)) return SQLITE_OK; /* an UPDATE that leaves it alone */
        int rc = SQLITE_OK;
        const float *f = !knn_row  ? scan_vector(c, v, &rc)
                         : c->vecs ? c->vecs + c->at * (size_t)v->dims
                                   : (const float *)c->cache->records + c->hits[c->at].pos * (size_t)v->dims;
        if (rc != SQLITE_OK) return rc;
        if (f) ext_result_vector(ctx, f, (size_t)v->dims);
        return SQLITE_OK;
    }
    case IX_COL_TEXT:
        if (!knn_row) {
            sqlite3_result_value(ctx, sqlite3_column_value(c->stmt, 2));
        } else {
            int rc;
            sqlite3_stmt *s = ix_stmt(v, IX_STMT_TEXT, &rc);
            if (!s) return rc;
            sqlite3_bind_int64(s, 1, c->hits[c->at].id);
            if (sqlite3_step(s) == SQLITE_ROW) sqlite3_result_value(ctx, sqlite3_column_value(s, 0));
            sqlite3_reset(s);
        }
        return SQLITE_OK;
    case IX_COL_DISTANCE:
        if (knn_row) sqlite3_result_double(ctx, c->hits[c->at].dist);
        return SQLITE_OK;
    case IX_COL_K:
        if (knn_row) sqlite3_result_int64(ctx, c->k);
        return SQLITE_OK;
    case IX_COL_CHUNK:
    case IX_COL_CHUNK_START:
    case IX_COL_CHUNK_END: {
        if (!knn_row || !c->part) return SQLITE_OK; /* NULL: a row of a scan, or of an index without chunks */
        int rc = c->info_at == c->at ? SQLITE_OK : ix_part_info(v, c->part[c->at], c->hits[c->at].id, &c->info);
        if (rc != SQLITE_OK) return rc;
        c->info_at = c->at;
        sqlite3_result_int64(ctx, col == IX_COL_CHUNK         ? c->info.chunk
                                  : col == IX_COL_CHUNK_START ? c->info.start
                                                              : c->info.end);
        return SQLITE_OK;
    }
    case IX_COL_RERANK_SCORE:
        if (knn_row && c->score) sqlite3_result_double(ctx, c->score[c->at]);
        return SQLITE_OK;
    case IX_COL_OVERSAMPLE:
    case IX_COL_PROBES:
    case IX_COL_RERANK:
    case IX_COL_RERANK_DEPTH:
    case IX_COL_TABLE: return SQLITE_OK;
    default: /* a metadata column: from the copy for a search's rows, from NAME_rows otherwise */
        if (!knn_row) {
            sqlite3_result_value(ctx, sqlite3_column_value(c->stmt, 3 + col - IX_COL_META));
        } else {
            emb_value x = emb_meta_column_get(&c->cache->meta[col - IX_COL_META], c->hits[c->at].pos);
            switch (x.type) {
            case EMB_INT: sqlite3_result_int64(ctx, x.i); break;
            case EMB_REAL: sqlite3_result_double(ctx, x.r); break;
            case EMB_TEXT: sqlite3_result_text(ctx, x.p, (int)x.n, SQLITE_TRANSIENT); break;
            case EMB_BLOB: sqlite3_result_blob(ctx, x.p, (int)x.n, SQLITE_TRANSIENT); break;
            default: break;
            }
        }
        return SQLITE_OK;
    }
}
