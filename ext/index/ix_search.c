/* embed_index's cursors: a k-nearest-neighbour search (MATCH with k or LIMIT), a scan in
 * rowid order, or a rowid lookup. A search runs over a copy of the chunks (ext_index_load.c),
 * which the cursor holds while it reads the results: an exact scan of float32 vectors, or a
 * scan of compact codes whose best k x oversample candidates are rescored exactly from the
 * float32 vectors in NAME_vectors; with an IVF, over the rows of the `probes` lists nearest
 * the query only. Reads only: pending rows are placed before xFilter gets here (ext_index.c). */
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
    ix_cache *cache;
} ix_cursor;

int ix_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
    (void)vt;
    ix_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
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
static int query_vector(ix_vtab *v, sqlite3_value *val, ext_vec *q) {
    memset(q, 0, sizeof *q);
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
    int rc = ix_embed_texts(v, &s, &len, 1, f);
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
    return SQLITE_OK;
}

/* ---------- filters: conditions on metadata and rowids, applied before the top k ---------- */

/* A condition's value as the column compares it: SQLite applies the column's affinity to a
 * constant compared with it (numeric for integer, real and the rowid; text for text). */
static emb_value filter_value(ix_vtab *v, int col, sqlite3_value *x) {
    emb_value e = {.type = EMB_NULL};
    int numeric = col < 0 || v->meta[col].type == IX_META_INTEGER || v->meta[col].type == IX_META_REAL;
    int t = sqlite3_value_type(x);
    if (numeric && t == SQLITE_TEXT) t = sqlite3_value_numeric_type(x);
    if (col >= 0 && v->meta[col].type == IX_META_TEXT && (t == SQLITE_INTEGER || t == SQLITE_FLOAT))
        t = SQLITE_TEXT;
    switch (t) {
    case SQLITE_INTEGER: e.type = EMB_INT, e.i = sqlite3_value_int64(x); break;
    case SQLITE_FLOAT: e.type = EMB_REAL, e.r = sqlite3_value_double(x); break;
    case SQLITE_TEXT:
        e.type = EMB_TEXT;
        e.p = sqlite3_value_text(x);
        e.n = (size_t)sqlite3_value_bytes(x);
        break;
    case SQLITE_BLOB:
        e.type = EMB_BLOB;
        e.p = sqlite3_value_blob(x);
        e.n = (size_t)sqlite3_value_bytes(x);
        break;
    default: break;
    }
    return e;
}

typedef struct {
    emb_pred pred[2 * (IX_MAX_META + 1) + 8];
    emb_value *lists[2 * (IX_MAX_META + 1) + 8]; /* the IN lists, owned */
    int n;
} filter_set;

static void filters_free(filter_set *f) {
    for (int i = 0; i < f->n; i++) {
        for (size_t j = 0; f->lists[i] && j < f->pred[i].n_list; j++)
            if (f->lists[i][j].type == EMB_TEXT || f->lists[i][j].type == EMB_BLOB)
                sqlite3_free((void *)f->lists[i][j].p);
        sqlite3_free(f->lists[i]);
    }
    f->n = 0;
}

/* The conditions xBestIndex passed (idx_str: "col,op;" each, col -1 for the rowid), whose
 * values are argv[0 ..]. */
static int read_filters(ix_vtab *v, const char *idx_str, sqlite3_value **argv, filter_set *f) {
    f->n = 0;
    for (const char *p = idx_str; p && *p && f->n < (int)(sizeof f->pred / sizeof *f->pred);) {
        char *end;
        int col = (int)strtol(p, &end, 10), op = (int)strtol(end + 1, &end, 10);
        p = *end == ';' ? end + 1 : end;
        emb_pred *pr = &f->pred[f->n];
        sqlite3_value *x = argv[f->n];
        f->lists[f->n] = NULL;
        *pr = (emb_pred){.col = col, .op = (emb_op)op};
        if (op == EMB_OP_IN) {
            sqlite3_value *e;
            size_t n = 0, cap = 0;
            int rc;
            for (rc = sqlite3_vtab_in_first(x, &e); rc == SQLITE_OK && e; rc = sqlite3_vtab_in_next(x, &e)) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    emb_value *grown = sqlite3_realloc64(f->lists[f->n], cap * sizeof *grown);
                    if (!grown) {
                        rc = SQLITE_NOMEM;
                        break;
                    }
                    f->lists[f->n] = grown;
                }
                emb_value x = filter_value(v, col, e);
                if (x.type == EMB_TEXT || x.type == EMB_BLOB) { /* e is reused by the next value */
                    void *copy = sqlite3_malloc64(x.n + 1);
                    if (!copy) {
                        rc = SQLITE_NOMEM;
                        break;
                    }
                    if (x.n) memcpy(copy, x.p, x.n);
                    x.p = copy;
                }
                f->lists[f->n][n++] = x;
                pr->n_list = n;
            }
            f->n++;
            if (rc != SQLITE_DONE && rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : ix_sql_error(v, rc);
            pr->list = f->lists[f->n - 1];
            pr->n_list = n;
        } else {
            if (op != EMB_OP_ISNULL && op != EMB_OP_NOTNULL) pr->value = filter_value(v, col, x);
            f->n++;
        }
    }
    return SQLITE_OK;
}

