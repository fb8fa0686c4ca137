/* embed_index: a virtual table that stores vectors (given, or embedded from text with a
 * model) in shadow tables of the database file and answers exact k-nearest-neighbour
 * queries:
 *
 *   CREATE VIRTUAL TABLE notes_idx USING embed_index(model = 'minilm', metric = 'cosine');
 *   INSERT INTO notes_idx(rowid, text) SELECT id, body FROM notes;
 *   SELECT rowid, distance FROM notes_idx WHERE notes_idx MATCH :q AND k = 10;
 *
 * Storage (NAME is the table's name, every identifier quoted when it reaches SQL):
 *   NAME_config  (key PRIMARY KEY, value)   dims, metric, model, fingerprint, chunk_size,
 *                                           count (vectors in chunks), version (bumped by
 *                                           every committed write: other connections'
 *                                           caches compare it)
 *   NAME_rows    (id INTEGER PRIMARY KEY, loc, text)   loc = position in the chunk array
 *                                           (chunk_id * chunk_size + slot); NULL while pending
 *   NAME_chunks  (chunk_id INTEGER PRIMARY KEY, rowids BLOB, vectors BLOB)
 *                                           chunk_size int64 rowids and chunk_size * dims
 *                                           float32 values, preallocated and written in
 *                                           place with incremental blob I/O. Chunks are
 *                                           dense: a delete moves the last vector into the
 *                                           hole, so positions 0 .. count-1 are all in use.
 *   NAME_pending (id INTEGER PRIMARY KEY, vector BLOB)  rows inserted but not yet placed in
 *                                           chunks; vector NULL means "embed the row's text".
 *
 * Inserts go to NAME_pending and are placed in chunks in batches: when the pending rows
 * reach FLUSH_ROWS, before any query of the index, and at xSync (as FTS5 flushes its
 * pending terms). Pending texts are embedded together, so the model sorts them by length
 * and runs full batches. Everything pending is in ordinary tables, so SQLite's journal
 * rolls it back with the rest of the transaction; the in-memory state is only a hint
 * (pending), a flag (dirty) and a cache that any write or rollback drops.
 *
 * Each connection keeps one contiguous copy of the index's vectors (with inverse norms
 * for cosine, squared norms for l2), loaded once and kept while NAME_config's version is
 * unchanged. A query is one sgemv over that array, a top-k selection on the scores, and
 * an exact double-precision rescoring of the candidates (so `distance` equals
 * embed_distance() of the same two vectors). */
#include "ext_functions.h"
#include "ext_registry.h"
#include "vec.h"
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FN "embed_index"
#define DEFAULT_CHUNK 1024
#define FLUSH_ROWS 1024
#define FLUSH_BYTES (16 << 20)
#define MAX_DIMS 65536
#define MAX_CHUNK_BYTES (64 << 20)

enum { COL_VECTOR, COL_TEXT, COL_DISTANCE, COL_K, COL_TABLE };
enum { PLAN_SCAN = 0, PLAN_KNN = 1, PLAN_ROWID = 2, PLAN_MASK = 3 };
enum { F_K = 4, F_LIMIT = 8, F_OFFSET = 16, F_VECTOR = 32, F_NEED_K = 64 };

enum {
    ST_INSERT_ROW, ST_INSERT_PENDING, ST_GET_ROW, ST_DELETE_ROW, ST_DELETE_PENDING_ROW,
    ST_GET_PENDING, ST_SET_LOC, ST_READ_PENDING, ST_CLEAR_PENDING, ST_GET_CONFIG, ST_SET_CONFIG,
    ST_BUMP_VERSION, ST_NEW_CHUNK, ST_DELETE_CHUNK, ST_TEXT, ST_COUNT
};

/* One connection's copy of the index, shared by the cursors that use it. */
typedef struct {
    int refs;
    sqlite3_int64 version;
    size_t n, d, cap;      /* vectors, dimensions, room allocated (vectors) */
    float *vecs;           /* n x d */
    sqlite3_int64 *rowids; /* n */
    float *aux;            /* cosine: 1/|v|; l2: |v|^2; else NULL */
} idx_cache;

typedef struct {
    sqlite3_vtab base;
    sqlite3 *db;
    char *schema, *name;
    char *model; /* NULL: vectors only */
    char fingerprint[17];
    int dims, chunk;
    emb_metric metric;
    int dirty;            /* written since the last commit: bump the version at xSync */
    int pending;          /* rows possibly pending (a hint: 0 means certainly none) */
    size_t pending_bytes;
    idx_cache *cache;
    float *score;         /* a query's scores, kept between queries (n floats) */
    size_t score_cap;
    sqlite3_stmt *st[ST_COUNT];
} idx_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    int plan;
    /* KNN results */
    size_t n, at;
    sqlite3_int64 *ids, *locs, k;
    double *dist;
    /* scan and rowid lookup */
    sqlite3_stmt *stmt;
    int eof;
    float *one; /* a vector read without the cache */
    idx_cache *cache;
} idx_cursor;

/* ---------- small helpers ---------- */

