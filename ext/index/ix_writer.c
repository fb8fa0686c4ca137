/* embed_index's writer: xUpdate checks each row when it is written, so that an error comes
 * at INSERT and names the row, never at COMMIT; inserted rows wait in NAME_pending (their
 * texts not yet embedded) until ix_flush places them, embedding their texts together: every
 * FLUSH_ROWS rows, before a search, and at xSync. */
#include "ix.h"
#include "base/utf8.h"
#include <string.h>

#define FLUSH_ROWS 1024
#define FLUSH_BYTES (16 << 20)

/* ---------- placing pending rows ---------- */

/* The pending rows read for one flush: every row's id and vector, and the texts whose vectors
 * are still to be made (text i belongs to row text_row[i]). */
typedef struct {
    size_t n, cap, nt, d;
    int64_t *ids;
    float *vecs;
    char **texts;
    size_t *lens, *text_row;
} pending_batch;

static void batch_free(pending_batch *b) {
    for (size_t i = 0; i < b->nt; i++) sqlite3_free(b->texts[i]);
    sqlite3_free(b->ids);
    sqlite3_free(b->vecs);
    sqlite3_free(b->texts);
    sqlite3_free(b->lens);
    sqlite3_free(b->text_row);
}

/* Room for one more row. */
static int batch_grow(pending_batch *b) {
    if (b->n < b->cap) return SQLITE_OK;
    size_t cap = b->cap ? 2 * b->cap : 256;
    void *p[5] = {
        sqlite3_realloc64(b->ids, cap * sizeof *b->ids), sqlite3_realloc64(b->vecs, cap * b->d * sizeof *b->vecs),
        sqlite3_realloc64(b->texts, cap * sizeof *b->texts), sqlite3_realloc64(b->lens, cap * sizeof *b->lens),
        sqlite3_realloc64(b->text_row, cap * sizeof *b->text_row)};
    if (p[0]) b->ids = p[0];
    if (p[1]) b->vecs = p[1];
    if (p[2]) b->texts = p[2];
    if (p[3]) b->lens = p[3];
    if (p[4]) b->text_row = p[4];
    for (int i = 0; i < 5; i++)
        if (!p[i]) return SQLITE_NOMEM;
    b->cap = cap;
    return SQLITE_OK;
}

/* Adds the pending row at s's cursor: its vector, or its text to embed. */
static int batch_add(ix_vtab *v, pending_batch *b, sqlite3_stmt *s) {
    int rc = batch_grow(b);
    if (rc != SQLITE_OK) return rc;
    size_t d = b->d;
    b->ids[b->n] = sqlite3_column_int64(s, 0);
    int text = sqlite3_column_type(s, 1) == SQLITE_NULL && sqlite3_column_type(s, 2) == SQLITE_TEXT;
    if (v->chunk_tokens && !text) {
        return ix_corrupt(v, "pending", "rowid %lld of a chunked index has no text to embed",
                          (long long)b->ids[b->n]);
    } else if (sqlite3_column_type(s, 1) == SQLITE_BLOB &&
               (size_t)sqlite3_column_bytes(s, 1) == d * sizeof(float)) {
        memcpy(b->vecs + b->n * d, sqlite3_column_blob(s, 1), d * sizeof(float));
    } else if (text) {
        const char *t = (const char *)sqlite3_column_text(s, 2);
        size_t len = (size_t)sqlite3_column_bytes(s, 2);
        if (!t || !(b->texts[b->nt] = sqlite3_malloc64(len + 1))) return SQLITE_NOMEM;
        memcpy(b->texts[b->nt], t, len + 1);
        b->lens[b->nt] = len;
        b->text_row[b->nt++] = b->n;
    } else {
        return ix_corrupt(v, "pending",
                          "rowid %lld has neither a vector of %lld bytes nor a text to "
                          "embed",
                          (long long)b->ids[b->n], (long long)(d * sizeof(float)));
    }
    b->n++;
    return SQLITE_OK;
}

