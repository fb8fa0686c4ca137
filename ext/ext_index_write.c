/* embed_index's xUpdate: checking a row, turning its vector (given, kept or embedded from
 * its text) into the index's form, and adding and removing rows. Inserted rows go to
 * NAME_pending; ext_index_store.c places them in chunks. */
#include "ext_index.h"
#include "utf8.h"
#include <stdlib.h>
#include <string.h>

#define FLUSH_ROWS 1024
#define FLUSH_BYTES (16 << 20)

int ix_read_vector(idx_vtab *v, sqlite3_value *val, const char *what, ext_vec *out) {
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

/* The index's model, retained, after checking that it is loaded and is the model the index
 * was made with. */
static emb_model *ix_model(idx_vtab *v, int *rc) {
    *rc = SQLITE_ERROR;
    if (!v->model) {
        ix_error(v, "\"%s\" has no model (it was created with dims = %d): give vectors, not text",
                 v->name, v->dims);
        return NULL;
    }
    emb_model *m = ext_registry_get(v->model);
    if (!m) {
        ix_error(v, "model '%s' of \"%s\" is not loaded: load it first with embed_load('%s', path)",
                 v->model, v->name, v->model);
        return NULL;
    }
    const emb_model_info *info = emb_model_get_info(m);
    if (!info->has_vectors || info->hidden != v->dims || strcmp(info->fingerprint, v->fingerprint)) {
        ix_error(v, "model '%s' (fingerprint %s, %d dimensions) is not the model \"%s\" was made "
                    "with (fingerprint %s, %d dimensions)",
                 v->model, info->fingerprint, info->has_vectors ? info->hidden : 0, v->name,
                 v->fingerprint, v->dims);
        emb_model_release(m);
        return NULL;
    }
    *rc = SQLITE_OK;
    return m;
}

int ix_embed_texts(idx_vtab *v, const char *const *texts, const size_t *lens, size_t n, float *out) {
    int rc;
    emb_model *m = ix_model(v, &rc);
    if (!m) return rc;
    char err[EMB_ERR_LEN];
    if (emb_model_embed(m, texts, lens, n, NULL, out, err)) rc = ix_error(v, "%s", err);
    emb_model_release(m);
    if (rc == SQLITE_OK && v->metric == EMB_METRIC_COSINE)
        for (size_t i = 0; i < n; i++)
            if (emb_vec_norm2(out + i * (size_t)v->dims, (size_t)v->dims) == 0.0)
                return ix_error(v, "the text \"%.40s\" embeds to a zero vector, which has no "
                                   "direction (the index's metric is cosine)", texts[i]);
    return rc;
}

static void wrote(idx_vtab *v) {
    v->dirty = 1;
}

/* Looks a row up: *found, and whether its vector is *pending or at position *loc. */
static int find_row(idx_vtab *v, sqlite3_int64 rowid, int *found, int *pending, sqlite3_int64 *loc) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_GET_ROW, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    rc = sqlite3_step(s);
    *found = rc == SQLITE_ROW;
    *pending = *found && sqlite3_column_type(s, 0) == SQLITE_NULL;
    *loc = *found ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : ix_sql_error(v, rc);
}

