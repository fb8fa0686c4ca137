/* embed_index's storage: vectors at dense positions 0 .. count-1 of NAME_chunks, each row's
 * position in NAME_rows, and the checks that these agree with each other and with
 * NAME_config before any number read from them sizes anything. */
#include "ix.h"
#include <string.h>

/* A sqlite-vec bit vector, for an index of sign bits: bit i set is +1, else -1, the vector
 * whose sign bits are exactly those bits. */
static int read_bits(ix_vtab *v, sqlite3_value *val, const char *what, ext_vec *out) {
    size_t bytes = (size_t)sqlite3_value_bytes(val), want = ((size_t)v->dims + 7) / 8;
    if (bytes != want)
        return ix_error(v,
                        "%s is a bit vector of %lld bytes, but \"%s\" holds vectors of %d dimensions "
                        "(%lld bytes of bits)",
                        what, (long long)bytes, v->name, v->dims, (long long)want);
    if (!(out->buf = sqlite3_malloc64((size_t)v->dims * sizeof(float)))) return SQLITE_NOMEM;
    emb_decode(EMB_STORAGE_BIT, sqlite3_value_blob(val), (size_t)v->dims, out->buf);
    out->v = out->buf;
    out->n = (size_t)v->dims;
    return SQLITE_OK;
}

int ix_read_vector(ix_vtab *v, sqlite3_value *val, const char *what, ext_vec *out) {
    char *err;
    memset(out, 0, sizeof *out);
    if (v->storage == EMB_STORAGE_BIT && sqlite3_value_type(val) == SQLITE_BLOB &&
        sqlite3_value_subtype(val) == EMBED_VEC_BIT_SUBTYPE)
        return read_bits(v, val, what, out);
    ext_rc r = ext_value_vector(val, what, out, &err);
    if (r == EXT_NULL) return ix_error(v, "%s must be a vector (float32 blob or JSON array), not NULL", what);
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
        int rc = ix_error(v, "%s has %lld dimensions, but \"%s\" holds vectors of %d", what, (long long)out->n,
                          v->name, v->dims);
        ext_vec_free(out);
        return rc;
    }
    if (v->metric == EMB_METRIC_COSINE && emb_vec_norm2(out->v, out->n) == 0.0) {
        ext_vec_free(out);
        return ix_error(v,
                        "%s is a zero vector, which has no direction (the index's metric is "
                        "cosine)",
                        what);
    }
    return SQLITE_OK;
}

/* ---------- counts and positions, checked ---------- */

/* NAME_chunks holds exactly the chunks 0 .. ceil(count / chunk_size) - 1. */
static int check_chunk_span(ix_vtab *v, sqlite3_int64 count) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_CHUNK_SPAN, &rc);
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
        return ix_corrupt(v, "chunks",
                          "it has %lld chunks numbered %lld to %lld, but the count of "
                          "%lld vectors needs chunks 0 to %lld",
                          (long long)n, (long long)lo, (long long)hi, (long long)count, (long long)want - 1);
    return SQLITE_OK;
}

int ix_count(ix_vtab *v, sqlite3_int64 *count) {
    int rc = ix_get_config(v, "count", count);
    /* every size computed from count must fit: count * dims * 4 bytes well within size_t */
    sqlite3_int64 most = ((sqlite3_int64)1 << 40) / v->dims;
    if (rc == SQLITE_OK && (*count < 0 || *count > most))
        return ix_corrupt(v, "config", "count %lld is not a number of vectors from 0 to %lld", (long long)*count,
                          (long long)most);
    return rc == SQLITE_OK ? check_chunk_span(v, *count) : rc;
}

int ix_find_row(ix_vtab *v, sqlite3_int64 rowid, int *found, int *pending, sqlite3_int64 *loc) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_ROW, &rc);
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

/* Incremental blob I/O on one chunk's column ("rowids", "vectors" or "lists"). */
static int chunk_io(ix_vtab *v, sqlite3_int64 chunk, const char *col, void *buf, size_t bytes, size_t offset,
                    int write) {
    char *table = sqlite3_mprintf("%s_chunks", v->name);
    if (!table) return SQLITE_NOMEM;
    sqlite3_blob *b = NULL;
    int rc = sqlite3_blob_open(v->db, v->schema, table, col, chunk, write, &b);
    sqlite3_free(table);
    /* SQLITE_ERROR: no such chunk, or its column is not a BLOB; too short a BLOB is damage too
     * (sqlite3_blob_read past its end says only "SQL logic error") */
    if (rc == SQLITE_ERROR) rc = ix_corrupt(v, "chunks", "chunk %lld has no %s BLOB", (long long)chunk, col);
    else if (rc == SQLITE_OK && (size_t)sqlite3_blob_bytes(b) < offset + bytes)
        rc = ix_corrupt(v, "chunks", "chunk %lld's %s BLOB of %d bytes is too short for its positions",
                        (long long)chunk, col, sqlite3_blob_bytes(b));
    else if (rc == SQLITE_OK)
        rc = write ? sqlite3_blob_write(b, buf, (int)bytes, (int)offset)
                   : sqlite3_blob_read(b, buf, (int)bytes, (int)offset);
    if (rc != SQLITE_OK && rc != SQLITE_CORRUPT_VTAB) ix_sql_error(v, rc);
    sqlite3_blob_close(b);
    return rc;
}

