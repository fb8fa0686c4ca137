/* embed_index's storage: statements on the shadow tables, the config, chunk I/O, placing
 * pending rows in chunks, and the connection's in-memory copy of the vectors (filled from
 * the chunks, kept in step with the connection's own writes, dropped when another
 * connection's commit changes the version). */
#include "ext_index.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ix_error(idx_vtab *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    sqlite3_free(v->base.zErrMsg);
    v->base.zErrMsg = msg ? sqlite3_mprintf(FN ": %s", msg) : NULL;
    sqlite3_free(msg);
    return msg ? SQLITE_ERROR : SQLITE_NOMEM;
}

int ix_sql_error(idx_vtab *v, int rc) {
    if (rc == SQLITE_NOMEM) return rc;
    ix_error(v, "\"%s\": %s", v->name, sqlite3_errmsg(v->db));
    return rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_ERROR : rc;
}

/* The statements' SQL: "%w" is the schema, then the table's name. */
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
    [ST_ROW_LOCS] = "SELECT id, loc FROM \"%w\".\"%w_rows\" WHERE loc IS NOT NULL",
    [ST_CHUNK_SPAN] = "SELECT count(*), min(chunk_id), max(chunk_id) FROM \"%w\".\"%w_chunks\"",
};

sqlite3_stmt *ix_stmt(idx_vtab *v, int id, int *rc) {
    *rc = SQLITE_OK;
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
        ix_sql_error(v, *rc);
        return NULL;
    }
    return v->st[id];
}

int ix_run(idx_vtab *v, sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) return SQLITE_OK;
    return ix_sql_error(v, rc);
}

int ix_corrupt(idx_vtab *v, const char *table, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    if (!msg) return SQLITE_NOMEM;
    ix_error(v, "shadow table \"%s_%s\" is damaged: %s (the index is corrupt: drop it and "
                "build it again)", v->name, table, msg);
    sqlite3_free(msg);
    return SQLITE_CORRUPT_VTAB;
}

/* ---------- the configuration ---------- */

static int config_text(sqlite3_stmt *s, char **out) {
    if (sqlite3_column_type(s, 1) != SQLITE_TEXT) return SQLITE_OK; /* NULL: none */
    sqlite3_free(*out);
    *out = sqlite3_mprintf("%s", sqlite3_column_text(s, 1));
    return *out ? SQLITE_OK : SQLITE_NOMEM;
}

int ix_config(idx_vtab *v) {
    if (v->configured) return SQLITE_OK;
    char *sql = sqlite3_mprintf("SELECT key, value FROM \"%w\".\"%w_config\"", v->schema, v->name);
    if (!sql) return SQLITE_NOMEM;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(v->db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
        ix_error(v, "cannot read shadow table \"%s_config\": %s", v->name, sqlite3_errmsg(v->db));
        return rc;
    }
    sqlite3_int64 dims = 0, chunk = 0;
    char *metric = NULL;
    while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        int integer = sqlite3_column_type(s, 1) == SQLITE_INTEGER;
        if (!key) continue;
        if (!strcmp(key, "dims")) dims = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "chunk_size")) chunk = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "metric")) rc = config_text(s, &metric);
        else if (!strcmp(key, "model")) rc = config_text(s, &v->model);
        else if (!strcmp(key, "fingerprint") && sqlite3_column_type(s, 1) == SQLITE_TEXT)
            snprintf(v->fingerprint, sizeof v->fingerprint, "%s", sqlite3_column_text(s, 1));
    }
    int step_rc = sqlite3_finalize(s);
    if (rc == SQLITE_OK && step_rc != SQLITE_OK) rc = ix_sql_error(v, step_rc);
    if (rc == SQLITE_OK) {
        if (dims < 1 || dims > MAX_DIMS)
            rc = ix_corrupt(v, "config", "dims must be an integer from 1 to %d", MAX_DIMS);
        else if (chunk < 1 || chunk > MAX_CHUNK_ROWS || chunk * dims * (sqlite3_int64)sizeof(float) > MAX_CHUNK_BYTES)
            rc = ix_corrupt(v, "config", "chunk_size must be an integer from 1 to %d, with at most "
                                         "%d bytes of vectors per chunk", MAX_CHUNK_ROWS, MAX_CHUNK_BYTES);
        else if (!metric || emb_metric_parse(metric, &v->metric))
            rc = ix_corrupt(v, "config", "metric must be cosine, l2, dot or l1");
    }
    sqlite3_free(metric);
    if (rc != SQLITE_OK) return rc;
    v->dims = (int)dims;
    v->chunk = (int)chunk;
    v->configured = 1;
    return SQLITE_OK;
}

