/* embed_index's storage: vectors at dense positions 0 .. count-1 of NAME_chunks, each row's
 * position in NAME_rows, and the checks that these agree with each other and with
 * NAME_config before any number read from them sizes anything. */
#include "ext_index.h"
#include <string.h>

int ix_read_vector(ix_vtab *v, sqlite3_value *val, const char *what, ext_vec *out) {
    char *err;
    ext_rc r = ext_value_vector(val, what, out, &err);
    if (r == EXT_NULL)
        return ix_error(v, "%s must be a vector (float32 blob or JSON array), not NULL", what);
    if (r == EXT_ERROR) {
        if (!err) return SQLITE_NOMEM;
        ix_error(v, "%s", err);
        sqlite3_free(err);
        return SQLITE_ERROR;
    }
    return ix_check_vector(v, what, out);
}

int ix_check_vector(ix_vtab *v, const char *what, ext_vec *out) {
    if (out->n != (size_t)v->dims) {
        int rc = ix_error(v, "%s has %lld dimensions, but \"%s\" holds vectors of %d", what,
                          (long long)out->n, v->name, v->dims);
        ext_vec_free(out);
        return rc;
    }
    if (v->metric == EMB_METRIC_COSINE && emb_vec_norm2(out->v, out->n) == 0.0) {
        ext_vec_free(out);
        return ix_error(v, "%s is a zero vector, which has no direction (the index's metric is "
                           "cosine)", what);
    }
    return SQLITE_OK;
}

/* ---------- counts and positions, checked ---------- */

/* NAME_chunks holds exactly the chunks 0 .. ceil(count / chunk_size) - 1. */
static int check_chunk_span(ix_vtab *v, sqlite3_int64 count) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, STMT_CHUNK_SPAN, &rc);
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

int ix_count(ix_vtab *v, sqlite3_int64 *count) {
    int rc = ix_get_config(v, "count", count);
    /* every size computed from count must fit: count * dims * 4 bytes well within size_t */
    sqlite3_int64 most = ((sqlite3_int64)1 << 40) / v->dims;
    if (rc == SQLITE_OK && (*count < 0 || *count > most))
        return ix_corrupt(v, "config", "count %lld is not a number of vectors from 0 to %lld",
                          (long long)*count, (long long)most);
    return rc == SQLITE_OK ? check_chunk_span(v, *count) : rc;
}

int ix_find_row(ix_vtab *v, sqlite3_int64 rowid, int *found, int *pending, sqlite3_int64 *loc) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, STMT_GET_ROW, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    rc = sqlite3_step(s);
    *found = rc == SQLITE_ROW;
    *pending = *found && sqlite3_column_type(s, 0) == SQLITE_NULL;
    *loc = *found ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : ix_sql_error(v, rc);
}

/* ---------- chunk I/O ---------- */

/* Incremental blob I/O on one chunk's column ("rowids" or "vectors"). */
static int chunk_io(ix_vtab *v, sqlite3_int64 chunk, const char *col, void *buf, size_t bytes,
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

/* The vector (and, when id is not NULL, the rowid) at position loc, read or written. */
static int vector_io(ix_vtab *v, sqlite3_int64 loc, float *vec, sqlite3_int64 *id, int write) {
    size_t bytes = (size_t)v->dims * sizeof(float), slot = (size_t)(loc % v->chunk);
    int rc = chunk_io(v, loc / v->chunk, "vectors", vec, bytes, slot * bytes, write);
    if (rc == SQLITE_OK && id) rc = chunk_io(v, loc / v->chunk, "rowids", id, sizeof *id, slot * sizeof *id, write);
    return rc;
}

int ix_read_vector_at(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc, float *out) {
    if (loc < 0) return ix_corrupt(v, "rows", "rowid %lld has position %lld", rowid, loc);
    return vector_io(v, loc, out, NULL, 0);
}

static int set_loc(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, STMT_SET_LOC, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    sqlite3_bind_int64(s, 2, loc);
    return ix_run(v, s);
}

/* ---------- placing and removing ---------- */

int ix_place(ix_vtab *v, const int64_t *ids, const float *vecs, const emb_meta_column *meta, size_t n) {
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
            sqlite3_stmt *s = ix_stmt(v, STMT_NEW_CHUNK, &rc);
            if (!s) break;
            sqlite3_bind_int64(s, 1, chunk);
            sqlite3_bind_int64(s, 2, (sqlite3_int64)(ch * sizeof(sqlite3_int64)));
            sqlite3_bind_int64(s, 3, (sqlite3_int64)(ch * d * sizeof(float)));
            if ((rc = ix_run(v, s)) != SQLITE_OK) break;
        }
        rc = chunk_io(v, chunk, "vectors", (void *)(vecs + i * d), take * d * sizeof(float),
                      slot * d * sizeof(float), 1);
        if (rc == SQLITE_OK)
            rc = chunk_io(v, chunk, "rowids", (void *)(ids + i), take * sizeof(sqlite3_int64),
                          slot * sizeof(sqlite3_int64), 1);
        for (size_t j = 0; rc == SQLITE_OK && j < take; j++) rc = set_loc(v, ids[i + j], loc + (sqlite3_int64)j);
        i += take;
    }
    if (rc == SQLITE_OK) rc = ix_set_config(v, "count", count + (sqlite3_int64)n);
    sqlite3_int64 ver;
    if (rc == SQLITE_OK && v->cache && (meta || !v->n_meta) && ix_version(v, &ver) == SQLITE_OK)
        ix_cache_append(v, ver, count, ids, vecs, meta, n);
    else ix_drop_cache(v);
    return rc;
}