/* One position's record, rowid and IVF list (list + 1 as stored), read or written. */
typedef struct {
    unsigned char *rec;
    sqlite3_int64 id;
    int32_t list1;
} slot_data;

static int slot_io(ix_vtab *v, sqlite3_int64 loc, slot_data *x, int write) {
    sqlite3_int64 chunk = loc / v->chunk;
    size_t slot = (size_t)(loc % v->chunk);
    int rc = chunk_io(v, chunk, "vectors", x->rec, v->rec, slot * v->rec, write);
    if (rc == SQLITE_OK) rc = chunk_io(v, chunk, "rowids", &x->id, sizeof x->id, slot * sizeof x->id, write);
    if (rc == SQLITE_OK && v->ivf)
        rc = chunk_io(v, chunk, "lists", &x->list1, sizeof x->list1, slot * sizeof x->list1, write);
    return rc;
}

/* A chunk changed: it gets a new version, so that copies read it again (format 2). */
int ix_touch_chunk(ix_vtab *v, sqlite3_int64 chunk) {
    if (v->format == IX_FORMAT_V1) return SQLITE_OK;
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_SET_CHUNK_VER, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, chunk);
    sqlite3_bind_int64(s, 2, ix_new_chunk_ver());
    return ix_run(v, s);
}

/* The float32 vector kept in NAME_vectors for a row of compact storage. */
static int stored_float(ix_vtab *v, sqlite3_int64 rowid, float *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_VECTOR, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    size_t bytes = (size_t)v->dims * sizeof(float);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW && (size_t)sqlite3_column_bytes(s, 0) == bytes) {
        memcpy(out, sqlite3_column_blob(s, 0), bytes);
        rc = emb_codes_finite(EMB_STORAGE_F32, out, 1, (size_t)v->dims)
                 ? SQLITE_OK
                 : ix_corrupt(v, "vectors", "rowid %lld has a vector that is not finite", (long long)rowid);
    } else if (step == SQLITE_ROW || step == SQLITE_DONE) {
        rc = ix_corrupt(v, "vectors", "rowid %lld has %s", (long long)rowid,
                        step == SQLITE_ROW ? "a vector of the wrong size" : "no vector");
    } else {
        rc = ix_sql_error(v, step);
    }
    sqlite3_reset(s);
    return rc;
}

int ix_read_vector_at(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc, float *out, int *exact) {
    if (exact) *exact = 1;
    if (loc < 0) return ix_corrupt(v, "rows", "rowid %lld has position %lld", rowid, loc);
    if (v->storage == EMB_STORAGE_F32) {
        int rc = chunk_io(v, loc / v->chunk, "vectors", out, v->rec, (size_t)(loc % v->chunk) * v->rec, 0);
        if (rc == SQLITE_OK && !emb_codes_finite(EMB_STORAGE_F32, out, 1, (size_t)v->dims))
            rc = ix_corrupt(v, "chunks", "rowid %lld has a vector that is not finite", (long long)rowid);
        return rc;
    }
    if (v->rescore) return stored_float(v, rowid, out);
    unsigned char *rec = sqlite3_malloc64(v->rec);
    if (!rec) return SQLITE_NOMEM;
    int rc = chunk_io(v, loc / v->chunk, "vectors", rec, v->rec, (size_t)(loc % v->chunk) * v->rec, 0);
    if (rc == SQLITE_OK) emb_decode(v->storage, rec, (size_t)v->dims, out);
    sqlite3_free(rec);
    if (exact) *exact = 0;
    return rc;
}

static int set_loc(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_SET_LOC, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    sqlite3_bind_int64(s, 2, loc);
    return ix_run(v, s);
}

/* ---------- placing and removing ---------- */