/* Embeds the batch's texts into their rows' vectors, IX_EMBED_STEP texts a call (each call sorts
 * its texts by length): between calls an interrupt is honoured and the progress shown. */
static int batch_embed(ix_vtab *v, pending_batch *b) {
    if (!b->nt) return SQLITE_OK;
    size_t d = b->d;
    float *out = sqlite3_malloc64((b->nt < IX_EMBED_STEP ? b->nt : IX_EMBED_STEP) * d * sizeof *out);
    if (!out) return SQLITE_NOMEM;
    int rc = SQLITE_OK;
    for (size_t at = 0; rc == SQLITE_OK && at < b->nt; at += IX_EMBED_STEP) {
        size_t n = b->nt - at < IX_EMBED_STEP ? b->nt - at : IX_EMBED_STEP;
        ix_progress(v->key, "insert: embedding texts, %zu of %zu pending", at, b->nt);
        rc = ix_interrupted(v, "insert");
        if (rc == SQLITE_OK)
            rc = ix_embed_texts(v, IX_ROLE_DOCUMENT, (const char *const *)b->texts + at, b->lens + at, n, out);
        for (size_t i = 0; rc == SQLITE_OK && i < n; i++)
            memcpy(b->vecs + b->text_row[at + i] * d, out + i * d, d * sizeof(float));
    }
    ix_progress(v->key, NULL);
    sqlite3_free(out);
    return rc;
}

static int flush_pending(ix_vtab *v) {
    int rc = ix_config(v);
    if (rc != SQLITE_OK) return rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_READ_PENDING, &rc);
    if (!s) return rc;
    pending_batch b = {.d = (size_t)v->dims};
    int step = SQLITE_DONE;
    while (rc == SQLITE_OK && (step = sqlite3_step(s)) == SQLITE_ROW) rc = batch_add(v, &b, s);
    sqlite3_reset(s);
    if (rc == SQLITE_OK && step != SQLITE_DONE) rc = ix_sql_error(v, step);
    if (v->chunk_tokens) { /* every row is a text (batch_add): rows and texts are in the same order */
        if (rc == SQLITE_OK && b.n) rc = ix_place_texts(v, b.ids, b.texts, b.lens, b.nt);
    } else {
        if (rc == SQLITE_OK) rc = batch_embed(v, &b);
        if (rc == SQLITE_OK && b.n) rc = ix_place(v, b.ids, b.vecs, b.n);
    }
    if (rc == SQLITE_OK && b.n) {
        sqlite3_stmt *c = ix_stmt(v, IX_STMT_CLEAR_PENDING, &rc);
        if (c) rc = ix_run(v, c);
    }
    if (rc == SQLITE_OK && b.n) rc = ix_tune_if_grown(v); /* the oversample grows with the rows */
    if (rc == SQLITE_OK) {
        v->pending = 0;
        v->pending_bytes = 0;
    }
    batch_free(&b);
    return rc;
}

/* Placing rows writes the shadow tables, which would change the connection's
 * last_insert_rowid(): a flush at COMMIT keeps the one the user's last INSERT set. */
int ix_flush(ix_vtab *v) {
    if (!v->pending) return SQLITE_OK;
    sqlite3_int64 last = sqlite3_last_insert_rowid(v->db);
    int rc = flush_pending(v);
    sqlite3_set_last_insert_rowid(v->db, last);
    return rc;
}

/* ---------- rows ---------- */

/* Removes a row (chunked or pending). *found says whether it was there. */
static int remove_row(ix_vtab *v, sqlite3_int64 rowid, int *found) {
    int pending;
    sqlite3_int64 loc;
    int rc = ix_find_row(v, rowid, found, &pending, &loc);
    if (rc != SQLITE_OK || !*found) return rc;
    v->dirty = 1;
    sqlite3_stmt *s;
    if (pending) {
        if (!(s = ix_stmt(v, IX_STMT_DELETE_PENDING_ROW, &rc))) return rc;
        sqlite3_bind_int64(s, 1, rowid);
        rc = ix_run(v, s);
    } else if (v->chunk_tokens) {
        rc = ix_unplace_row(v, rowid, loc); /* a chunked row's loc is its first part */
    } else {
        rc = ix_unplace(v, rowid, loc);
    }
    if (rc != SQLITE_OK || !(s = ix_stmt(v, IX_STMT_DELETE_ROW, &rc))) return rc;
    sqlite3_bind_int64(s, 1, rowid);
    return ix_run(v, s);
}