int ix_unplace(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc) {
    sqlite3_int64 count;
    int rc = ix_count(v, &count);
    if (rc != SQLITE_OK) return rc;
    if (loc < 0 || loc >= count)
        return ix_corrupt(v, "rows", "rowid %lld has position %lld, outside the %lld vectors", rowid,
                          loc, count);
    sqlite3_int64 last = count - 1;
    if (loc != last) {
        float *buf = sqlite3_malloc64((size_t)v->dims * sizeof(float));
        sqlite3_int64 moved;
        if (!buf) return SQLITE_NOMEM;
        rc = vector_io(v, last, buf, &moved, 0);
        if (rc == SQLITE_OK) rc = vector_io(v, loc, buf, &moved, 1);
        if (rc == SQLITE_OK) rc = set_loc(v, moved, loc);
        sqlite3_free(buf);
    }
    sqlite3_stmt *s;
    if (rc == SQLITE_OK && last % v->chunk == 0 && (s = ix_stmt(v, STMT_DELETE_CHUNK, &rc)) != NULL) {
        sqlite3_bind_int64(s, 1, last / v->chunk);
        rc = ix_run(v, s);
    }
    if (rc == SQLITE_OK) rc = ix_set_config(v, "count", last);
    sqlite3_int64 ver;
    if (rc == SQLITE_OK && v->cache && ix_version(v, &ver) == SQLITE_OK)
        ix_cache_remove(v, ver, count, loc);
    else ix_drop_cache(v);
    return rc;
}

/* ---------- reading everything, checked ---------- */

emb_value ix_column_value(sqlite3_stmt *s, int col) {
    emb_value x = {.type = EMB_NULL};
    switch (sqlite3_column_type(s, col)) {
    case SQLITE_INTEGER: x.type = EMB_INT, x.i = sqlite3_column_int64(s, col); break;
    case SQLITE_FLOAT: x.type = EMB_REAL, x.r = sqlite3_column_double(s, col); break;
    case SQLITE_TEXT:
        x.type = EMB_TEXT;
        x.p = sqlite3_column_text(s, col);
        x.n = (size_t)sqlite3_column_bytes(s, col);
        break;
    case SQLITE_BLOB:
        x.type = EMB_BLOB;
        x.p = sqlite3_column_blob(s, col);
        x.n = (size_t)sqlite3_column_bytes(s, col);
        break;
    default: break;
    }
    return x;
}

/* Every row with a position has its own position, inside the array, whose rowid is the row's,
 * and every position has a row: NAME_rows and NAME_chunks agree. The rows' metadata goes into
 * meta (n_meta columns, reset to n rows) on the way. */
static int check_rows_against(ix_vtab *v, const int64_t *ids, size_t n, emb_meta_column *meta) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, STMT_ROW_LOCS, &rc);
    if (!s) return rc;
    unsigned char *seen = sqlite3_malloc64(n / 8 + 1);
    if (!seen) return SQLITE_NOMEM;
    memset(seen, 0, n / 8 + 1);
    size_t rows = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        sqlite3_int64 id = sqlite3_column_int64(s, 0), loc = sqlite3_column_int64(s, 1);
        if (sqlite3_column_type(s, 1) != SQLITE_INTEGER || loc < 0 || (size_t)loc >= n)
            rc = ix_corrupt(v, "rows", "rowid %lld has position %s, outside the %lld vectors", (long long)id,
                            sqlite3_column_text(s, 1), (long long)n);
        else if (seen[loc / 8] & (1u << (loc % 8)))
            rc = ix_corrupt(v, "rows", "two rows have position %lld", (long long)loc);
        else if (ids[loc] != id)
            rc = ix_corrupt(v, "chunks", "position %lld holds rowid %lld, but \"%s_rows\" puts rowid "
                                         "%lld there", (long long)loc, (long long)ids[loc], v->name,
                            (long long)id);
        else {
            seen[loc / 8] |= (unsigned char)(1u << (loc % 8));
            rows++;
            for (int j = 0; j < v->n_meta && rc == SQLITE_OK; j++) {
                emb_value x = ix_column_value(s, 2 + j);
                if (emb_meta_column_set(&meta[j], (size_t)loc, &x)) rc = SQLITE_NOMEM;
            }
        }
    }
    sqlite3_reset(s);
    sqlite3_free(seen);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    else if (rc != SQLITE_OK && rc != SQLITE_CORRUPT_VTAB && rc != SQLITE_NOMEM) return ix_sql_error(v, rc);
    if (rc == SQLITE_OK && rows != n)
        rc = ix_corrupt(v, "rows", "it places %lld rows, but \"%s_config\" counts %lld vectors",
                        (long long)rows, v->name, (long long)n);
    return rc;
}

/* Reads the chunks into a, straight from their pages with incremental blob I/O: one copy. */
static int read_chunks(ix_vtab *v, emb_vec_array *a, size_t n) {
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

int ix_read_all(ix_vtab *v, ix_cache *c, sqlite3_int64 count) {
    size_t n = (size_t)count;
    int rc = read_chunks(v, &c->a, n);
    if (rc == SQLITE_OK && v->n_meta) {
        c->meta = sqlite3_malloc64((size_t)v->n_meta * sizeof *c->meta);
        if (!c->meta) return SQLITE_NOMEM;
        memset(c->meta, 0, (size_t)v->n_meta * sizeof *c->meta);
        c->n_meta = v->n_meta;
        for (int j = 0; j < v->n_meta && rc == SQLITE_OK; j++)
            if (emb_meta_column_reset(&c->meta[j], n)) rc = SQLITE_NOMEM;
    }
    if (rc == SQLITE_OK) rc = check_rows_against(v, c->a.ids, n, c->meta);
    if (rc == SQLITE_OK) emb_vec_array_extend(&c->a, n); /* the norms, now that the rows are known good */
    return rc;
}