int ix_read_centroids(ix_vtab *v, emb_ivf *ivf, sqlite3_int64 *serial, size_t *lists) {
    sqlite3_int64 nl;
    *lists = 0;
    int rc = ix_get_config(v, "ivf_lists", &nl);
    if (rc == SQLITE_OK) rc = ix_get_config(v, "ivf_serial", serial);
    if (rc != SQLITE_OK || nl == 0) return rc;
    if (!ix_lists_valid(nl)) return ix_corrupt(v, "config", IX_LISTS_DAMAGE, (long long)nl, IX_MAX_LISTS);
    size_t d = (size_t)v->dims;
    float *c = sqlite3_malloc64((size_t)nl * d * sizeof *c);
    sqlite3_stmt *s = c ? ix_stmt(v, IX_STMT_GET_CENTROIDS, &rc) : NULL;
    if (!c) return SQLITE_NOMEM;
    if (!s) {
        sqlite3_free(c);
        return rc;
    }
    sqlite3_int64 got = 0;
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW && rc == SQLITE_OK) {
        if (sqlite3_column_int64(s, 0) != got || got >= nl ||
            (size_t)sqlite3_column_bytes(s, 1) != d * sizeof(float))
            rc = ix_corrupt(v, "centroids", "row %lld is not centroid %lld of %lld, of %d dimensions",
                            (long long)sqlite3_column_int64(s, 0), (long long)got, (long long)nl, v->dims);
        else if (!emb_codes_finite(EMB_STORAGE_F32, sqlite3_column_blob(s, 1), 1, d))
            rc = ix_corrupt(v, "centroids", "centroid %lld is not finite", (long long)got);
        else memcpy(c + (size_t)got++ * d, sqlite3_column_blob(s, 1), d * sizeof(float));
    }
    sqlite3_reset(s);
    if (rc == SQLITE_OK && step != SQLITE_DONE && step != SQLITE_ROW) rc = ix_sql_error(v, step);
    if (rc == SQLITE_OK && got != nl)
        rc = ix_corrupt(v, "centroids", "it has %lld centroids, but \"%s_config\" counts %lld", (long long)got,
                        v->name, (long long)nl);
    if (rc == SQLITE_OK && emb_ivf_init(ivf, c, (size_t)nl, d, v->metric)) rc = SQLITE_NOMEM;
    sqlite3_free(c);
    if (rc == SQLITE_OK) *lists = (size_t)nl;
    return rc;
}

/* The stored list + 1 of each of n vectors (0 until the IVF is built). The centroids are read
 * once per build (ivf_serial), not at every flush. */
static int assign_lists(ix_vtab *v, const float *vecs, size_t n, int32_t *list1) {
    sqlite3_int64 serial;
    memset(list1, 0, n * sizeof *list1);
    int rc = ix_get_config(v, "ivf_serial", &serial);
    if (rc == SQLITE_OK && (serial != v->placing_serial || !v->placing.lists)) {
        size_t lists;
        emb_ivf_free(&v->placing);
        memset(&v->placing, 0, sizeof v->placing);
        v->placing_serial = 0;
        if ((rc = ix_read_centroids(v, &v->placing, &v->placing_serial, &lists)) != SQLITE_OK) return rc;
    }
    if (rc == SQLITE_OK && v->placing.lists) {
        if (emb_ivf_assign(&v->placing, vecs, n, list1)) rc = SQLITE_NOMEM;
        for (size_t i = 0; rc == SQLITE_OK && i < n; i++) list1[i]++;
    }
    return rc;
}

/* The n vectors as the chunks store them: themselves for f32, else their codes. */
static int encode_records(ix_vtab *v, const float *vecs, size_t n, unsigned char **out) {
    if (v->storage == EMB_STORAGE_F32) {
        *out = (unsigned char *)vecs;
        return SQLITE_OK;
    }
    if (!(*out = sqlite3_malloc64(n * v->rec))) return SQLITE_NOMEM;
    for (size_t i = 0; i < n; i++)
        emb_encode(v->storage, vecs + i * (size_t)v->dims, (size_t)v->dims, *out + i * v->rec);
    return SQLITE_OK;
}

/* Keeps the float32 vectors of compact storage in NAME_vectors. */
static int put_floats(ix_vtab *v, const int64_t *ids, const float *vecs, size_t n) {
    int rc = SQLITE_OK;
    sqlite3_stmt *s = v->rescore ? ix_stmt(v, IX_STMT_PUT_VECTOR, &rc) : NULL;
    for (size_t i = 0; s && rc == SQLITE_OK && i < n; i++) {
        sqlite3_bind_int64(s, 1, ids[i]);
        sqlite3_bind_blob(s, 2, vecs + i * (size_t)v->dims, v->dims * (int)sizeof(float), SQLITE_STATIC);
        rc = ix_run(v, s);
    }
    return rc;
}