/* Adds a validated row: vec (dims floats) or NULL to embed text later. rowid NULL: assign. */
static int add_row(ix_vtab *v, sqlite3_value *rowid, const float *vec, const char *text, int text_len,
                   sqlite3_value **meta, sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_INSERT_ROW, &rc);
    if (!s) return rc;
    v->dirty = 1;
    if (rowid) sqlite3_bind_value(s, 1, rowid);
    else sqlite3_bind_null(s, 1);
    if (text) sqlite3_bind_text(s, 2, text, text_len, SQLITE_TRANSIENT);
    else sqlite3_bind_null(s, 2);
    for (int j = 0; j < v->n_meta; j++) sqlite3_bind_value(s, 3 + j, meta[j]); /* NAME_rows applies affinity */
    rc = ix_run(v, s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_OK) return rc;
    *out = sqlite3_last_insert_rowid(v->db);
    if (!(s = ix_stmt(v, IX_STMT_INSERT_PENDING, &rc))) return rc;
    sqlite3_bind_int64(s, 1, *out);
    size_t bytes = (size_t)v->dims * sizeof(float);
    if (vec) sqlite3_bind_blob(s, 2, vec, (int)bytes, SQLITE_STATIC);
    else sqlite3_bind_null(s, 2);
    rc = ix_run(v, s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_OK) return rc;
    v->pending++;
    /* a chunked text's parts: a vector per chunk, a chunk of at least two bytes per token */
    size_t parts = v->chunk_tokens ? (size_t)text_len / (2 * (size_t)v->chunk_tokens) + 1 : 0;
    v->pending_bytes += vec ? bytes : (size_t)text_len + 64 + parts * bytes;
    if (v->pending >= FLUSH_ROWS || v->pending_bytes >= FLUSH_BYTES) rc = ix_flush(v);
    return rc;
}

/* The vector stored for a row (placed or pending), into a sqlite3_malloc'd array; NULL for a
 * pending text, not embedded yet. */
static int stored_vector(ix_vtab *v, sqlite3_int64 rowid, float **out) {
    size_t bytes = (size_t)v->dims * sizeof(float);
    *out = NULL;
    int found, pending;
    sqlite3_int64 loc;
    int rc = ix_find_row(v, rowid, &found, &pending, &loc);
    if (rc != SQLITE_OK || !found) return rc;
    float *f = sqlite3_malloc64(bytes);
    if (!f) return SQLITE_NOMEM;
    if (!pending) {
        rc = ix_read_vector_at(v, rowid, loc, f, NULL);
    } else {
        sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_PENDING, &rc);
        if (s) {
            sqlite3_bind_int64(s, 1, rowid);
            int step = sqlite3_step(s);
            if (step == SQLITE_ROW && (size_t)sqlite3_column_bytes(s, 0) == bytes) {
                memcpy(f, sqlite3_column_blob(s, 0), bytes);
            } else {
                sqlite3_free(f);
                f = NULL;
                if (step != SQLITE_ROW && step != SQLITE_DONE) rc = ix_sql_error(v, step);
            }
            sqlite3_reset(s);
        }
    }
    if (rc != SQLITE_OK) {
        sqlite3_free(f);
        f = NULL;
    }
    *out = f;
    return rc;
}

static int check_rowid_value(ix_vtab *v, sqlite3_value *r) {
    if (sqlite3_value_type(r) == SQLITE_INTEGER) return SQLITE_OK;
    return ix_error(v, "rowid must be an integer, not %s", ext_type_name(sqlite3_value_type(r)));
}

/* For an insert, or the new row of an update: resolves an existing row with the same rowid
 * by the statement's conflict mode. */