static int vt_error(idx_vtab *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    sqlite3_free(v->base.zErrMsg);
    v->base.zErrMsg = msg ? sqlite3_mprintf(FN ": %s", msg) : NULL;
    sqlite3_free(msg);
    return msg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* An error from nested SQL on the shadow tables. */
static int sql_error(idx_vtab *v, int rc) {
    if (rc == SQLITE_NOMEM) return rc;
    vt_error(v, "\"%s\": %s", v->name, sqlite3_errmsg(v->db));
    return rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_ERROR : rc;
}

/* Room for the cache's vectors: 64-byte aligned, and for large arrays 2 MB aligned with
 * transparent huge pages asked for, so that filling 150 MB takes ~75 page faults, not 37,500,
 * and a scan misses the TLB less. Freed with free(). */
static float *vectors_alloc(size_t count) {
    size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
    if (bytes < ((size_t)4 << 20)) return aligned_alloc(64, bytes ? bytes : 64);
    const size_t huge = (size_t)2 << 20;
    bytes = (bytes + huge - 1) / huge * huge;
    float *p = aligned_alloc(huge, bytes);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static void cache_release(idx_cache *c) {
    if (!c || --c->refs > 0) return;
    free(c->vecs);
    free(c->rowids);
    free(c->aux);
    sqlite3_free(c);
}

static void drop_cache(idx_vtab *v) {
    cache_release(v->cache);
    v->cache = NULL;
}

static float cache_aux(emb_metric m, const float *x, size_t d) {
    double s2 = emb_vec_norm2(x, d);
    return m == EMB_METRIC_COSINE ? (float)(1.0 / sqrt(s2)) : (float)s2;
}

/* The connection's own writes keep its cache in step when the cache holds exactly the `count`
 * vectors of the chunks and no cursor shares it; otherwise the cache is dropped and the next
 * query reloads it. (Rollbacks drop it too: xRollback, xRollbackTo.) */
static int current_version(idx_vtab *v, sqlite3_int64 *ver);
static idx_cache *cache_for_write(idx_vtab *v, sqlite3_int64 count) {
    sqlite3_int64 ver;
    /* another connection may have committed since the cache was filled: inside this write
     * transaction the stored version is the last committed one */
    if (v->cache && (v->cache->refs != 1 || v->cache->n != (size_t)count ||
                     current_version(v, &ver) != SQLITE_OK || ver != v->cache->version))
        drop_cache(v);
    return v->cache;
}

static int cache_append(idx_vtab *v, sqlite3_int64 count, const sqlite3_int64 *ids, const float *vecs,
                        size_t n) {
    idx_cache *c = cache_for_write(v, count);
    if (!c) return 0;
    size_t d = c->d;
    if (c->n + n > c->cap) {
        size_t cap = c->cap + c->cap / 2 > c->n + n ? c->cap + c->cap / 2 : c->n + n + 1024;
        float *nv = vectors_alloc(cap * d);
        sqlite3_int64 *nr = realloc(c->rowids, cap * sizeof *nr);
        if (nr) c->rowids = nr;
        float *na = c->aux ? realloc(c->aux, cap * sizeof *na) : NULL;
        if (na) c->aux = na;
        if (!nv || !nr || (c->aux && !na)) {
            free(nv);
            drop_cache(v);
            return 0;
        }
        memcpy(nv, c->vecs, c->n * d * sizeof(float));
        free(c->vecs);
        c->vecs = nv;
        c->cap = cap;
    }
    memcpy(c->vecs + c->n * d, vecs, n * d * sizeof(float));
    memcpy(c->rowids + c->n, ids, n * sizeof *ids);
    for (size_t i = 0; c->aux && i < n; i++) c->aux[c->n + i] = cache_aux(v->metric, vecs + i * d, d);
    c->n += n;
    return 0;
}

/* Mirrors a delete: the last vector moves to position loc. */
static void cache_remove(idx_vtab *v, sqlite3_int64 count, sqlite3_int64 loc) {
    idx_cache *c = cache_for_write(v, count);
    if (!c) return;
    size_t last = c->n - 1, d = c->d;
    if ((size_t)loc != last) {
        memcpy(c->vecs + (size_t)loc * d, c->vecs + last * d, d * sizeof(float));
        c->rowids[loc] = c->rowids[last];
        if (c->aux) c->aux[loc] = c->aux[last];
    }
    c->n--;
}

static const char *const stmt_sql[ST_COUNT] = {
    [ST_INSERT_ROW] = "INSERT INTO \"%w\".\"%w_rows\"(id, loc, text) VALUES (?1, NULL, ?2)",
    [ST_INSERT_PENDING] = "INSERT INTO \"%w\".\"%w_pending\"(id, vector) VALUES (?1, ?2)",
    [ST_GET_ROW] = "SELECT loc, text FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [ST_DELETE_ROW] = "DELETE FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [ST_DELETE_PENDING_ROW] = "DELETE FROM \"%w\".\"%w_pending\" WHERE id = ?1",
    [ST_GET_PENDING] = "SELECT vector FROM \"%w\".\"%w_pending\" WHERE id = ?1",
    [ST_SET_LOC] = "UPDATE \"%w\".\"%w_rows\" SET loc = ?2 WHERE id = ?1",
    [ST_READ_PENDING] = "SELECT p.id, p.vector, r.text FROM \"%w\".\"%w_pending\" AS p"
                        " JOIN \"%w\".\"%w_rows\" AS r ON r.id = p.id ORDER BY p.id",
    [ST_CLEAR_PENDING] = "DELETE FROM \"%w\".\"%w_pending\"",
    [ST_GET_CONFIG] = "SELECT value FROM \"%w\".\"%w_config\" WHERE key = ?1",
    [ST_SET_CONFIG] = "INSERT OR REPLACE INTO \"%w\".\"%w_config\"(key, value) VALUES (?1, ?2)",
    [ST_BUMP_VERSION] = "UPDATE \"%w\".\"%w_config\" SET value = value + 1 WHERE key = 'version'",
    [ST_NEW_CHUNK] = "INSERT INTO \"%w\".\"%w_chunks\"(chunk_id, rowids, vectors)"
                     " VALUES (?1, zeroblob(?2), zeroblob(?3))",
    [ST_DELETE_CHUNK] = "DELETE FROM \"%w\".\"%w_chunks\" WHERE chunk_id = ?1",
    [ST_TEXT] = "SELECT text FROM \"%w\".\"%w_rows\" WHERE id = ?1",
};

/* A prepared statement on the shadow tables, made on first use; reset by the caller. */
static sqlite3_stmt *stmt(idx_vtab *v, int id, int *rc) {
    if (v->st[id]) return v->st[id];
    char *sql = id == ST_READ_PENDING
                    ? sqlite3_mprintf(stmt_sql[id], v->schema, v->name, v->schema, v->name)
                    : sqlite3_mprintf(stmt_sql[id], v->schema, v->name);
    if (!sql) {
        *rc = SQLITE_NOMEM;
        return NULL;
    }
    *rc = sqlite3_prepare_v3(v->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &v->st[id], NULL);
    sqlite3_free(sql);
    if (*rc != SQLITE_OK) {
        sql_error(v, *rc);
        return NULL;
    }
    return v->st[id];
}

/* Runs a statement that returns no rows, then resets it. */
static int run(idx_vtab *v, sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) return SQLITE_OK;
    return sql_error(v, rc);
}

static int get_config_int(idx_vtab *v, const char *key, sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = stmt(v, ST_GET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER) {
        *out = sqlite3_column_int64(s, 0);
        sqlite3_reset(s);
        return SQLITE_OK;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sql_error(v, rc);
    vt_error(v, "shadow table \"%s_config\" lacks '%s': the index is corrupt", v->name, key);
    return SQLITE_CORRUPT_VTAB;
}

static int set_config_int(idx_vtab *v, const char *key, sqlite3_int64 value) {
    int rc;
    sqlite3_stmt *s = stmt(v, ST_SET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, value);
    return run(v, s);
}

/* Incremental blob I/O on one chunk's column ("rowids" or "vectors"). */
static int chunk_io(idx_vtab *v, sqlite3_int64 chunk, const char *col, void *buf, size_t bytes,
                    size_t offset, int write) {
    char *table = sqlite3_mprintf("%s_chunks", v->name);
    if (!table) return SQLITE_NOMEM;
    sqlite3_blob *b = NULL;
    int rc = sqlite3_blob_open(v->db, v->schema, table, col, chunk, write, &b);
    sqlite3_free(table);
    if (rc == SQLITE_OK)
        rc = write ? sqlite3_blob_write(b, buf, (int)bytes, (int)offset)
                   : sqlite3_blob_read(b, buf, (int)bytes, (int)offset);
    if (rc != SQLITE_OK) sql_error(v, rc);
    sqlite3_blob_close(b);
    return rc;
}

static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned min;
        if (c < 0x80) { i++; continue; }
        if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; c &= 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; c &= 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; c &= 0x07; }
        else return 0;
        if (i + len > n) return 0;
        for (size_t j = 1; j < len; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            c = (c << 6) | (s[i + j] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

/* Reads a vector value (float32 BLOB or JSON text) of the index's dimension into a
 * sqlite3_malloc'd array. `what` names it in errors. */
static int read_vector(idx_vtab *v, sqlite3_value *val, const char *what, float **out) {
    *out = NULL;
    size_t n = 0;
    float *f = NULL;
    int t = sqlite3_value_type(val);
    if (t == SQLITE_BLOB) {
        int bytes = sqlite3_value_bytes(val);
        if (bytes % 4)
            return vt_error(v, "%s is a blob of %d bytes, not a float32 vector (length must be a "
                               "multiple of 4)", what, bytes);
        n = (size_t)bytes / 4;
        f = sqlite3_malloc64(bytes ? (size_t)bytes : 4);
        if (!f) return SQLITE_NOMEM;
        if (bytes) memcpy(f, sqlite3_value_blob(val), (size_t)bytes);
        for (size_t i = 0; i < n; i++)
            if (!isfinite(f[i])) {
                sqlite3_free(f);
                return vt_error(v, "%s has a non-finite value at index %lld", what, (long long)i);
            }
    } else if (t == SQLITE_TEXT) {
        char *err = NULL;
        if (ext_parse_json_vector((const char *)sqlite3_value_text(val), sqlite3_value_bytes(val),
                                  &f, &n, &err)) {
            if (!err) return SQLITE_NOMEM;
            vt_error(v, "%s: %s", what, err);
            sqlite3_free(err);
            return SQLITE_ERROR;
        }
    } else {
        return vt_error(v, "%s must be a vector (float32 blob or JSON array), not %s", what,
                        ext_type_name(t));
    }
    if (n != (size_t)v->dims) {
        sqlite3_free(f);
        return vt_error(v, "%s has %lld dimensions, but \"%s\" holds vectors of %d", what,
                        (long long)n, v->name, v->dims);
    }
    if (v->metric == EMB_METRIC_COSINE && emb_vec_norm2(f, n) == 0.0) {
        sqlite3_free(f);
        return vt_error(v, "%s is a zero vector, which has no direction (the index's metric is "
                           "cosine)", what);
    }
    *out = f;
    return SQLITE_OK;
}

/* The index's model, retained, after checking that it is loaded and is the model the index
 * was made with. */
static emb_model *index_model(idx_vtab *v, int *rc) {
    *rc = SQLITE_ERROR;
    if (!v->model) {
        vt_error(v, "\"%s\" has no model (it was created with dims = %d): give vectors, not text",
                 v->name, v->dims);
        return NULL;
    }
    emb_model *m = ext_registry_get(v->model);
    if (!m) {
        vt_error(v, "model '%s' of \"%s\" is not loaded: load it first with embed_load('%s', path)",
                 v->model, v->name, v->model);
        return NULL;
    }
    const emb_model_info *info = emb_model_get_info(m);
    if (!info->has_vectors || info->hidden != v->dims || strcmp(info->fingerprint, v->fingerprint)) {
        vt_error(v, "model '%s' (fingerprint %s, %d dimensions) is not the model \"%s\" was made "
                    "with (fingerprint %s, %d dimensions)",
                 v->model, info->fingerprint, info->has_vectors ? info->hidden : 0, v->name,
                 v->fingerprint, v->dims);
        emb_model_release(m);
        return NULL;
    }
    *rc = SQLITE_OK;
    return m;
}

/* Embeds n texts with the index's model into out (n x dims). */
static int embed_texts(idx_vtab *v, const char *const *texts, const size_t *lens, size_t n,
                       float *out) {
    int rc;
    emb_model *m = index_model(v, &rc);
    if (!m) return rc;
    char err[EMB_ERR_LEN];
    if (emb_model_embed(m, texts, lens, n, NULL, out, err)) rc = vt_error(v, "%s", err);
    emb_model_release(m);
    if (rc == SQLITE_OK && v->metric == EMB_METRIC_COSINE)
        for (size_t i = 0; i < n; i++)
            if (emb_vec_norm2(out + i * (size_t)v->dims, (size_t)v->dims) == 0.0)
                return vt_error(v, "the text \"%.40s\" embeds to a zero vector, which has no "
                                   "direction (the index's metric is cosine)", texts[i]);
    return rc;
}

/* ---------- placing pending rows in chunks ---------- */

/* Writes n vectors (with their rowids) at positions count .. count+n-1 and records them. */
static int append_vectors(idx_vtab *v, const sqlite3_int64 *ids, const float *vecs, size_t n) {
    sqlite3_int64 count;
    int rc = get_config_int(v, "count", &count);
    size_t d = (size_t)v->dims, ch = (size_t)v->chunk;
    size_t i = 0;
    while (rc == SQLITE_OK && i < n) {
        sqlite3_int64 loc = count + (sqlite3_int64)i;
        sqlite3_int64 chunk = loc / v->chunk;
        size_t slot = (size_t)(loc % v->chunk);
        size_t take = ch - slot < n - i ? ch - slot : n - i;
        if (slot == 0) {
            sqlite3_stmt *s = stmt(v, ST_NEW_CHUNK, &rc);
            if (!s) break;
            sqlite3_bind_int64(s, 1, chunk);
            sqlite3_bind_int64(s, 2, (sqlite3_int64)(ch * sizeof(sqlite3_int64)));
            sqlite3_bind_int64(s, 3, (sqlite3_int64)(ch * d * sizeof(float)));
            if ((rc = run(v, s)) != SQLITE_OK) break;
        }
        rc = chunk_io(v, chunk, "vectors", (void *)(vecs + i * d), take * d * sizeof(float),
                      slot * d * sizeof(float), 1);
        if (rc == SQLITE_OK)
            rc = chunk_io(v, chunk, "rowids", (void *)(ids + i), take * sizeof(sqlite3_int64),
                          slot * sizeof(sqlite3_int64), 1);
        sqlite3_stmt *s = rc == SQLITE_OK ? stmt(v, ST_SET_LOC, &rc) : NULL;
        for (size_t j = 0; s && rc == SQLITE_OK && j < take; j++) {
            sqlite3_bind_int64(s, 1, ids[i + j]);
            sqlite3_bind_int64(s, 2, loc + (sqlite3_int64)j);
            rc = run(v, s);
        }
        i += take;
    }
    if (rc == SQLITE_OK) rc = set_config_int(v, "count", count + (sqlite3_int64)n);
    if (rc == SQLITE_OK) cache_append(v, count, ids, vecs, n);
    else drop_cache(v);
    return rc;
}

/* Places every pending row in the chunks, embedding pending texts in one call. */
static int flush(idx_vtab *v) {
    if (!v->pending) return SQLITE_OK;
    int rc;
    sqlite3_stmt *s = stmt(v, ST_READ_PENDING, &rc);
    if (!s) return rc;
    size_t cap = 0, n = 0, nt = 0, d = (size_t)v->dims;
    sqlite3_int64 *ids = NULL;
    float *vecs = NULL;
    char **texts = NULL;   /* texts to embed, owned */
    size_t *lens = NULL, *text_row = NULL;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            sqlite3_int64 *ni = realloc(ids, cap * sizeof *ni);
            if (ni) ids = ni;
            float *nv = realloc(vecs, cap * d * sizeof *nv);
            if (nv) vecs = nv;
            char **ntx = realloc(texts, cap * sizeof *ntx);
            if (ntx) texts = ntx;
            size_t *nl = realloc(lens, cap * sizeof *nl);
            if (nl) lens = nl;
            size_t *nr = realloc(text_row, cap * sizeof *nr);
            if (nr) text_row = nr;
            if (!ni || !nv || !ntx || !nl || !nr) {
                rc = SQLITE_NOMEM;
                break;
            }
        }
        ids[n] = sqlite3_column_int64(s, 0);
        if (sqlite3_column_type(s, 1) == SQLITE_BLOB &&
            (size_t)sqlite3_column_bytes(s, 1) == d * sizeof(float)) {
            memcpy(vecs + n * d, sqlite3_column_blob(s, 1), d * sizeof(float));
        } else if (sqlite3_column_type(s, 1) == SQLITE_NULL && sqlite3_column_type(s, 2) == SQLITE_TEXT) {
            const char *t = (const char *)sqlite3_column_text(s, 2);
            size_t len = (size_t)sqlite3_column_bytes(s, 2);
            if (!t || !(texts[nt] = malloc(len + 1))) {
                rc = SQLITE_NOMEM;
                break;
            }
            memcpy(texts[nt], t, len + 1);
            lens[nt] = len;
            text_row[nt++] = n;
        } else {
            rc = vt_error(v, "shadow table \"%s_pending\" has a bad row (id %lld): the index is "
                             "corrupt", v->name, ids[n]);
            rc = SQLITE_CORRUPT_VTAB;
            break;
        }
        n++;
    }
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    else if (rc != SQLITE_OK && rc != SQLITE_NOMEM && rc != SQLITE_CORRUPT_VTAB && rc != SQLITE_ERROR)
        rc = sql_error(v, rc);
    float *out = NULL;
    if (rc == SQLITE_OK && nt) {
        out = malloc(nt * d * sizeof *out);
        if (!out) rc = SQLITE_NOMEM;
        else rc = embed_texts(v, (const char *const *)texts, lens, nt, out);
        for (size_t i = 0; rc == SQLITE_OK && i < nt; i++)
            memcpy(vecs + text_row[i] * d, out + i * d, d * sizeof(float));
    }
    if (rc == SQLITE_OK && n) rc = append_vectors(v, ids, vecs, n);
    if (rc == SQLITE_OK && n) {
        sqlite3_stmt *c = stmt(v, ST_CLEAR_PENDING, &rc);
        if (c) rc = run(v, c);
    }
    if (rc == SQLITE_OK) {
        v->pending = 0;
        v->pending_bytes = 0;
    }
    for (size_t i = 0; i < nt; i++) free(texts[i]);
    free(out);
    free(ids);
    free(vecs);
    free(texts);
    free(lens);
    free(text_row);
    return rc;
}

/* ---------- the cache ---------- */

static int current_version(idx_vtab *v, sqlite3_int64 *ver) {
    return get_config_int(v, "version", ver);
}

/* Makes v->cache a copy of the chunks as they are now (pending rows flushed first). */
static int ensure_cache(idx_vtab *v) {
    int rc = flush(v);
    sqlite3_int64 ver, count;
    if (rc == SQLITE_OK) rc = current_version(v, &ver);
    if (rc != SQLITE_OK) return rc;
    if (v->cache && v->cache->version == ver) return SQLITE_OK;
    drop_cache(v);
    if ((rc = get_config_int(v, "count", &count)) != SQLITE_OK) return rc;
    size_t n = (size_t)count, d = (size_t)v->dims, ch = (size_t)v->chunk;
    idx_cache *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->refs = 1;
    c->version = ver;
    c->n = n;
    c->cap = n;
    c->d = d;
    c->vecs = vectors_alloc(n * d);
    c->rowids = malloc((n ? n : 1) * sizeof(sqlite3_int64));
    if (v->metric == EMB_METRIC_COSINE || v->metric == EMB_METRIC_L2)
        c->aux = malloc((n ? n : 1) * sizeof(float));
    if (!c->vecs || !c->rowids || (!c->aux && (v->metric == EMB_METRIC_COSINE || v->metric == EMB_METRIC_L2))) {
        cache_release(c);
        return SQLITE_NOMEM;
    }
    /* straight from the chunks' pages into the array with incremental blob I/O: one copy */
    size_t chunks = (n + ch - 1) / ch;
    char *table = sqlite3_mprintf("%s_chunks", v->name);
    sqlite3_blob *bv = NULL, *br = NULL;
    rc = table ? SQLITE_OK : SQLITE_NOMEM;
    for (size_t id = 0; rc == SQLITE_OK && id < chunks; id++) {
        size_t rows = id + 1 == chunks ? n - id * ch : ch;
        if (id == 0) {
            rc = sqlite3_blob_open(v->db, v->schema, table, "vectors", 0, 0, &bv);
            if (rc == SQLITE_OK) rc = sqlite3_blob_open(v->db, v->schema, table, "rowids", 0, 0, &br);
        } else {
            rc = sqlite3_blob_reopen(bv, (sqlite3_int64)id);
            if (rc == SQLITE_OK) rc = sqlite3_blob_reopen(br, (sqlite3_int64)id);
        }
        if (rc == SQLITE_OK && ((size_t)sqlite3_blob_bytes(bv) != ch * d * sizeof(float) ||
                                (size_t)sqlite3_blob_bytes(br) != ch * sizeof(sqlite3_int64)))
            rc = SQLITE_CORRUPT_VTAB;
        if (rc == SQLITE_OK) rc = sqlite3_blob_read(bv, c->vecs + id * ch * d, (int)(rows * d * sizeof(float)), 0);
        if (rc == SQLITE_OK) rc = sqlite3_blob_read(br, c->rowids + id * ch, (int)(rows * sizeof(sqlite3_int64)), 0);
    }
    sqlite3_blob_close(bv);
    sqlite3_blob_close(br);
    sqlite3_free(table);
    if (rc == SQLITE_CORRUPT_VTAB || rc == SQLITE_ERROR)
        vt_error(v, "shadow table \"%s_chunks\" does not match the count in \"%s_config\": the "
                    "index is corrupt", v->name, v->name);
    if (rc == SQLITE_ERROR) rc = SQLITE_CORRUPT_VTAB;
    if (rc != SQLITE_OK) {
        cache_release(c);
        return rc;
    }
    for (size_t i = 0; c->aux && i < n; i++) c->aux[i] = cache_aux(v->metric, c->vecs + i * d, d);
    v->cache = c;
    return SQLITE_OK;
}

/* ---------- k nearest neighbours ---------- */

typedef struct {
    float key;
    sqlite3_int64 i;
} cand;

/* Max-heap on key (ties: larger index on top), so the top is the worst candidate kept. */
static int cand_worse(const cand *a, const cand *b) {
    return a->key > b->key || (a->key == b->key && a->i > b->i);
}

static void sift_down(cand *h, size_t n, size_t at) {
    for (;;) {
        size_t l = 2 * at + 1, r = l + 1, top = at;
        if (l < n && cand_worse(&h[l], &h[top])) top = l;
        if (r < n && cand_worse(&h[r], &h[top])) top = r;
        if (top == at) return;
        cand t = h[at];
        h[at] = h[top];
        h[top] = t;
        at = top;
    }
}

typedef struct {
    double dist;
    sqlite3_int64 rowid, loc;
} hit;

static int hit_cmp(const void *pa, const void *pb) {
    const hit *a = pa, *b = pb;
    if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
    return (a->rowid > b->rowid) - (a->rowid < b->rowid);
}

/* The k nearest rows to q in cache c: exact distances in double, ordered. */
static int knn(idx_vtab *v, const idx_cache *c, const float *q, size_t k, hit **out, size_t *nout) {
    size_t n = c->n, d = c->d;
    *out = NULL;
    *nout = 0;
    if (k > n) k = n;
    if (k == 0) return SQLITE_OK;
    /* candidates chosen on float32 scores, then rescored exactly: a margin keeps near-ties
     * whose order the rounding of the scores could flip */
    size_t m = k + k / 4 + 16;
    if (m > n) m = n;
    if (v->score_cap < n) {
        free(v->score);
        v->score_cap = 0;
        if (!(v->score = malloc(n * sizeof *v->score))) return SQLITE_NOMEM;
        v->score_cap = n;
    }
    float *score = v->score;
    cand *heap = malloc(m * sizeof *heap);
    hit *hits = malloc(m * sizeof *hits);
    if (!heap || !hits) {
        free(heap);
        free(hits);
        return SQLITE_NOMEM;
    }
    if (v->metric == EMB_METRIC_L1) {
        for (size_t i = 0; i < n; i++) score[i] = (float)emb_vec_l1(c->vecs + i * d, q, d);
    } else {
        /* one pass over the array, in blocks that OpenBLAS splits over its threads */
        const size_t block = 65536;
        for (size_t at = 0; at < n; at += block) {
            size_t rows = n - at < block ? n - at : block;
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)rows, (blasint)d, 1.0f,
                        c->vecs + at * d, (blasint)d, q, 1, 0.0f, score + at, 1);
        }
        if (v->metric == EMB_METRIC_COSINE)
            for (size_t i = 0; i < n; i++) score[i] = -score[i] * c->aux[i];
        else if (v->metric == EMB_METRIC_L2)
            for (size_t i = 0; i < n; i++) score[i] = c->aux[i] - 2.0f * score[i];
        else
            for (size_t i = 0; i < n; i++) score[i] = -score[i];
    }
    size_t h = 0;
    for (size_t i = 0; i < n; i++) {
        if (h == m && score[i] > heap[0].key) continue; /* the common case: not among the best */
        cand x = {score[i], (sqlite3_int64)i};
        if (h < m) {
            heap[h++] = x;
            if (h == m)
                for (size_t j = m / 2; j-- > 0;) sift_down(heap, m, j);
        } else if (cand_worse(&heap[0], &x)) {
            heap[0] = x;
            sift_down(heap, m, 0);
        }
    }
    for (size_t j = 0; j < h; j++) {
        size_t i = (size_t)heap[j].i;
        hits[j].dist = emb_vec_distance(v->metric, c->vecs + i * d, q, d);
        hits[j].rowid = c->rowids[i];
        hits[j].loc = (sqlite3_int64)i;
    }
    qsort(hits, h, sizeof *hits, hit_cmp);
    free(heap);
    *out = hits;
    *nout = h < k ? h : k;
    return SQLITE_OK;
}