int ix_get_config(idx_vtab *v, const char *key, sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_GET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER) {
        *out = sqlite3_column_int64(s, 0);
        sqlite3_reset(s);
        return SQLITE_OK;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return ix_sql_error(v, rc);
    return ix_corrupt(v, "config", rc == SQLITE_ROW ? "'%s' is not an integer" : "'%s' is missing", key);
}

/* NAME_chunks holds exactly the chunks 0 .. ceil(count / chunk_size) - 1. */
static int check_chunk_span(idx_vtab *v, sqlite3_int64 count) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_CHUNK_SPAN, &rc);
    if (!s) return rc;
    sqlite3_int64 want = (count + v->chunk - 1) / v->chunk, n = -1, lo = 0, hi = -1;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        n = sqlite3_column_int64(s, 0);
        lo = sqlite3_column_int64(s, 1);
        hi = sqlite3_column_int64(s, 2);
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW) return ix_sql_error(v, rc);
    if (n != want || (n && (lo != 0 || hi != n - 1)))
        return ix_corrupt(v, "chunks", "it has %lld chunks numbered %lld to %lld, but the count of "
                                       "%lld vectors needs chunks 0 to %lld",
                          (long long)n, (long long)lo, (long long)hi, (long long)count, (long long)want - 1);
    return SQLITE_OK;
}

int ix_count(idx_vtab *v, sqlite3_int64 *count) {
    int rc = ix_get_config(v, "count", count);
    /* every size computed from count must fit: count * dims * 4 bytes well within size_t */
    sqlite3_int64 most = ((sqlite3_int64)1 << 40) / v->dims;
    if (rc == SQLITE_OK && (*count < 0 || *count > most))
        return ix_corrupt(v, "config", "count %lld is not a number of vectors from 0 to %lld",
                          (long long)*count, (long long)most);
    return rc == SQLITE_OK ? check_chunk_span(v, *count) : rc;
}

int ix_set_config(idx_vtab *v, const char *key, sqlite3_int64 value) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_SET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, value);
    return ix_run(v, s);
}

int ix_chunk_io(idx_vtab *v, sqlite3_int64 chunk, const char *col, void *buf, size_t bytes,
                size_t offset, int write) {
    char *table = sqlite3_mprintf("%s_chunks", v->name);
    if (!table) return SQLITE_NOMEM;
    sqlite3_blob *b = NULL;
    int rc = sqlite3_blob_open(v->db, v->schema, table, col, chunk, write, &b);
    sqlite3_free(table);
    if (rc == SQLITE_OK)
        rc = write ? sqlite3_blob_write(b, buf, (int)bytes, (int)offset)
                   : sqlite3_blob_read(b, buf, (int)bytes, (int)offset);
    if (rc != SQLITE_OK) ix_sql_error(v, rc);
    sqlite3_blob_close(b);
    return rc;
}

/* ---------- the connection's copy of the vectors ---------- */

void ix_cache_release(idx_cache *c) {
    if (!c || --c->refs > 0) return;
    emb_vec_array_free(&c->a);
    sqlite3_free(c);
}

void ix_drop_cache(idx_vtab *v) {
    ix_cache_release(v->cache);
    v->cache = NULL;
}

int ix_version(idx_vtab *v, sqlite3_int64 *ver) {
    return ix_get_config(v, "version", ver);
}

/* The connection's own writes keep its cache in step when the cache holds exactly the `count`
 * vectors of the chunks and no cursor shares it; otherwise the cache is dropped and the next
 * query reloads it. (Rollbacks drop it too: xRollback, xRollbackTo.) */
static idx_cache *cache_for_write(idx_vtab *v, sqlite3_int64 count) {
    sqlite3_int64 ver;
    /* another connection may have committed since the cache was filled: inside this write
     * transaction the stored version is the last committed one */
    if (v->cache && (v->cache->refs != 1 || v->cache->a.n != (size_t)count ||
                     ix_version(v, &ver) != SQLITE_OK || ver != v->cache->version))
        ix_drop_cache(v);
    return v->cache;
}

/* Mirrors an append of n vectors at positions count .. count+n-1. */
static void cache_append(idx_vtab *v, sqlite3_int64 count, const int64_t *ids, const float *vecs,
                         size_t n) {
    idx_cache *c = cache_for_write(v, count);
    if (c && emb_vec_array_append(&c->a, ids, vecs, n)) ix_drop_cache(v);
}

void ix_cache_remove(idx_vtab *v, sqlite3_int64 count, sqlite3_int64 loc) {
    idx_cache *c = cache_for_write(v, count);
    if (c) emb_vec_array_remove(&c->a, (size_t)loc);
}

/* ---------- placing pending rows in chunks ---------- */