static int resolve_conflict(ix_vtab *v, sqlite3_int64 rowid) {
    int exists, pending;
    sqlite3_int64 loc;
    int rc = ix_find_row(v, rowid, &exists, &pending, &loc);
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
static int row_text(ix_vtab *v, sqlite3_value *text, const char **out, int *len) {
    char *err;
    *out = NULL;
    *len = 0;
    ext_rc r = ext_value_input_text(text, "text", out, len, &err);
    if (r == EXT_ERROR) {
        int rc = err ? ix_error(v, "%s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    if (r == EXT_OK && !emb_utf8_valid(*out, (size_t)*len, NULL)) return ix_error(v, "text is not valid UTF-8");
    return SQLITE_OK;
}

/* INSERT INTO t(t, text) VALUES ('command', argument): 'model' and 'build'. */
static int run_command(ix_vtab *v, sqlite3_value *cmd, sqlite3_value *arg) {
    const char *c = (const char *)sqlite3_value_text(cmd);
    if (c && strcmp(c, "model") == 0) return ix_use_model(v, (const char *)sqlite3_value_text(arg));
    if (c && (strcmp(c, "build") == 0 || strcmp(c, "optimize") == 0)) {
        int rc = ix_flush(v); /* the rows inserted so far are built into the lists, or measured */
        return rc != SQLITE_OK ? rc : c[0] == 'b' ? ix_build(v, arg) : ix_optimize(v, arg);
    }
    return ix_error(v,
                    "unknown command '%s' (known: INSERT INTO \"%s\"(\"%s\", text) VALUES ('model', "
                    "'name') to use another loaded model of the same fingerprint, ('build', "
                    "'{\"lists\": N}') to build the IVF of an index made with index = 'ivf', and "
                    "('optimize') to measure the oversample of compact storage)",
                    c ? c : "", v->name, v->name);
}

/* The row's vector is stored again unless its text changed in an index with a model. */
static int text_changed(ix_vtab *v, sqlite3_int64 rowid, const char *now, int *changed) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_ROW, &rc);
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

/* The checks of a chunked index's new row (old: the row an update replaces, else NULL). An update
 * that keeps the rowid and the text writes the metadata in place and has the chunks holding the
 * row's parts read again, without embedding its chunks again (*done); any other is placed anew. */
static int chunked_row(ix_vtab *v, sqlite3_value *old, sqlite3_value *rowid, sqlite3_value *vecv, const char *txt,
                       sqlite3_value **meta, int *done) {
    int keeps = old && sqlite3_value_nochange(vecv);
    if (!keeps && sqlite3_value_type(vecv) != SQLITE_NULL)
        return ix_error(v, "a chunked index embeds its rows' texts: give a text, not a vector");
    if (!txt) return ix_error(v, "a chunked index embeds its rows' texts, and this row's text is NULL");
    sqlite3_int64 id = old ? sqlite3_value_int64(old) : 0, loc;
    int changed = 1, found = 0, pending = 1, rc;
    if (!keeps || sqlite3_value_int64(rowid) != id) return SQLITE_OK;
    if ((rc = text_changed(v, id, txt, &changed)) != SQLITE_OK || changed) return rc;
    if ((rc = ix_find_row(v, id, &found, &pending, &loc)) != SQLITE_OK || !found) return rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_SET_META, &rc);
    if (!s) return rc;
    v->dirty = 1;
    sqlite3_bind_int64(s, 1, id);
    for (int j = 0; j < v->n_meta; j++) sqlite3_bind_value(s, 3 + j, meta[j]);
    rc = ix_run(v, s);
    sqlite3_clear_bindings(s);
    if (rc == SQLITE_OK && !pending) rc = ix_touch_row(v, id, loc);
    *done = rc == SQLITE_OK;
    return rc;
}

static int update_row(ix_vtab *v, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out) {
    int found;
    if (argc == 1) return remove_row(v, sqlite3_value_int64(argv[0]), &found);
    sqlite3_value *old = argv[0], *rowid = argv[1];
    sqlite3_value *vecv = argv[2 + IX_COL_VECTOR], *text = argv[2 + IX_COL_TEXT];
    int is_update = sqlite3_value_type(old) != SQLITE_NULL;
    if (!is_update && sqlite3_value_type(argv[2 + IX_COL_TABLE]) != SQLITE_NULL)
        return run_command(v, argv[2 + IX_COL_TABLE], text);
    static const char *const hidden[] = {"distance",    "k",           "oversample", "probes", "",
                                         "chunk",       "chunk_start", "chunk_end",  "rerank", "rerank_depth",
                                         "rerank_score"};
    for (int i = IX_COL_DISTANCE; i < IX_COL_META; i++)
        if (sqlite3_value_type(argv[2 + i]) != SQLITE_NULL)
            return ix_error(
                v, "column %s%s%s cannot be written: it is the %s of a search", i == IX_COL_TABLE ? "\"" : "",
                i == IX_COL_TABLE ? v->name : hidden[i - IX_COL_DISTANCE], i == IX_COL_TABLE ? "\"" : "",
                i == IX_COL_TABLE ? "query"
                : i == IX_COL_K || i == IX_COL_OVERSAMPLE || i == IX_COL_PROBES || i == IX_COL_RERANK ||
                        i == IX_COL_RERANK_DEPTH
                    ? "setting"
                    : "result");
    const char *txt;
    int txt_len, rc = row_text(v, text, &txt, &txt_len);
    if (rc != SQLITE_OK) return rc;
    if (sqlite3_value_type(rowid) != SQLITE_NULL && check_rowid_value(v, rowid) != SQLITE_OK) return SQLITE_ERROR;
    if (is_update && sqlite3_value_type(rowid) == SQLITE_NULL)
        return ix_error(v, "rowid must be an integer, not NULL");

    /* the new row's vector: given, kept, or to embed from the text (vec NULL) */
    ext_vec vec = {0};
    int keep = 0;
    if (v->chunk_tokens) {
        int done = 0;
        rc = chunked_row(v, is_update ? old : NULL, rowid, vecv, txt, argv + 2 + IX_COL_META, &done);
        if (rc != SQLITE_OK || done) return rc;
    } else if (is_update && sqlite3_value_nochange(vecv)) {
        int changed = 0;
        if ((rc = text_changed(v, sqlite3_value_int64(old), txt, &changed)) != SQLITE_OK) return rc;
        keep = !(changed && v->model);
    } else if (sqlite3_value_type(vecv) != SQLITE_NULL) {
        if ((rc = ix_read_vector(v, vecv, "vector", &vec)) != SQLITE_OK) return rc;
    } else if (!txt) {
        return ix_error(v, "a row needs a vector or a text to embed, and its text is NULL (and so is "
                           "its vector)");
    }
    if (!vec.v && !keep && (rc = ix_hold_model(v)) != SQLITE_OK) return rc;
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
                     argv + 2 + IX_COL_META, rowid_out);
    ext_vec_free(&vec);
    return rc;
}

/* xUpdate. An error names the row it is about, so that a failing INSERT ... SELECT of many
 * rows says which one. */
int ix_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out) {
    ix_vtab *v = (ix_vtab *)vt;
    int rc = ix_config(v);
    if (rc == SQLITE_OK && (rc = ix_refuse_if_damaged(v)) != SQLITE_OK) return rc;
    if (rc == SQLITE_OK) rc = update_row(v, argc, argv, rowid_out);
    if (rc == SQLITE_OK || !v->base.zErrMsg || !v->configured) return rc;
    sqlite3_value *id = argc == 1 ? argv[0] : sqlite3_value_type(argv[1]) != SQLITE_NULL ? argv[1] : argv[0];
    if (sqlite3_value_type(id) != SQLITE_INTEGER) return rc;
    const char *msg = v->base.zErrMsg + strlen(IX_FN ": ");
    char *named = sqlite3_mprintf(IX_FN ": rowid %lld: %s", sqlite3_value_int64(id), msg);
    if (named) {
        sqlite3_free(v->base.zErrMsg);
        v->base.zErrMsg = named;
    }
    return rc;
}