/* ---------- creating and connecting ---------- */

static char *dequote(const char *s, size_t n) {
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    char *out = sqlite3_malloc64(n + 1);
    if (!out) return NULL;
    if (n >= 2 && (s[0] == '\'' || s[0] == '"' || s[0] == '`') && s[n - 1] == s[0]) {
        char q = s[0];
        size_t j = 0;
        for (size_t i = 1; i + 1 < n; i++) {
            out[j++] = s[i];
            if (s[i] == q && i + 2 < n && s[i + 1] == q) i++;
        }
        out[j] = 0;
    } else {
        memcpy(out, s, n);
        out[n] = 0;
    }
    return out;
}

static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    long x = strtol(s, &end, 10);
    if (!*s || *end || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

static int declare(sqlite3 *db, const char *name, char **err) {
    static const char *const cols[] = {"vector", "text", "distance", "k"};
    for (int i = 0; i < 4; i++)
        if (sqlite3_stricmp(name, cols[i]) == 0) {
            *err = sqlite3_mprintf(FN ": a table cannot be named '%s', the name of one of its "
                                      "columns", name);
            return SQLITE_ERROR;
        }
    char *sql = sqlite3_mprintf("CREATE TABLE x(vector BLOB, text TEXT, distance HIDDEN,"
                                " k HIDDEN, \"%w\" HIDDEN)", name);
    if (!sql) return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, sql);
    sqlite3_free(sql);
    if (rc == SQLITE_OK) rc = sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
    return rc;
}