/* Writes n vectors (with their rowids) at positions count .. count+n-1 and records them. */
static int append_vectors(idx_vtab *v, const int64_t *ids, const float *vecs, size_t n) {
    sqlite3_int64 count;
    int rc = ix_count(v, &count);
    size_t d = (size_t)v->dims, ch = (size_t)v->chunk;
    size_t i = 0;
    while (rc == SQLITE_OK && i < n) {
        sqlite3_int64 loc = count + (sqlite3_int64)i;
        sqlite3_int64 chunk = loc / v->chunk;
        size_t slot = (size_t)(loc % v->chunk);
        size_t take = ch - slot < n - i ? ch - slot : n - i;
        if (slot == 0) {
            sqlite3_stmt *s = ix_stmt(v, ST_NEW_CHUNK, &rc);
            if (!s) break;
            sqlite3_bind_int64(s, 1, chunk);
            sqlite3_bind_int64(s, 2, (sqlite3_int64)(ch * sizeof(sqlite3_int64)));
            sqlite3_bind_int64(s, 3, (sqlite3_int64)(ch * d * sizeof(float)));
            if ((rc = ix_run(v, s)) != SQLITE_OK) break;
        }
        rc = ix_chunk_io(v, chunk, "vectors", (void *)(vecs + i * d), take * d * sizeof(float),
                      slot * d * sizeof(float), 1);
        if (rc == SQLITE_OK)
            rc = ix_chunk_io(v, chunk, "rowids", (void *)(ids + i), take * sizeof(sqlite3_int64),
                          slot * sizeof(sqlite3_int64), 1);
        sqlite3_stmt *s = rc == SQLITE_OK ? ix_stmt(v, ST_SET_LOC, &rc) : NULL;
        for (size_t j = 0; s && rc == SQLITE_OK && j < take; j++) {
            sqlite3_bind_int64(s, 1, ids[i + j]);
            sqlite3_bind_int64(s, 2, loc + (sqlite3_int64)j);
            rc = ix_run(v, s);
        }
        i += take;
    }
    if (rc == SQLITE_OK) rc = ix_set_config(v, "count", count + (sqlite3_int64)n);
    if (rc == SQLITE_OK) cache_append(v, count, ids, vecs, n);
    else ix_drop_cache(v);
    return rc;
}

int ix_flush(idx_vtab *v) {
    if (!v->pending) return SQLITE_OK;
    int rc = ix_config(v);
    if (rc != SQLITE_OK) return rc;
    sqlite3_stmt *s = ix_stmt(v, ST_READ_PENDING, &rc);
    if (!s) return rc;
    size_t cap = 0, n = 0, nt = 0, d = (size_t)v->dims;
    int64_t *ids = NULL;
    float *vecs = NULL;
    char **texts = NULL;   /* texts to embed, owned */
    size_t *lens = NULL, *text_row = NULL;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            int64_t *ni = realloc(ids, cap * sizeof *ni);
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
            rc = ix_corrupt(v, "pending", "rowid %lld has neither a vector of %lld bytes nor a text to "
                                          "embed", (long long)ids[n], (long long)(d * sizeof(float)));
            break;
        }
        n++;
    }
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    else if (rc != SQLITE_OK && rc != SQLITE_NOMEM && rc != SQLITE_CORRUPT_VTAB && rc != SQLITE_ERROR)
        rc = ix_sql_error(v, rc);
    float *out = NULL;
    if (rc == SQLITE_OK && nt) {
        out = malloc(nt * d * sizeof *out);
        if (!out) rc = SQLITE_NOMEM;
        else rc = ix_embed_texts(v, (const char *const *)texts, lens, nt, out);
        for (size_t i = 0; rc == SQLITE_OK && i < nt; i++)
            memcpy(vecs + text_row[i] * d, out + i * d, d * sizeof(float));
    }
    if (rc == SQLITE_OK && n) rc = append_vectors(v, ids, vecs, n);
    if (rc == SQLITE_OK && n) {
        sqlite3_stmt *c = ix_stmt(v, ST_CLEAR_PENDING, &rc);
        if (c) rc = ix_run(v, c);
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

/* ---------- filling the copy ---------- */

/* Every row with a position has its own position, inside the array, whose rowid is the row's,
 * and every position has a row: NAME_rows and NAME_chunks agree. */
static int check_rows_against(idx_vtab *v, const emb_vec_array *a) {
    int rc = SQLITE_OK;
    sqlite3_stmt *s = ix_stmt(v, ST_ROW_LOCS, &rc);
    if (!s) return rc;
    unsigned char *seen = sqlite3_malloc64(a->n / 8 + 1);
    if (!seen) return SQLITE_NOMEM;
    memset(seen, 0, a->n / 8 + 1);
    size_t rows = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        sqlite3_int64 id = sqlite3_column_int64(s, 0), loc = sqlite3_column_int64(s, 1);
        if (sqlite3_column_type(s, 1) != SQLITE_INTEGER || loc < 0 || (size_t)loc >= a->n)
            rc = ix_corrupt(v, "rows", "rowid %lld has position %s, outside the %lld vectors", (long long)id,
                            sqlite3_column_text(s, 1), (long long)a->n);
        else if (seen[loc / 8] & (1u << (loc % 8)))
            rc = ix_corrupt(v, "rows", "two rows have position %lld", (long long)loc);
        else if (a->ids[loc] != id)
            rc = ix_corrupt(v, "chunks", "position %lld holds rowid %lld, but \"%s_rows\" puts rowid "
                                         "%lld there", (long long)loc, (long long)a->ids[loc], v->name,
                            (long long)id);
        else {
            seen[loc / 8] |= (unsigned char)(1u << (loc % 8));
            rows++;
        }
    }
    sqlite3_reset(s);
    sqlite3_free(seen);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    else if (rc != SQLITE_OK && rc != SQLITE_CORRUPT_VTAB && rc != SQLITE_NOMEM) return ix_sql_error(v, rc);
    if (rc == SQLITE_OK && rows != a->n)
        rc = ix_corrupt(v, "rows", "it places %lld rows, but \"%s_config\" counts %lld vectors",
                        (long long)rows, v->name, (long long)a->n);
    return rc;
}

