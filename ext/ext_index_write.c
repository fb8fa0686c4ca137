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

/* A text value of NAME_config (sqlite3_malloc'd; NULL when absent or not text). */
static int config_string(idx_vtab *v, const char *key, char **out) {
    int rc;
    *out = NULL;
    sqlite3_stmt *s = ix_stmt(v, ST_GET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_TEXT &&
        !(*out = sqlite3_mprintf("%s", sqlite3_column_text(s, 0))))
        rc = SQLITE_NOMEM;
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc == SQLITE_NOMEM ? rc : ix_sql_error(v, rc);
}

/* Whether m is a model this index can use: vectors of its size, with its fingerprint. */
static int model_fits(idx_vtab *v, const char *name, emb_model *m) {
    const emb_model_info *info = emb_model_get_info(m);
    if (info->has_vectors && info->hidden == v->dims && !strcmp(info->fingerprint, v->fingerprint)) return 1;
    ix_error(v, "model '%s' (fingerprint %s, %d dimensions) is not the model \"%s\" was made with "
                "(fingerprint %s, %d dimensions)", name, info->fingerprint,
             info->has_vectors ? info->hidden : 0, v->name, v->fingerprint, v->dims);
    return 0;
}

emb_model *ix_model(idx_vtab *v, int *rc) {
    if (v->held) {
        emb_model_retain(v->held);
        *rc = SQLITE_OK;
        return v->held;
    }
    char *name = NULL, *path = NULL;
    emb_model *m = NULL;
    /* the name is read each time: another connection may have pointed the index elsewhere */
    if ((*rc = config_string(v, "model", &name)) != SQLITE_OK) return NULL;
    *rc = SQLITE_ERROR;
    if (!name) {
        ix_error(v, "\"%s\" has no model (it was created with dims = %d): give vectors, not text",
                 v->name, v->dims);
    } else if (!(m = ext_registry_get(name))) {
        /* the folder is a hint only: loading a path named by a database file is the user's call */
        if (config_string(v, "model_path", &path) == SQLITE_OK && path)
            ix_error(v, "model '%s' of \"%s\" is not loaded: load it first with embed_load('%s', '%s') "
                        "(the folder it was loaded from when the index was created), or point the "
                        "index at an equal model: INSERT INTO \"%s\"(\"%s\", text) VALUES ('model', 'name')",
                     name, v->name, name, path, v->name, v->name);
        else
            ix_error(v, "model '%s' of \"%s\" is not loaded: load or define it first (embed_load, "
                        "embed_define)", name, v->name);
    } else if (!model_fits(v, name, m)) {
        emb_model_release(m);
        m = NULL;
    } else {
        *rc = SQLITE_OK;
    }
    sqlite3_free(name);
    sqlite3_free(path);
    return m;
}

int ix_embed_texts(idx_vtab *v, const char *const *texts, const size_t *lens, size_t n, float *out) {
    int rc;
    emb_model *m = ix_model(v, &rc);
    if (!m) return rc;
    char err[EMB_ERR_LEN];
    if (emb_model_embed(m, texts, lens, n, NULL, out, err)) rc = ix_error(v, "%s", err);
    emb_model_release(m);
    return rc;
}

/* INSERT INTO t(t, text) VALUES ('model', 'name'): the index's texts are embedded from now on
 * with the loaded model `name`, which must have the index's fingerprint. */
static int run_command(idx_vtab *v, sqlite3_value *cmd, sqlite3_value *arg) {
    const char *c = (const char *)sqlite3_value_text(cmd);
    if (!c || strcmp(c, "model") != 0)
        return ix_error(v, "unknown command '%s' (known: INSERT INTO \"%s\"(\"%s\", text) VALUES "
                           "('model', 'name') to use another loaded model of the same fingerprint)",
                        c ? c : "", v->name, v->name);
    const char *name = (const char *)sqlite3_value_text(arg);
    if (!v->model) return ix_error(v, "\"%s\" has no model (it was created with dims = %d)", v->name, v->dims);
    if (!name) return ix_error(v, "command 'model' needs the name of a loaded model in the text column");
    emb_model *m = ext_registry_get(name);
    if (!m) return ix_error(v, "no model named '%s' (load one with embed_load or embed_define)", name);
    int rc = model_fits(v, name, m) ? SQLITE_OK : SQLITE_ERROR;
    char *copy = rc == SQLITE_OK ? sqlite3_mprintf("%s", name) : NULL;
    sqlite3_stmt *s = rc == SQLITE_OK ? ix_stmt(v, ST_SET_CONFIG, &rc) : NULL;
    if (rc == SQLITE_OK && !copy) rc = SQLITE_NOMEM;
    for (int i = 0; s && rc == SQLITE_OK && i < 2; i++) {
        const char *path = emb_model_get_info(m)->path;
        sqlite3_bind_text(s, 1, i ? "model_path" : "model", -1, SQLITE_STATIC);
        if (i && !path) sqlite3_bind_null(s, 2);
        else sqlite3_bind_text(s, 2, i ? path : name, -1, SQLITE_TRANSIENT);
        rc = ix_run(v, s);
    }
    if (rc == SQLITE_OK) {
        sqlite3_free(v->model);
        v->model = copy;
        copy = NULL;
    }
    sqlite3_free(copy);
    emb_model_release(m);
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
        if ((rc = ix_count(v, &count)) != SQLITE_OK) return rc;
        if (loc < 0 || loc >= count)
            return ix_corrupt(v, "rows", "rowid %lld has position %lld, outside the %lld vectors",
                              rowid, loc, count);
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
static int add_row(idx_vtab *v, sqlite3_value *rowid, const float *vec, const char *text,
                   int text_len, sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_INSERT_ROW, &rc);
    if (!s) return rc;
    wrote(v);
    if (rowid) sqlite3_bind_value(s, 1, rowid);
    else sqlite3_bind_null(s, 1);
    if (text) sqlite3_bind_text(s, 2, text, text_len, SQLITE_TRANSIENT);
    else sqlite3_bind_null(s, 2);
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
    v->pending_bytes += vec ? bytes : (size_t)text_len + 64;
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
    } else if (loc < 0) {
        sqlite3_free(f);
        return ix_corrupt(v, "rows", "rowid %lld has position %lld", rowid, loc);
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

/* The text of a row, as SQLite converts numbers to text (as FTS5 takes them); a BLOB is
 * refused, since its bytes may not be text at all. */
static int row_text(idx_vtab *v, sqlite3_value *text, const char **out, int *len) {
    int t = sqlite3_value_type(text);
    *out = NULL;
    *len = 0;
    if (t == SQLITE_NULL) return SQLITE_OK;
    if (t == SQLITE_BLOB)
        return ix_error(v, "text must be text, not a blob (write CAST(x AS TEXT) if its bytes are "
                           "UTF-8 text)");
    *out = (const char *)sqlite3_value_text(text);
    *len = sqlite3_value_bytes(text);
    if (!*out) return SQLITE_NOMEM;
    if (!emb_utf8_valid(*out, (size_t)*len, NULL)) return ix_error(v, "text is not valid UTF-8");
    return SQLITE_OK;
}

/* Takes the model for a row's text now, so that an INSERT fails rather than the COMMIT, and
 * keeps it for the transaction's pending texts. */
static int hold_model(idx_vtab *v) {
    if (v->held) return SQLITE_OK;
    int rc;
    v->held = ix_model(v, &rc);
    return rc;
}

/* The row's vector is stored again unless its text changed in an index with a model. */
static int text_changed(idx_vtab *v, sqlite3_int64 rowid, const char *now, int *changed) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, ST_GET_ROW, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    *changed = 0;
    if (sqlite3_step(s) == SQLITE_ROW) {
        const char *was = (const char *)sqlite3_column_text(s, 1);
        *changed = now && (!was || strcmp(was, now) != 0);
    }
    sqlite3_reset(s);
    return SQLITE_OK;
}