int ix_place(ix_vtab *v, const int64_t *ids, const float *vecs, size_t n) {
    sqlite3_int64 count;
    int rc = ix_count(v, &count);
    size_t ch = (size_t)v->chunk, rec = v->rec;
    unsigned char *recs = NULL;
    int32_t *list1 = NULL;
    if (rc == SQLITE_OK) rc = encode_records(v, vecs, n, &recs);
    if (rc == SQLITE_OK && v->ivf)
        rc = (list1 = sqlite3_malloc64(n * sizeof *list1)) ? assign_lists(v, vecs, n, list1) : SQLITE_NOMEM;
    size_t i = 0;
    while (rc == SQLITE_OK && i < n) {
        sqlite3_int64 loc = count + (sqlite3_int64)i;
        sqlite3_int64 chunk = loc / v->chunk;
        size_t slot = (size_t)(loc % v->chunk);
        size_t take = ch - slot < n - i ? ch - slot : n - i;
        if (slot == 0) {
            sqlite3_stmt *s = ix_stmt(v, IX_STMT_NEW_CHUNK, &rc);
            if (!s) break;
            sqlite3_bind_int64(s, 1, chunk);
            sqlite3_bind_int64(s, 2, (sqlite3_int64)(ch * sizeof(sqlite3_int64)));
            sqlite3_bind_int64(s, 3, (sqlite3_int64)(ch * rec));
            sqlite3_bind_int64(s, 4, ix_new_chunk_ver());
            sqlite3_bind_int64(s, 5, v->ivf ? (sqlite3_int64)(ch * sizeof(int32_t)) : 0);
            rc = ix_run(v, s);
        } else {
            rc = ix_touch_chunk(v, chunk);
        }
        if (rc == SQLITE_OK) rc = chunk_io(v, chunk, "vectors", recs + i * rec, take * rec, slot * rec, 1);
        if (rc == SQLITE_OK)
            rc = chunk_io(v, chunk, "rowids", (void *)(ids + i), take * sizeof(sqlite3_int64),
                          slot * sizeof(sqlite3_int64), 1);
        if (rc == SQLITE_OK && v->ivf)
            rc = chunk_io(v, chunk, "lists", list1 + i, take * sizeof *list1, slot * sizeof *list1, 1);
        for (size_t j = 0; rc == SQLITE_OK && j < take; j++) rc = set_loc(v, ids[i + j], loc + (sqlite3_int64)j);
        i += take;
    }
    if (rc == SQLITE_OK) rc = put_floats(v, ids, vecs, n);
    if (rc == SQLITE_OK) rc = ix_set_config(v, "count", count + (sqlite3_int64)n);
    if (recs != (const unsigned char *)vecs) sqlite3_free(recs);
    sqlite3_free(list1);
    return rc;
}

int ix_unplace(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc) {
    sqlite3_int64 count;
    int rc = ix_count(v, &count);
    if (rc != SQLITE_OK) return rc;
    if (loc < 0 || loc >= count)
        return ix_corrupt(v, "rows", "rowid %lld has position %lld, outside the %lld vectors", rowid, loc, count);
    sqlite3_int64 last = count - 1;
    if (loc != last) {
        slot_data x = {.rec = sqlite3_malloc64(v->rec)};
        if (!x.rec) return SQLITE_NOMEM;
        rc = slot_io(v, last, &x, 0);
        if (rc == SQLITE_OK) rc = slot_io(v, loc, &x, 1);
        if (rc == SQLITE_OK) rc = set_loc(v, x.id, loc);
        if (rc == SQLITE_OK) rc = ix_touch_chunk(v, loc / v->chunk);
        sqlite3_free(x.rec);
    }
    sqlite3_stmt *s;
    if (rc == SQLITE_OK && last % v->chunk == 0 && (s = ix_stmt(v, IX_STMT_DELETE_CHUNK, &rc)) != NULL) {
        sqlite3_bind_int64(s, 1, last / v->chunk);
        rc = ix_run(v, s);
    } else if (rc == SQLITE_OK && last / v->chunk != loc / v->chunk) {
        rc = ix_touch_chunk(v, last / v->chunk);
    }
    if (rc == SQLITE_OK && v->rescore && (s = ix_stmt(v, IX_STMT_DELETE_VECTOR, &rc)) != NULL) {
        sqlite3_bind_int64(s, 1, rowid);
        rc = ix_run(v, s);
    }
    if (rc == SQLITE_OK) rc = ix_set_config(v, "count", last);
    return rc;
}

int ix_write_chunk(ix_vtab *v, sqlite3_int64 chunk, const unsigned char *recs, const int64_t *ids,
                   const int32_t *list1, size_t rows) {
    int rc = chunk_io(v, chunk, "vectors", (void *)recs, rows * v->rec, 0, 1);
    if (rc == SQLITE_OK) rc = chunk_io(v, chunk, "rowids", (void *)ids, rows * sizeof *ids, 0, 1);
    if (rc == SQLITE_OK && v->ivf) rc = chunk_io(v, chunk, "lists", (void *)list1, rows * sizeof *list1, 0, 1);
    for (size_t i = 0; rc == SQLITE_OK && i < rows; i++)
        rc = set_loc(v, ids[i], chunk * v->chunk + (sqlite3_int64)i);
    return rc == SQLITE_OK ? ix_touch_chunk(v, chunk) : rc;
}