static void vtab_free(idx_vtab *v) {
    if (!v) return;
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(v->st[i]);
    drop_cache(v);
    free(v->score);
    sqlite3_free(v->schema);
    sqlite3_free(v->name);
    sqlite3_free(v->model);
    sqlite3_free(v);
}

static idx_vtab *vtab_new(sqlite3 *db, const char *schema, const char *name) {
    idx_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->db = db;
    v->schema = sqlite3_mprintf("%s", schema);
    v->name = sqlite3_mprintf("%s", name);
    if (!v->schema || !v->name) {
        vtab_free(v);
        return NULL;
    }
    return v;
}

/* Reads the configuration that xCreate stored. */
static int load_config(idx_vtab *v, char **err) {
    char *sql = sqlite3_mprintf("SELECT key, value FROM \"%w\".\"%w_config\"", v->schema, v->name);
    if (!sql) return SQLITE_NOMEM;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(v->db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    int have = 0;
    while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        if (!key) continue;
        if (!strcmp(key, "dims")) v->dims = sqlite3_column_int(s, 1), have |= 1;
        else if (!strcmp(key, "chunk_size")) v->chunk = sqlite3_column_int(s, 1), have |= 2;
        else if (!strcmp(key, "metric")) {
            const char *m = (const char *)sqlite3_column_text(s, 1);
            if (m && emb_metric_parse(m, &v->metric) == 0) have |= 4;
        } else if (!strcmp(key, "model") && sqlite3_column_type(s, 1) == SQLITE_TEXT) {
            v->model = sqlite3_mprintf("%s", sqlite3_column_text(s, 1));
            if (!v->model) rc = SQLITE_NOMEM;
        } else if (!strcmp(key, "fingerprint") && sqlite3_column_type(s, 1) == SQLITE_TEXT) {
            snprintf(v->fingerprint, sizeof v->fingerprint, "%s", sqlite3_column_text(s, 1));
        }
    }
    if (rc == SQLITE_OK) rc = sqlite3_finalize(s);
    else sqlite3_finalize(s);
    if (rc == SQLITE_OK && (have != 7 || v->dims < 1 || v->dims > MAX_DIMS || v->chunk < 1)) {
        *err = sqlite3_mprintf(FN ": shadow table \"%s_config\" is missing or corrupt", v->name);
        return SQLITE_CORRUPT_VTAB;
    }
    if (rc != SQLITE_OK)
        *err = sqlite3_mprintf(FN ": cannot read \"%s_config\": %s", v->name, sqlite3_errmsg(v->db));
    return rc;
}