/* Reads the chunks into a, straight from their pages with incremental blob I/O: one copy. */
static int read_chunks(idx_vtab *v, emb_vec_array *a, size_t n) {
    size_t d = (size_t)v->dims, ch = (size_t)v->chunk, chunks = (n + ch - 1) / ch;
    char *table = sqlite3_mprintf("%s_chunks", v->name);
    sqlite3_blob *bv = NULL, *br = NULL;
    int rc = table ? SQLITE_OK : SQLITE_NOMEM;
    for (size_t id = 0; rc == SQLITE_OK && id < chunks; id++) {
        size_t rows = id + 1 == chunks ? n - id * ch : ch;
        if (id == 0) {
            rc = sqlite3_blob_open(v->db, v->schema, table, "vectors", 0, 0, &bv);
            if (rc == SQLITE_OK) rc = sqlite3_blob_open(v->db, v->schema, table, "rowids", 0, 0, &br);
        } else {
            rc = sqlite3_blob_reopen(bv, (sqlite3_int64)id);
            if (rc == SQLITE_OK) rc = sqlite3_blob_reopen(br, (sqlite3_int64)id);
        }
        if (rc != SQLITE_OK) {
            rc = ix_corrupt(v, "chunks", "chunk %lld cannot be read: %s", (long long)id, sqlite3_errmsg(v->db));
        } else if ((size_t)sqlite3_blob_bytes(bv) != ch * d * sizeof(float) ||
                   (size_t)sqlite3_blob_bytes(br) != ch * sizeof(sqlite3_int64)) {
            rc = ix_corrupt(v, "chunks", "chunk %lld has %d bytes of vectors and %d of rowids, not %lld "
                                         "and %lld", (long long)id, sqlite3_blob_bytes(bv),
                            sqlite3_blob_bytes(br), (long long)(ch * d * sizeof(float)),
                            (long long)(ch * sizeof(sqlite3_int64)));
        } else {
            rc = sqlite3_blob_read(bv, a->vecs + id * ch * d, (int)(rows * d * sizeof(float)), 0);
            if (rc == SQLITE_OK) rc = sqlite3_blob_read(br, a->ids + id * ch, (int)(rows * sizeof(sqlite3_int64)), 0);
            if (rc != SQLITE_OK) rc = ix_sql_error(v, rc);
        }
    }
    sqlite3_blob_close(bv);
    sqlite3_blob_close(br);
    sqlite3_free(table);
    return rc;
}

int ix_ensure_cache(idx_vtab *v) {
    int rc = ix_flush(v);
    sqlite3_int64 ver, count;
    if (rc == SQLITE_OK) rc = ix_version(v, &ver);
    if (rc != SQLITE_OK) return rc;
    if (v->cache && v->cache->version == ver) return SQLITE_OK;
    ix_drop_cache(v);
    /* every number read from the shadow tables is checked before it sizes anything */
    if ((rc = ix_count(v, &count)) != SQLITE_OK) return rc;
    size_t n = (size_t)count;
    idx_cache *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    c->refs = 1;
    c->version = ver;
    if (emb_vec_array_init(&c->a, (size_t)v->dims, v->metric, n)) {
        sqlite3_free(c);
        return SQLITE_NOMEM;
    }
    rc = read_chunks(v, &c->a, n);
    if (rc == SQLITE_OK) {
        c->a.n = n; /* for the check; extend computes the norms after it */
        rc = check_rows_against(v, &c->a);
        c->a.n = 0;
    }
    if (rc != SQLITE_OK) {
        ix_cache_release(c);
        return rc;
    }
    emb_vec_array_extend(&c->a, n);
    v->cache = c;
    return SQLITE_OK;
}