/* Removes a row (chunked or pending). *found says whether it was there. */
static int remove_row(idx_vtab *v, sqlite3_int64 rowid, int *found) {
    int is_null;
    sqlite3_int64 loc;
    int rc = find_row(v, rowid, found, &is_null, &loc);
    if (rc != SQLITE_OK || !*found) return rc;
    sqlite3_stmt *s;
    wrote(v);
    if (is_null) {
        s = ix_stmt(v, ST_DELETE_PENDING_ROW, &rc);
        if (!s) return rc;
        sqlite3_bind_int64(s, 1, rowid);
        if ((rc = ix_run(v, s)) != SQLITE_OK) return rc;
    } else {
        /* move the last vector into the hole, keeping the chunks dense */
        sqlite3_int64 count;
        if ((rc = ix_get_config(v, "count", &count)) != SQLITE_OK) return rc;
        if (loc < 0 || loc >= count) {
            ix_error(v, "row %lld has position %lld outside the %lld vectors: the index is corrupt",
                     rowid, loc, count);
            return SQLITE_CORRUPT_VTAB;
        }
        sqlite3_int64 last = count - 1;
        size_t bytes = (size_t)v->dims * sizeof(float);
        if (loc != last) {
            float *buf = sqlite3_malloc64(bytes);
            sqlite3_int64 moved;
            if (!buf) return SQLITE_NOMEM;
            rc = ix_chunk_io(v, last / v->chunk, "vectors", buf, bytes, (size_t)(last % v->chunk) * bytes, 0);
            if (rc == SQLITE_OK)
                rc = ix_chunk_io(v, last / v->chunk, "rowids", &moved, sizeof moved,
                              (size_t)(last % v->chunk) * sizeof moved, 0);
            if (rc == SQLITE_OK)
                rc = ix_chunk_io(v, loc / v->chunk, "vectors", buf, bytes, (size_t)(loc % v->chunk) * bytes, 1);
            if (rc == SQLITE_OK)
                rc = ix_chunk_io(v, loc / v->chunk, "rowids", &moved, sizeof moved,
                              (size_t)(loc % v->chunk) * sizeof moved, 1);
            sqlite3_free(buf);
            if (rc == SQLITE_OK && (s = ix_stmt(v, ST_SET_LOC, &rc)) != NULL) {
                sqlite3_bind_int64(s, 1, moved);
                sqlite3_bind_int64(s, 2, loc);
                rc = ix_run(v, s);
            }
            if (rc != SQLITE_OK) {
                ix_drop_cache(v);
                return rc;
            }
        }
        if (last % v->chunk == 0) {
            if (!(s = ix_stmt(v, ST_DELETE_CHUNK, &rc)) || (sqlite3_bind_int64(s, 1, last / v->chunk),
                                                         (rc = ix_run(v, s)) != SQLITE_OK)) {
                ix_drop_cache(v);
                return rc;
            }
        }
        if ((rc = ix_set_config(v, "count", last)) != SQLITE_OK) {
            ix_drop_cache(v);
            return rc;
        }
        ix_cache_remove(v, count, loc);
    }
    if (!(s = ix_stmt(v, ST_DELETE_ROW, &rc))) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    return ix_run(v, s);
}

/* Adds a validated row: vec (dims floats) or NULL to embed text later. rowid NULL: assign. */
static int add_row(idx_vtab *v, sqlite3_value *rowid, const float *vec, sqlite3_value *text,
                   sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_INSERT_ROW, &rc);
    if (!s) return rc;
    wrote(v);
    if (rowid) sqlite3_bind_value(s, 1, rowid);
    else sqlite3_bind_null(s, 1);
    sqlite3_bind_value(s, 2, text);
    if ((rc = ix_run(v, s)) != SQLITE_OK) return rc;
    *out = sqlite3_last_insert_rowid(v->db);
    if (!(s = ix_stmt(v, ST_INSERT_PENDING, &rc))) return rc;
    sqlite3_bind_int64(s, 1, *out);
    size_t bytes = (size_t)v->dims * sizeof(float);
    if (vec) sqlite3_bind_blob(s, 2, vec, (int)bytes, SQLITE_STATIC);
    else sqlite3_bind_null(s, 2);
    rc = ix_run(v, s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_OK) return rc;
    v->pending++;
    v->pending_bytes += vec ? bytes : (size_t)sqlite3_value_bytes(text) + 64;
    if (v->pending >= FLUSH_ROWS || v->pending_bytes >= FLUSH_BYTES) rc = ix_flush(v);
    return rc;
}