static int idx_create(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                      char **err) {
    (void)aux;
    const char *schema = argv[1], *name = argv[2];
    int dims = 0, chunk = DEFAULT_CHUNK, rc = SQLITE_OK;
    char *model = NULL, *metric = NULL;
    emb_metric m = EMB_METRIC_COSINE;
    emb_model *mod = NULL;
    for (int i = 3; i < argc && rc == SQLITE_OK; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        char *key = eq ? dequote(a, (size_t)(eq - a)) : NULL;
        char *val = eq ? dequote(eq + 1, strlen(eq + 1)) : NULL;
        if (!eq) {
            *err = sqlite3_mprintf(FN ": option '%s' must be key = value (known keys: model, dims, "
                                      "metric, chunk_size)", a);
            rc = SQLITE_ERROR;
        } else if (!key || !val) {
            rc = SQLITE_NOMEM;
        } else if (!sqlite3_stricmp(key, "model") && !model) {
            model = val, val = NULL;
        } else if (!sqlite3_stricmp(key, "metric") && !metric) {
            metric = val, val = NULL;
            if (emb_metric_parse(metric, &m)) {
                *err = sqlite3_mprintf(FN ": unknown metric '%s' (use cosine, l2, dot or l1)", metric);
                rc = SQLITE_ERROR;
            }
        } else if (!sqlite3_stricmp(key, "dims") && !dims) {
            if (parse_int(val, 1, MAX_DIMS, &dims)) {
                *err = sqlite3_mprintf(FN ": dims must be an integer from 1 to %d, not '%s'", MAX_DIMS, val);
                rc = SQLITE_ERROR;
            }
        } else if (!sqlite3_stricmp(key, "chunk_size")) {
            if (parse_int(val, 1, 1 << 20, &chunk)) {
                *err = sqlite3_mprintf(FN ": chunk_size must be an integer from 1 to %d, not '%s'",
                                       1 << 20, val);
                rc = SQLITE_ERROR;
            }
        } else {
            *err = sqlite3_mprintf(FN ": unknown or repeated option '%s' (known: model, dims, metric, "
                                      "chunk_size)", key);
            rc = SQLITE_ERROR;
        }
        sqlite3_free(key);
        sqlite3_free(val);
    }
    if (rc == SQLITE_OK && model) {
        mod = ext_registry_get(model);
        if (!mod) {
            *err = sqlite3_mprintf(FN ": unknown model '%s': load it first with embed_load(name, path) "
                                      "or embed_define(name, json)", model);
            rc = SQLITE_ERROR;
        } else if (!emb_model_get_info(mod)->has_vectors) {
            *err = sqlite3_mprintf(FN ": model '%s' is a tokenizer only: it has no vectors", model);
            rc = SQLITE_ERROR;
        } else if (dims && dims != emb_model_get_info(mod)->hidden) {
            *err = sqlite3_mprintf(FN ": dims = %d, but model '%s' makes vectors of %d dimensions",
                                   dims, model, emb_model_get_info(mod)->hidden);
            rc = SQLITE_ERROR;
        } else {
            dims = emb_model_get_info(mod)->hidden;
        }
    }
    if (rc == SQLITE_OK && !dims) {
        *err = sqlite3_mprintf(FN ": say which vectors it holds: embed_index(model = 'name') or "
                                  "embed_index(dims = N), optionally with metric = 'cosine' | 'l2' | 'dot' | 'l1'");
        rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && (size_t)chunk * (size_t)dims * sizeof(float) > MAX_CHUNK_BYTES) {
        chunk = (int)(MAX_CHUNK_BYTES / ((size_t)dims * sizeof(float)));
        if (chunk < 1) chunk = 1;
    }
    idx_vtab *v = NULL;
    if (rc == SQLITE_OK) rc = declare(db, name, err);
    if (rc == SQLITE_OK && !(v = vtab_new(db, schema, name))) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) {
        char *sql = sqlite3_mprintf(
            "CREATE TABLE \"%w\".\"%w_config\"(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
            "CREATE TABLE \"%w\".\"%w_rows\"(id INTEGER PRIMARY KEY, loc INTEGER, text TEXT);"
            "CREATE TABLE \"%w\".\"%w_chunks\"(chunk_id INTEGER PRIMARY KEY, rowids BLOB, vectors BLOB);"
            "CREATE TABLE \"%w\".\"%w_pending\"(id INTEGER PRIMARY KEY, vector BLOB);"
            "INSERT INTO \"%w\".\"%w_config\"(key, value) VALUES ('format', 1), ('dims', %d),"
            " ('metric', %Q), ('model', %Q), ('fingerprint', %Q), ('chunk_size', %d), ('count', 0),"
            " ('version', 0);",
            schema, name, schema, name, schema, name, schema, name, schema, name, dims,
            emb_metric_name(m), model, mod ? emb_model_get_info(mod)->fingerprint : NULL, chunk);
        if (!sql) rc = SQLITE_NOMEM;
        else {
            rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
            if (rc != SQLITE_OK)
                *err = sqlite3_mprintf(FN ": cannot create the shadow tables of \"%s\": %s", name,
                                       sqlite3_errmsg(db));
            sqlite3_free(sql);
        }
    }
    if (rc == SQLITE_OK) rc = load_config(v, err);
    emb_model_release(mod);
    sqlite3_free(model);
    sqlite3_free(metric);
    if (rc != SQLITE_OK) {
        vtab_free(v);
        return rc;
    }
    *out = &v->base;
    return SQLITE_OK;
}

static int idx_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                       char **err) {
    (void)aux;
    (void)argc;
    int rc = declare(db, argv[2], err);
    idx_vtab *v = NULL;
    if (rc == SQLITE_OK && !(v = vtab_new(db, argv[1], argv[2]))) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = load_config(v, err);
    if (rc != SQLITE_OK) {
        vtab_free(v);
        return rc;
    }
    *out = &v->base;
    return SQLITE_OK;
}

static int idx_disconnect(sqlite3_vtab *vt) {
    vtab_free((idx_vtab *)vt);
    return SQLITE_OK;
}

static const char *const shadow_names[] = {"config", "rows", "chunks", "pending"};

static int idx_destroy(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = SQLITE_OK;
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(v->st[i]);
        v->st[i] = NULL;
    }
    for (int i = 0; i < 4 && rc == SQLITE_OK; i++) {
        char *sql = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\".\"%w_%s\"", v->schema, v->name,
                                    shadow_names[i]);
        rc = sql ? sqlite3_exec(v->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
    }
    if (rc != SQLITE_OK) return sql_error(v, rc);
    vtab_free(v);
    return SQLITE_OK;
}

static int idx_rename(sqlite3_vtab *vt, const char *to) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = SQLITE_OK;
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(v->st[i]);
        v->st[i] = NULL;
    }
    for (int i = 0; i < 4 && rc == SQLITE_OK; i++) {
        char *sql = sqlite3_mprintf("ALTER TABLE \"%w\".\"%w_%s\" RENAME TO \"%w_%s\"", v->schema,
                                    v->name, shadow_names[i], to, shadow_names[i]);
        rc = sql ? sqlite3_exec(v->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
    }
    if (rc != SQLITE_OK) return sql_error(v, rc);
    char *name = sqlite3_mprintf("%s", to);
    if (!name) return SQLITE_NOMEM;
    sqlite3_free(v->name);
    v->name = name;
    return SQLITE_OK;
}

static int idx_shadow_name(const char *suffix) {
    for (int i = 0; i < 4; i++)
        if (sqlite3_stricmp(suffix, shadow_names[i]) == 0) return 1;
    return 0;
}

/* ---------- query planning ---------- */