static int update_row(idx_vtab *v, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out) {
    int found;
    if (argc == 1) return remove_row(v, sqlite3_value_int64(argv[0]), &found);
    sqlite3_value *old = argv[0], *rowid = argv[1];
    sqlite3_value *vecv = argv[2 + COL_VECTOR], *text = argv[2 + COL_TEXT];
    int is_update = sqlite3_value_type(old) != SQLITE_NULL;
    if (!is_update && sqlite3_value_type(argv[2 + COL_TABLE]) != SQLITE_NULL)
        return run_command(v, argv[2 + COL_TABLE], text);
    static const char *const hidden[] = {"distance", "k"};
    for (int i = COL_DISTANCE; i <= COL_TABLE; i++)
        if (sqlite3_value_type(argv[2 + i]) != SQLITE_NULL)
            return ix_error(v, "column %s%s%s cannot be written: it is the %s of a search",
                            i == COL_TABLE ? "\"" : "", i == COL_TABLE ? v->name : hidden[i - COL_DISTANCE],
                            i == COL_TABLE ? "\"" : "",
                            i == COL_DISTANCE ? "result" : i == COL_K ? "size" : "query");
    const char *txt;
    int txt_len, rc = row_text(v, text, &txt, &txt_len);
    if (rc != SQLITE_OK) return rc;
    if (sqlite3_value_type(rowid) != SQLITE_NULL && check_rowid_value(v, rowid) != SQLITE_OK)
        return SQLITE_ERROR;
    if (is_update && sqlite3_value_type(rowid) == SQLITE_NULL)
        return ix_error(v, "rowid must be an integer, not NULL");

    /* the new row's vector: given, kept, or to embed from the text (vec NULL) */
    ext_vec vec = {0};
    int keep = 0;
    if (is_update && sqlite3_value_nochange(vecv)) {
        int changed = 0;
        if ((rc = text_changed(v, sqlite3_value_int64(old), txt, &changed)) != SQLITE_OK) return rc;
        keep = !(changed && v->model);
    } else if (sqlite3_value_type(vecv) != SQLITE_NULL) {
        if ((rc = ix_read_vector(v, vecv, "vector", &vec)) != SQLITE_OK) return rc;
    } else if (!txt) {
        return ix_error(v, "a row needs a vector or a text to embed, and its text is NULL (and so is "
                           "its vector)");
    }
    if (!vec.v && !keep && (rc = hold_model(v)) != SQLITE_OK) return rc;
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
        rc = add_row(v, sqlite3_value_type(rowid) == SQLITE_NULL ? NULL : rowid, vec.v, txt, txt_len,
                     rowid_out);
    ext_vec_free(&vec);
    return rc;
}

/* xUpdate. An error names the row it is about, so that a failing INSERT ... SELECT of many
 * rows says which one. */
int ix_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = ix_config(v);
    if (rc == SQLITE_OK) rc = update_row(v, argc, argv, rowid_out);
    if (rc == SQLITE_OK || !v->base.zErrMsg || !v->configured) return rc;
    sqlite3_value *id = argc == 1 ? argv[0] : sqlite3_value_type(argv[1]) != SQLITE_NULL ? argv[1] : argv[0];
    if (sqlite3_value_type(id) != SQLITE_INTEGER) return rc;
    const char *msg = v->base.zErrMsg + strlen(FN ": ");
    char *named = sqlite3_mprintf(FN ": rowid %lld: %s", sqlite3_value_int64(id), msg);
    if (named) {
        sqlite3_free(v->base.zErrMsg);
        v->base.zErrMsg = named;
    }
    return rc;
}
