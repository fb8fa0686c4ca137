/* embed_index's storage: statements on the shadow tables, the config, chunk I/O, placing
 * pending rows in chunks, and the connection's in-memory copy of the vectors (filled from
 * the chunks, kept in step with the connection's own writes, dropped when another
 * connection's commit changes the version). */
#include "ext_index.h"
#include <stdarg.h>
#include <stdint.h>
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
};

sqlite3_stmt *ix_stmt(idx_vtab *v, int id, int *rc) {
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
    ix_error(v, "shadow table \"%s_config\" lacks '%s': the index is corrupt", v->name, key);
    return SQLITE_CORRUPT_VTAB;
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
    int rc = ix_get_config(v, "count", &count);
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
    int rc;
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
            rc = ix_error(v, "shadow table \"%s_pending\" has a bad row (id %lld): the index is "
                             "corrupt", v->name, (long long)ids[n]);
            rc = SQLITE_CORRUPT_VTAB;
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

int ix_ensure_cache(idx_vtab *v) {
    int rc = ix_flush(v);
    sqlite3_int64 ver, count;
    if (rc == SQLITE_OK) rc = ix_version(v, &ver);
    if (rc != SQLITE_OK) return rc;
    if (v->cache && v->cache->version == ver) return SQLITE_OK;
    ix_drop_cache(v);
    if ((rc = ix_get_config(v, "count", &count)) != SQLITE_OK) return rc;
    size_t n = (size_t)count, d = (size_t)v->dims, ch = (size_t)v->chunk;
    idx_cache *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    c->refs = 1;
    c->version = ver;
    if (emb_vec_array_init(&c->a, d, v->metric, n)) {
        sqlite3_free(c);
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
        if (rc == SQLITE_OK) rc = sqlite3_blob_read(bv, c->a.vecs + id * ch * d, (int)(rows * d * sizeof(float)), 0);
        if (rc == SQLITE_OK) rc = sqlite3_blob_read(br, c->a.ids + id * ch, (int)(rows * sizeof(sqlite3_int64)), 0);
    }
    sqlite3_blob_close(bv);
    sqlite3_blob_close(br);
    sqlite3_free(table);
    if (rc == SQLITE_CORRUPT_VTAB || rc == SQLITE_ERROR)
        ix_error(v, "shadow table \"%s_chunks\" does not match the count in \"%s_config\": the "
                    "index is corrupt", v->name, v->name);
    if (rc == SQLITE_ERROR) rc = SQLITE_CORRUPT_VTAB;
    if (rc != SQLITE_OK) {
        ix_cache_release(c);
        return rc;
    }
    emb_vec_array_extend(&c->a, n);
    v->cache = c;
    return SQLITE_OK;
}