static int idx_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
    (void)vt;
    int match = -1, k = -1, limit = -1, offset = -1, rowid = -1, unusable_match = 0, unusable_k = 0;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (c->op == SQLITE_INDEX_CONSTRAINT_MATCH && (c->iColumn == COL_TABLE || c->iColumn == COL_VECTOR)) {
            if (!c->usable) unusable_match = 1;
            else if (match < 0) match = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == COL_K) {
            if (!c->usable) unusable_k = 1;
            else if (k < 0) k = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT && c->usable) {
            limit = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_OFFSET && c->usable) {
            offset = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == -1 && c->usable) {
            rowid = i;
        }
    }
    int vec_used = (info->colUsed & ((sqlite3_uint64)1 << COL_VECTOR)) != 0;
    if (match < 0 && unusable_match) return SQLITE_CONSTRAINT; /* wait for a plan with the query known */
    if (match >= 0) {
        if (k < 0 && unusable_k) return SQLITE_CONSTRAINT;
        if (k < 0 && limit < 0) {
            /* perhaps another call offers a LIMIT; if none does, xFilter says what is missing */
            info->aConstraintUsage[match].argvIndex = 1;
            info->aConstraintUsage[match].omit = 1;
            info->idxNum = PLAN_KNN | F_NEED_K;
            info->estimatedCost = 1e30;
            return SQLITE_OK;
        }
        int flags = PLAN_KNN | (vec_used ? F_VECTOR : 0);
        info->aConstraintUsage[match].argvIndex = 1;
        info->aConstraintUsage[match].omit = 1;
        double rows = 10;
        sqlite3_value *rhs = NULL;
        if (k >= 0) {
            flags |= F_K;
            info->aConstraintUsage[k].argvIndex = 2;
            info->aConstraintUsage[k].omit = 1;
            if (sqlite3_vtab_rhs_value(info, k, &rhs) == SQLITE_OK && sqlite3_value_type(rhs) == SQLITE_INTEGER)
                rows = (double)sqlite3_value_int64(rhs);
        } else {
            flags |= F_LIMIT;
            info->aConstraintUsage[limit].argvIndex = 2;
            if (offset >= 0) {
                flags |= F_OFFSET;
                info->aConstraintUsage[offset].argvIndex = 3;
            }
            if (sqlite3_vtab_rhs_value(info, limit, &rhs) == SQLITE_OK && sqlite3_value_type(rhs) == SQLITE_INTEGER)
                rows = (double)sqlite3_value_int64(rhs);
        }
        if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == COL_DISTANCE && !info->aOrderBy[0].desc)
            info->orderByConsumed = 1;
        info->idxNum = flags;
        info->estimatedCost = 1000.0;
        info->estimatedRows = rows > 0 ? (sqlite3_int64)rows : 1;
        return SQLITE_OK;
    }
    if (rowid >= 0) {
        info->aConstraintUsage[rowid].argvIndex = 1;
        info->aConstraintUsage[rowid].omit = 1;
        info->idxNum = PLAN_ROWID | (vec_used ? F_VECTOR : 0);
        info->estimatedCost = 10;
        info->estimatedRows = 1;
        return SQLITE_OK;
    }
    info->idxNum = PLAN_SCAN | (vec_used ? F_VECTOR : 0);
    info->estimatedCost = 1e7;
    info->estimatedRows = 100000;
    if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == -1 && !info->aOrderBy[0].desc)
        info->orderByConsumed = 1;
    return SQLITE_OK;
}

/* ---------- cursors ---------- */

static int idx_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
    (void)vt;
    idx_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void cursor_reset(idx_cursor *c) {
    free(c->ids);
    free(c->locs);
    free(c->dist);
    c->ids = c->locs = NULL;
    c->dist = NULL;
    c->n = c->at = 0;
    sqlite3_finalize(c->stmt);
    c->stmt = NULL;
    sqlite3_free(c->one);
    c->one = NULL;
    cache_release(c->cache);
    c->cache = NULL;
    c->eof = 1;
}

static int idx_close(sqlite3_vtab_cursor *cur) {
    cursor_reset((idx_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* The query vector of a MATCH: a vector BLOB, JSON text starting with '[', or text to embed. */
static int query_vector(idx_vtab *v, sqlite3_value *val, float **q) {
    *q = NULL;
    int t = sqlite3_value_type(val);
    if (t == SQLITE_NULL) return vt_error(v, "the query of a search of \"%s\" is NULL", v->name);
    if (t == SQLITE_TEXT) {
        const char *s = (const char *)sqlite3_value_text(val);
        size_t len = (size_t)sqlite3_value_bytes(val);
        size_t i = 0;
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
        if (i == len || s[i] != '[') {
            if (!valid_utf8((const unsigned char *)s, len))
                return vt_error(v, "the query text is not valid UTF-8");
            float *f = sqlite3_malloc64((size_t)v->dims * sizeof *f);
            if (!f) return SQLITE_NOMEM;
            int rc = embed_texts(v, &s, &len, 1, f);
            if (rc != SQLITE_OK) {
                sqlite3_free(f);
                return rc;
            }
            *q = f;
            return SQLITE_OK;
        }
    }
    return read_vector(v, val, "the query", q);
}

static int filter_knn(idx_cursor *c, idx_vtab *v, int flags, sqlite3_value **argv) {
    sqlite3_int64 k;
    if (flags & F_NEED_K)
        return vt_error(v, "a search of \"%s\" needs k: WHERE \"%s\" MATCH :query AND k = 10 "
                           "(LIMIT 10 works too from SQLite 3.41)", v->name, v->name);
    if (flags & F_K) {
        sqlite3_value *kv = argv[1];
        int t = sqlite3_value_type(kv);
        double kd = sqlite3_value_double(kv);
        if (t == SQLITE_INTEGER) k = sqlite3_value_int64(kv);
        else if (t == SQLITE_FLOAT && kd == floor(kd) && fabs(kd) < 9e15) k = (sqlite3_int64)kd;
        else return vt_error(v, "k must be a positive integer, not %s", ext_type_name(t));
        if (k <= 0) return vt_error(v, "k must be a positive integer, not %lld", k);
    } else {
        k = sqlite3_value_int64(argv[1]);
        if (k < 0) k = (sqlite3_int64)1 << 62; /* LIMIT -1: no limit */
        if (flags & F_OFFSET) {
            sqlite3_int64 off = sqlite3_value_int64(argv[2]);
            if (off > 0) k = k > ((sqlite3_int64)1 << 62) - off ? (sqlite3_int64)1 << 62 : k + off;
        }
    }
    c->k = k;
    float *q = NULL;
    int rc = query_vector(v, argv[0], &q);
    if (rc == SQLITE_OK) rc = ensure_cache(v);
    if (rc != SQLITE_OK) {
        sqlite3_free(q);
        return rc;
    }
    c->cache = v->cache;
    c->cache->refs++;
    hit *hits = NULL;
    size_t n = 0;
    rc = k > 0 ? knn(v, c->cache, q, (size_t)k, &hits, &n) : SQLITE_OK;
    sqlite3_free(q);
    if (rc != SQLITE_OK) return rc;
    if (n) {
        c->ids = malloc(n * sizeof *c->ids);
        c->locs = malloc(n * sizeof *c->locs);
        c->dist = malloc(n * sizeof *c->dist);
        if (!c->ids || !c->locs || !c->dist) {
            free(hits);
            return SQLITE_NOMEM;
        }
        for (size_t i = 0; i < n; i++) {
            c->ids[i] = hits[i].rowid;
            c->locs[i] = hits[i].loc;
            c->dist[i] = hits[i].dist;
        }
    }
    free(hits);
    c->n = n;
    c->eof = n == 0;
    return SQLITE_OK;
}

static int scan_step(idx_cursor *c) {
    int rc = sqlite3_step(c->stmt);
    if (rc == SQLITE_ROW) return SQLITE_OK;
    c->eof = 1;
    return rc == SQLITE_DONE ? SQLITE_OK : sql_error((idx_vtab *)c->base.pVtab, rc);
}

static int idx_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                      sqlite3_value **argv) {
    (void)idx_str;
    (void)argc;
    idx_cursor *c = (idx_cursor *)cur;
    idx_vtab *v = (idx_vtab *)cur->pVtab;
    cursor_reset(c);
    c->plan = idx_num & PLAN_MASK;
    if (c->plan == PLAN_KNN) return filter_knn(c, v, idx_num, argv);
    int rc = flush(v);
    if (rc == SQLITE_OK && (idx_num & F_VECTOR) && c->plan == PLAN_SCAN) {
        rc = ensure_cache(v);
        if (rc == SQLITE_OK) {
            c->cache = v->cache;
            c->cache->refs++;
        }
    }
    if (rc != SQLITE_OK) return rc;
    char *sql = sqlite3_mprintf(c->plan == PLAN_ROWID
                                    ? "SELECT id, loc, text FROM \"%w\".\"%w_rows\" WHERE id = ?1"
                                    : "SELECT id, loc, text FROM \"%w\".\"%w_rows\" ORDER BY id",
                                v->schema, v->name);
    if (!sql) return SQLITE_NOMEM;
    rc = sqlite3_prepare_v2(v->db, sql, -1, &c->stmt, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) return sql_error(v, rc);
    if (c->plan == PLAN_ROWID) {
        if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER && sqlite3_value_numeric_type(argv[0]) != SQLITE_INTEGER)
            return SQLITE_OK; /* no integer rowid equals it: no rows */
        sqlite3_bind_value(c->stmt, 1, argv[0]);
    }
    c->eof = 0;
    return scan_step(c);
}

static int idx_next(sqlite3_vtab_cursor *cur) {
    idx_cursor *c = (idx_cursor *)cur;
    if (c->plan == PLAN_KNN) {
        if (++c->at >= c->n) c->eof = 1;
        return SQLITE_OK;
    }
    return scan_step(c);
}

static int idx_eof(sqlite3_vtab_cursor *cur) {
    return ((idx_cursor *)cur)->eof;
}

static int idx_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
    idx_cursor *c = (idx_cursor *)cur;
    *out = c->plan == PLAN_KNN ? c->ids[c->at] : sqlite3_column_int64(c->stmt, 0);
    return SQLITE_OK;
}