static int by_position(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The positions that satisfy every condition, into *rows (sqlite3_malloc'd) and *m. A condition
 * = or IN on the partition key takes its rows from the groups, without a pass over the others. */
static int filter_rows(ix_vtab *v, ix_cache *c, const filter_set *f, size_t **rows, size_t *m) {
    const emb_pred *part = NULL;
    for (int i = 0; i < f->n && !part; i++)
        if (f->pred[i].col >= 0 && f->pred[i].col == v->partition &&
            (f->pred[i].op == EMB_OP_EQ || f->pred[i].op == EMB_OP_IN))
            part = &f->pred[i];
    size_t n = c->n, *cand = NULL, nc = 0;
    if (part) { /* the copy's groups are made with its rows (ix_refresh) */
        const emb_value *vals = part->op == EMB_OP_IN ? part->list : &part->value;
        size_t nv = part->op == EMB_OP_IN ? part->n_list : 1, total = 0;
        size_t *span = sqlite3_malloc64(2 * (nv ? nv : 1) * sizeof *span); /* each value's first, count */
        if (!span) return SQLITE_NOMEM;
        for (size_t i = 0; i < nv; i++)
            total += span[2 * i + 1] =
                emb_meta_groups_find(&c->groups, &c->meta[v->partition], &vals[i], &span[2 * i]);
        if (!(cand = sqlite3_malloc64((total ? total : 1) * sizeof *cand))) {
            sqlite3_free(span);
            return SQLITE_NOMEM;
        }
        for (size_t i = 0; i < nv; i++) {
            memcpy(cand + nc, c->groups.order + span[2 * i], span[2 * i + 1] * sizeof *cand);
            nc += span[2 * i + 1];
        }
        sqlite3_free(span);
        qsort(cand, nc, sizeof *cand, by_position); /* an IN list may repeat a value */
        size_t u = 0;
        for (size_t i = 0; i < nc; i++)
            if (!u || cand[u - 1] != cand[i]) cand[u++] = cand[i];
        nc = u;
    }
    *rows = sqlite3_malloc64(((part ? nc : n) + 1) * sizeof **rows);
    if (!*rows) {
        sqlite3_free(cand);
        return SQLITE_NOMEM;
    }
    *m = emb_meta_filter(c->meta, c->ids, n, f->pred, (size_t)f->n, part ? cand : NULL, nc, *rows);
    sqlite3_free(cand);
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

/* A search through the IVF: the rows of the `probes` lists nearest the query (and rows not
 * yet in a list), among those the filters pass (rows, m; NULL: all). *done 0 when the search
 * should scan the filtered rows instead: a filter so selective that its rows are fewer than
 * the lists hold, or lists that held fewer than k of its rows. */
static int search_ivf(ix_cursor *c, ix_vtab *v, const float *q, size_t k, const size_t *rows, size_t m,
                      size_t oversample, sqlite3_int64 probes, int *done) {
    ix_cache *s = c->cache;
    size_t lists = s->ivf.lists;
    size_t p = probes ? ((size_t)probes < lists ? (size_t)probes : lists) : emb_ivf_default_probes(lists);
    *done = 0;
    if (rows && m <= s->n / lists * p) return SQLITE_OK;
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

static int filter_knn(ix_cursor *c, ix_vtab *v, int flags, const char *idx_str, sqlite3_value **argv) {
    sqlite3_int64 k, oversample = 0, probes = 0;
    if (flags & IX_F_NEED_K)
        return ix_error(v,
                        "a search of \"%s\" needs k: WHERE \"%s\" MATCH :query AND k = 10 "
                        "(LIMIT 10 works too from SQLite 3.41)",
                        v->name, v->name);
    int at = (flags & IX_F_OFFSET) ? 3 : 2, rc = SQLITE_OK;
    if (flags & IX_F_K) {
        if ((rc = positive_setting(v, "k", argv[1], &k)) != SQLITE_OK) return rc;
    } else {
        k = sqlite3_value_int64(argv[1]);
        if (k < 0) k = (sqlite3_int64)1 << 62; /* LIMIT -1: no limit */
        if (flags & IX_F_OFFSET) {
            sqlite3_int64 off = sqlite3_value_int64(argv[2]);
            if (off > 0) k = k > ((sqlite3_int64)1 << 62) - off ? (sqlite3_int64)1 << 62 : k + off;
        }
    }
    if ((flags & IX_F_OVERSAMPLE) &&
        (rc = positive_setting(v, "oversample", argv[at++], &oversample)) != SQLITE_OK)
        return rc;
    if ((flags & IX_F_PROBES) && (rc = positive_setting(v, "probes", argv[at++], &probes)) != SQLITE_OK) return rc;
    c->k = k;
    ext_vec q;
    rc = query_vector(v, argv[0], &q);
    if (rc == SQLITE_OK) rc = ix_snapshot(v, &c->cache);
    if (rc != SQLITE_OK) {
        ext_vec_free(&q);
        return rc;
    }
    filter_set f;
    size_t *rows = NULL, m = c->cache->n;
    rc = read_filters(v, idx_str, argv + at, &f);
    if (rc == SQLITE_OK && f.n) rc = filter_rows(v, c->cache, &f, &rows, &m);
    size_t over = oversample ? (size_t)oversample : default_oversample(c->cache->storage);
    if (over > (size_t)1 << 20) over = (size_t)1 << 20;
    int done = 0;
    if (rc == SQLITE_OK && c->cache->ivf_ready)
        rc = search_ivf(c, v, q.v, (size_t)k, rows, m, over, probes, &done);
    if (rc == SQLITE_OK && !done) rc = search_rows(c, v, q.v, (size_t)k, rows, m, over);
    filters_free(&f);
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
    if ((idx_num & IX_F_VECTOR) && c->plan == IX_PLAN_SCAN && v->storage == EMB_STORAGE_F32)
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
    if (sqlite3_column_type(c->stmt, 1) != SQLITE_INTEGER) return NULL; /* pending: no vector yet */
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
    case IX_COL_OVERSAMPLE:
    case IX_COL_PROBES:
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