/* The vector stored for a row (chunked or pending), into a sqlite3_malloc'd array. */
static int stored_vector(idx_vtab *v, sqlite3_int64 rowid, float **out) {
    size_t bytes = (size_t)v->dims * sizeof(float);
    *out = NULL;
    int found, pending;
    sqlite3_int64 loc;
    int rc = find_row(v, rowid, &found, &pending, &loc);
    if (rc != SQLITE_OK || !found) return rc;
    sqlite3_stmt *s;
    float *f = sqlite3_malloc64(bytes);
    if (!f) return SQLITE_NOMEM;
    if (pending) {
        if (!(s = ix_stmt(v, ST_GET_PENDING, &rc))) {
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
            rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : ix_sql_error(v, rc);
        }
        sqlite3_reset(s);
    } else {
        rc = ix_chunk_io(v, loc / v->chunk, "vectors", f, bytes, (size_t)(loc % v->chunk) * bytes, 0);
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
    return ix_error(v, "rowid must be an integer, not %s", ext_type_name(sqlite3_value_type(r)));
}

/* For an insert, or the new row of an update: resolves an existing row with the same rowid
 * by the statement's conflict mode. */
static int resolve_conflict(idx_vtab *v, sqlite3_int64 rowid) {
    int exists, pending;
    sqlite3_int64 loc;
    int rc = find_row(v, rowid, &exists, &pending, &loc);
    if (rc != SQLITE_OK || !exists) return rc;
    if (sqlite3_vtab_on_conflict(v->db) == SQLITE_REPLACE) {
        int found;
        return remove_row(v, rowid, &found);
    }
    ix_error(v, "rowid %lld is already in \"%s\"", rowid, v->name);
    return SQLITE_CONSTRAINT;
}

int ix_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out) {
    idx_vtab *v = (idx_vtab *)vt;
    int found;
    if (argc == 1) return remove_row(v, sqlite3_value_int64(argv[0]), &found);
    sqlite3_value *old = argv[0], *rowid = argv[1];
    sqlite3_value *vecv = argv[2 + COL_VECTOR], *text = argv[2 + COL_TEXT];
    int is_update = sqlite3_value_type(old) != SQLITE_NULL;
    static const char *const hidden[] = {"distance", "k"};
    for (int i = COL_DISTANCE; i <= COL_TABLE; i++)
        if (sqlite3_value_type(argv[2 + i]) != SQLITE_NULL)
            return ix_error(v, "column %s%s%s cannot be written: it is the %s of a search",
                            i == COL_TABLE ? "\"" : "", i == COL_TABLE ? v->name : hidden[i - COL_DISTANCE],
                            i == COL_TABLE ? "\"" : "",
                            i == COL_DISTANCE ? "result" : i == COL_K ? "size" : "query");
    int tt = sqlite3_value_type(text);
    if (tt != SQLITE_NULL && tt != SQLITE_TEXT)
        return ix_error(v, "text must be text, not %s", ext_type_name(tt));
    if (tt == SQLITE_TEXT &&
        !emb_utf8_valid((const char *)sqlite3_value_text(text), (size_t)sqlite3_value_bytes(text), NULL))
        return ix_error(v, "text is not valid UTF-8");
    if (sqlite3_value_type(rowid) != SQLITE_NULL && check_rowid_value(v, rowid) != SQLITE_OK)
        return SQLITE_ERROR;
    if (is_update && sqlite3_value_type(rowid) == SQLITE_NULL)
        return ix_error(v, "rowid must be an integer, not NULL");

    /* the new row's vector: given, kept, or to embed from the text (vec NULL) */
    ext_vec vec = {0};
    int rc = SQLITE_OK, keep = 0;
    if (is_update && sqlite3_value_nochange(vecv)) {
        int rc2, text_changed = 0;
        sqlite3_stmt *s = ix_stmt(v, ST_GET_ROW, &rc2);
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
        if ((rc = ix_read_vector(v, vecv, "vector", &vec)) != SQLITE_OK) return rc;
    } else if (tt == SQLITE_NULL) {
        return ix_error(v, "a row of \"%s\" needs a vector or a text to embed: the vector is NULL",
                        v->name);
    }
    if (!vec.v && !keep) {
        /* text to embed: the model must be there now, not only at commit */
        emb_model *m = ix_model(v, &rc);
        if (!m) return rc;
        emb_model_release(m);
    }
    if (is_update && keep) {
        rc = stored_vector(v, sqlite3_value_int64(old), &vec.buf);
        if (rc != SQLITE_OK) return rc;
        vec.v = vec.buf;
    }
    if (is_update && keep && !vec.v && !v->model)
        rc = ix_error(v, "row %lld has no vector", sqlite3_value_int64(old));
    sqlite3_int64 new_id = sqlite3_value_int64(rowid);
    if (rc == SQLITE_OK && is_update) {
        sqlite3_int64 old_id = sqlite3_value_int64(old);
        if (new_id != old_id) rc = resolve_conflict(v, new_id);
        if (rc == SQLITE_OK) rc = remove_row(v, old_id, &found);
    } else if (rc == SQLITE_OK && sqlite3_value_type(rowid) != SQLITE_NULL) {
        rc = resolve_conflict(v, new_id);
    }
    if (rc == SQLITE_OK)
        rc = add_row(v, sqlite3_value_type(rowid) == SQLITE_NULL ? NULL : rowid, vec.v, text, rowid_out);
    ext_vec_free(&vec);
    return rc;
}