/* The stored vector of the current row of a scan or lookup. */
static const float *scan_vector(idx_cursor *c, idx_vtab *v, int *rc) {
    *rc = SQLITE_OK;
    if (sqlite3_column_type(c->stmt, 1) != SQLITE_INTEGER) return NULL; /* pending: no vector yet */
    sqlite3_int64 loc = sqlite3_column_int64(c->stmt, 1);
    if (c->cache) return loc >= 0 && (size_t)loc < c->cache->n ? c->cache->vecs + loc * v->dims : NULL;
    sqlite3_int64 ver;
    if (v->cache && current_version(v, &ver) == SQLITE_OK && ver == v->cache->version && !v->pending)
        return loc >= 0 && (size_t)loc < v->cache->n ? v->cache->vecs + loc * v->dims : NULL;
    if (!c->one && !(c->one = sqlite3_malloc64((size_t)v->dims * sizeof(float)))) {
        *rc = SQLITE_NOMEM;
        return NULL;
    }
    size_t bytes = (size_t)v->dims * sizeof(float);
    *rc = chunk_io(v, loc / v->chunk, "vectors", c->one, bytes, (size_t)(loc % v->chunk) * bytes, 0);
    return *rc == SQLITE_OK ? c->one : NULL;
}

static int idx_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    idx_cursor *c = (idx_cursor *)cur;
    idx_vtab *v = (idx_vtab *)cur->pVtab;
    int knn_row = c->plan == PLAN_KNN;
    switch (col) {
    case COL_VECTOR: {
        if (sqlite3_vtab_nochange(ctx)) return SQLITE_OK; /* an UPDATE that leaves it alone */
        int rc = SQLITE_OK;
        const float *f = knn_row ? c->cache->vecs + c->locs[c->at] * v->dims : scan_vector(c, v, &rc);
        if (rc != SQLITE_OK) return rc;
        if (f) ext_result_vector(ctx, f, (size_t)v->dims);
        return SQLITE_OK;
    }
    case COL_TEXT:
        if (!knn_row) {
            sqlite3_result_value(ctx, sqlite3_column_value(c->stmt, 2));
        } else {
            int rc;
            sqlite3_stmt *s = stmt(v, ST_TEXT, &rc);
            if (!s) return rc;
            sqlite3_bind_int64(s, 1, c->ids[c->at]);
            if (sqlite3_step(s) == SQLITE_ROW) sqlite3_result_value(ctx, sqlite3_column_value(s, 0));
            sqlite3_reset(s);
        }
        return SQLITE_OK;
    case COL_DISTANCE:
        if (knn_row) sqlite3_result_double(ctx, c->dist[c->at]);
        return SQLITE_OK;
    case COL_K:
        if (knn_row) sqlite3_result_int64(ctx, c->k);
        return SQLITE_OK;
    default:
        return SQLITE_OK;
    }
}

/* ---------- writes ---------- */

static void wrote(idx_vtab *v) {
    v->dirty = 1;
}

/* Removes a row (chunked or pending). *found says whether it was there. */
static int remove_row(idx_vtab *v, sqlite3_int64 rowid, int *found) {
    int rc;
    *found = 0;
    sqlite3_stmt *s = stmt(v, ST_GET_ROW, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    rc = sqlite3_step(s);
    int is_null = rc == SQLITE_ROW ? sqlite3_column_type(s, 0) == SQLITE_NULL : 1;
    sqlite3_int64 loc = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) return SQLITE_OK;
    if (rc != SQLITE_ROW) return sql_error(v, rc);
    *found = 1;
    wrote(v);
    if (is_null) {
        s = stmt(v, ST_DELETE_PENDING_ROW, &rc);
        if (!s) return rc;
        sqlite3_bind_int64(s, 1, rowid);
        if ((rc = run(v, s)) != SQLITE_OK) return rc;
    } else {
        /* move the last vector into the hole, keeping the chunks dense */
        sqlite3_int64 count;
        if ((rc = get_config_int(v, "count", &count)) != SQLITE_OK) return rc;
        if (loc < 0 || loc >= count) {
            vt_error(v, "row %lld has position %lld outside the %lld vectors: the index is corrupt",
                     rowid, loc, count);
            return SQLITE_CORRUPT_VTAB;
        }
        sqlite3_int64 last = count - 1;
        size_t bytes = (size_t)v->dims * sizeof(float);
        if (loc != last) {
            float *buf = sqlite3_malloc64(bytes);
            sqlite3_int64 moved;
            if (!buf) return SQLITE_NOMEM;
            rc = chunk_io(v, last / v->chunk, "vectors", buf, bytes, (size_t)(last % v->chunk) * bytes, 0);
            if (rc == SQLITE_OK)
                rc = chunk_io(v, last / v->chunk, "rowids", &moved, sizeof moved,
                              (size_t)(last % v->chunk) * sizeof moved, 0);
            if (rc == SQLITE_OK)
                rc = chunk_io(v, loc / v->chunk, "vectors", buf, bytes, (size_t)(loc % v->chunk) * bytes, 1);
            if (rc == SQLITE_OK)
                rc = chunk_io(v, loc / v->chunk, "rowids", &moved, sizeof moved,
                              (size_t)(loc % v->chunk) * sizeof moved, 1);
            sqlite3_free(buf);
            if (rc == SQLITE_OK && (s = stmt(v, ST_SET_LOC, &rc)) != NULL) {
                sqlite3_bind_int64(s, 1, moved);
                sqlite3_bind_int64(s, 2, loc);
                rc = run(v, s);
            }
            if (rc != SQLITE_OK) {
                drop_cache(v);
                return rc;
            }
        }
        if (last % v->chunk == 0) {
            if (!(s = stmt(v, ST_DELETE_CHUNK, &rc)) || (sqlite3_bind_int64(s, 1, last / v->chunk),
                                                         (rc = run(v, s)) != SQLITE_OK)) {
                drop_cache(v);
                return rc;
            }
        }
        if ((rc = set_config_int(v, "count", last)) != SQLITE_OK) {
            drop_cache(v);
            return rc;
        }
        cache_remove(v, count, loc);
    }
    if (!(s = stmt(v, ST_DELETE_ROW, &rc))) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    return run(v, s);
}

/* Adds a validated row: vec (dims floats) or NULL to embed text later. rowid NULL: assign. */
static int add_row(idx_vtab *v, sqlite3_value *rowid, const float *vec, sqlite3_value *text,
                   sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = stmt(v, ST_INSERT_ROW, &rc);
    if (!s) return rc;
    wrote(v);
    if (rowid) sqlite3_bind_value(s, 1, rowid);
    else sqlite3_bind_null(s, 1);
    sqlite3_bind_value(s, 2, text);
    if ((rc = run(v, s)) != SQLITE_OK) return rc;
    *out = sqlite3_last_insert_rowid(v->db);
    if (!(s = stmt(v, ST_INSERT_PENDING, &rc))) return rc;
    sqlite3_bind_int64(s, 1, *out);
    size_t bytes = (size_t)v->dims * sizeof(float);
    if (vec) sqlite3_bind_blob(s, 2, vec, (int)bytes, SQLITE_STATIC);
    else sqlite3_bind_null(s, 2);
    rc = run(v, s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_OK) return rc;
    v->pending++;
    v->pending_bytes += vec ? bytes : (size_t)sqlite3_value_bytes(text) + 64;
    if (v->pending >= FLUSH_ROWS || v->pending_bytes >= FLUSH_BYTES) rc = flush(v);
    return rc;
}

/* The vector stored for a row (chunked or pending), into a sqlite3_malloc'd array. */
static int stored_vector(idx_vtab *v, sqlite3_int64 rowid, float **out) {
    int rc;
    size_t bytes = (size_t)v->dims * sizeof(float);
    *out = NULL;
    sqlite3_stmt *s = stmt(v, ST_GET_ROW, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    rc = sqlite3_step(s);
    int pending = rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_NULL;
    sqlite3_int64 loc = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? SQLITE_OK : sql_error(v, rc);
    float *f = sqlite3_malloc64(bytes);
    if (!f) return SQLITE_NOMEM;
    if (pending) {
        if (!(s = stmt(v, ST_GET_PENDING, &rc))) {
            sqlite3_free(f);
            return rc;
        }
        sqlite3_bind_int64(s, 1, rowid);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW && (size_t)sqlite3_column_bytes(s, 0) == bytes) {
            memcpy(f, sqlite3_column_blob(s, 0), bytes);
            rc = SQLITE_OK;
        } else {
            sqlite3_free(f);
            f = NULL; /* a pending text: to be embedded */
            rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : sql_error(v, rc);
        }
        sqlite3_reset(s);
    } else {
        rc = chunk_io(v, loc / v->chunk, "vectors", f, bytes, (size_t)(loc % v->chunk) * bytes, 0);
        if (rc != SQLITE_OK) {
            sqlite3_free(f);
            f = NULL;
        }
    }
    *out = f;
    return rc;
}

static int check_rowid_value(idx_vtab *v, sqlite3_value *r) {
    if (sqlite3_value_type(r) == SQLITE_INTEGER) return SQLITE_OK;
    return vt_error(v, "rowid must be an integer, not %s", ext_type_name(sqlite3_value_type(r)));
}

static int rowid_exists(idx_vtab *v, sqlite3_int64 rowid, int *exists) {
    int rc;
    sqlite3_stmt *s = stmt(v, ST_GET_ROW, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    *exists = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : sql_error(v, rc);
}

/* For an insert, or the new row of an update: resolves an existing row with the same rowid
 * by the statement's conflict mode. */
static int resolve_conflict(idx_vtab *v, sqlite3_int64 rowid) {
    int exists = 0, rc = rowid_exists(v, rowid, &exists);
    if (rc != SQLITE_OK || !exists) return rc;
    if (sqlite3_vtab_on_conflict(v->db) == SQLITE_REPLACE) {
        int found;
        return remove_row(v, rowid, &found);
    }
    vt_error(v, "rowid %lld is already in \"%s\"", rowid, v->name);
    return SQLITE_CONSTRAINT;
}

static int idx_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out) {
    idx_vtab *v = (idx_vtab *)vt;
    int found;
    if (argc == 1) return remove_row(v, sqlite3_value_int64(argv[0]), &found);
    sqlite3_value *old = argv[0], *rowid = argv[1];
    sqlite3_value *vecv = argv[2 + COL_VECTOR], *text = argv[2 + COL_TEXT];
    int is_update = sqlite3_value_type(old) != SQLITE_NULL;
    static const char *const hidden[] = {"distance", "k"};
    for (int i = COL_DISTANCE; i <= COL_TABLE; i++)
        if (sqlite3_value_type(argv[2 + i]) != SQLITE_NULL)
            return vt_error(v, "column %s%s%s cannot be written: it is the %s of a search",
                            i == COL_TABLE ? "\"" : "", i == COL_TABLE ? v->name : hidden[i - COL_DISTANCE],
                            i == COL_TABLE ? "\"" : "",
                            i == COL_DISTANCE ? "result" : i == COL_K ? "size" : "query");
    int tt = sqlite3_value_type(text);
    if (tt != SQLITE_NULL && tt != SQLITE_TEXT)
        return vt_error(v, "text must be text, not %s", ext_type_name(tt));
    if (tt == SQLITE_TEXT && !valid_utf8(sqlite3_value_text(text), (size_t)sqlite3_value_bytes(text)))
        return vt_error(v, "text is not valid UTF-8");
    if (sqlite3_value_type(rowid) != SQLITE_NULL && check_rowid_value(v, rowid) != SQLITE_OK)
        return SQLITE_ERROR;
    if (is_update && sqlite3_value_type(rowid) == SQLITE_NULL)
        return vt_error(v, "rowid must be an integer, not NULL");

    /* the new row's vector: given, kept, or to embed from the text (vec NULL) */
    float *vec = NULL;
    int rc = SQLITE_OK, keep = 0;
    if (is_update && sqlite3_value_nochange(vecv)) {
        int rc2, text_changed = 0;
        sqlite3_stmt *s = stmt(v, ST_GET_ROW, &rc2);
        if (!s) return rc2;
        sqlite3_bind_int64(s, 1, sqlite3_value_int64(old));
        if (sqlite3_step(s) == SQLITE_ROW) {
            const unsigned char *was = sqlite3_column_text(s, 1);
            const unsigned char *now = sqlite3_value_text(text);
            text_changed = now && (!was || strcmp((const char *)was, (const char *)now) != 0);
        }
        sqlite3_reset(s);
        keep = !(text_changed && v->model);
    } else if (sqlite3_value_type(vecv) != SQLITE_NULL) {
        if ((rc = read_vector(v, vecv, "vector", &vec)) != SQLITE_OK) return rc;
    } else if (tt == SQLITE_NULL) {
        return vt_error(v, "a row of \"%s\" needs a vector or a text to embed: the vector is NULL",
                        v->name);
    }
    if (!vec && !keep) {
        /* text to embed: the model must be there now, not only at commit */
        emb_model *m = index_model(v, &rc);
        if (!m) return rc;
        emb_model_release(m);
    }
    if (is_update && keep && (rc = stored_vector(v, sqlite3_value_int64(old), &vec)) != SQLITE_OK)
        return rc;
    if (is_update && keep && !vec && !v->model)
        rc = vt_error(v, "row %lld has no vector", sqlite3_value_int64(old));
    sqlite3_int64 new_id = sqlite3_value_int64(rowid);
    if (rc == SQLITE_OK && is_update) {
        sqlite3_int64 old_id = sqlite3_value_int64(old);
        if (new_id != old_id) rc = resolve_conflict(v, new_id);
        if (rc == SQLITE_OK) rc = remove_row(v, old_id, &found);
    } else if (rc == SQLITE_OK && sqlite3_value_type(rowid) != SQLITE_NULL) {
        rc = resolve_conflict(v, new_id);
    }
    if (rc == SQLITE_OK)
        rc = add_row(v, sqlite3_value_type(rowid) == SQLITE_NULL ? NULL : rowid, vec, text, rowid_out);
    sqlite3_free(vec);
    return rc;
}

/* ---------- transactions ---------- */

static int idx_begin(sqlite3_vtab *vt) {
    (void)vt;
    return SQLITE_OK;
}

static int idx_sync(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = flush(v);
    if (rc == SQLITE_OK && v->dirty) {
        sqlite3_stmt *s = stmt(v, ST_BUMP_VERSION, &rc);
        if (s) rc = run(v, s);
        sqlite3_int64 ver;
        if (rc == SQLITE_OK && v->cache && current_version(v, &ver) == SQLITE_OK) v->cache->version = ver;
        else if (rc == SQLITE_OK) drop_cache(v);
        if (rc == SQLITE_OK) v->dirty = 0;
    }
    return rc;
}

static int idx_commit(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    v->dirty = 0;
    v->pending = 0;
    v->pending_bytes = 0;
    return SQLITE_OK;
}

static int idx_rollback(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    v->dirty = 0;
    v->pending = 0;
    v->pending_bytes = 0;
    drop_cache(v);
    return SQLITE_OK;
}

static int idx_savepoint(sqlite3_vtab *vt, int i) {
    (void)vt;
    (void)i;
    return SQLITE_OK;
}

static int idx_rollback_to(sqlite3_vtab *vt, int i) {
    (void)i;
    idx_vtab *v = (idx_vtab *)vt;
    v->dirty = 1;
    v->pending = 1; /* rows flushed after the savepoint may be pending again */
    drop_cache(v);
    return SQLITE_OK;
}

static sqlite3_module index_module = {
    .iVersion = 3,
    .xCreate = idx_create,
    .xConnect = idx_connect,
    .xBestIndex = idx_best_index,
    .xDisconnect = idx_disconnect,
    .xDestroy = idx_destroy,
    .xOpen = idx_open,
    .xClose = idx_close,
    .xFilter = idx_filter,
    .xNext = idx_next,
    .xEof = idx_eof,
    .xColumn = idx_column,
    .xRowid = idx_rowid,
    .xUpdate = idx_update,
    .xBegin = idx_begin,
    .xSync = idx_sync,
    .xCommit = idx_commit,
    .xRollback = idx_rollback,
    .xRename = idx_rename,
    .xSavepoint = idx_savepoint,
    .xRelease = idx_savepoint,
    .xRollbackTo = idx_rollback_to,
    .xShadowName = idx_shadow_name,
};

int ext_register_index_module(sqlite3 *db) {
    return sqlite3_create_module_v2(db, "embed_index", &index_module, NULL, NULL);
}
