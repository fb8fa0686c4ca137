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
 * embed_distance() of the same two vectors): core/knn.c.
 *
 * This file is the module: creating, connecting, destroying and renaming the table, query
 * planning and transactions. ext_index.h lists the other files. */
#include "ext_functions.h"
#include "ext_index.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CHUNK 1024

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

/* sqlite-vec's vec0 declares its vector as a column, `embedding float[384]`, with an optional
 * `distance_metric=cosine`: such an argument gets the embed_index equivalent. NULL if the
 * argument is not one. */
static char *vec0_hint(const char *arg) {
    static const char *const types[] = {"float[", "f32[", "int8[", "bit["};
    const char *at = NULL;
    for (int i = 0; i < 4 && !at; i++)
        for (const char *p = arg; *p && !at; p++)
            if (sqlite3_strnicmp(p, types[i], (int)strlen(types[i])) == 0) at = p + strlen(types[i]);
    if (!at) return NULL;
    int dims = atoi(at);
    const char *metric = sqlite3_strglob("*distance_metric*=*", arg) == 0 ? strrchr(arg, '=') + 1 : NULL;
    while (metric && (*metric == ' ' || *metric == '\'' || *metric == '"')) metric++;
    char m[16] = "";
    for (int i = 0; metric && i < 15 && metric[i] && metric[i] != ' ' && metric[i] != '\'' &&
                    metric[i] != '"' && metric[i] != ')'; i++)
        m[i] = metric[i], m[i + 1] = 0;
    return sqlite3_mprintf(FN ": columns are not declared as in sqlite-vec's vec0 ('%s'): the vector "
                              "column is always named vector; write embed_index(dims = %d%s%s%s) for "
                              "vectors made elsewhere, or embed_index(model = 'name') to embed text",
                           arg, dims, *m ? ", metric = '" : "", m, *m ? "'" : "");
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

/* Prepared statements name the shadow tables: finalized before they are dropped or renamed. */
static void finalize_statements(idx_vtab *v) {
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(v->st[i]);
        v->st[i] = NULL;
    }
}

static void vtab_free(idx_vtab *v) {
    if (!v) return;
    finalize_statements(v);
    ix_drop_cache(v);
    emb_knn_scratch_free(&v->scratch);
    sqlite3_free(v->schema);
    sqlite3_free(v->name);
    sqlite3_free(v->model);
    emb_model_release(v->held);
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
        char *hint = vec0_hint(a);
        if (hint) {
            *err = hint;
            rc = SQLITE_ERROR;
        } else if (!eq) {
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
        } else if (!sqlite3_stricmp(key, "distance_metric")) {
            *err = sqlite3_mprintf(FN ": distance_metric is sqlite-vec's name; write metric = '%s'", val);
            rc = SQLITE_ERROR;
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
            " ('metric', %Q), ('model', %Q), ('fingerprint', %Q), ('model_path', %Q),"
            " ('chunk_size', %d), ('count', 0), ('version', 0);",
            schema, name, schema, name, schema, name, schema, name, schema, name, dims,
            emb_metric_name(m), model, mod ? emb_model_get_info(mod)->fingerprint : NULL,
            mod ? emb_model_get_info(mod)->path : NULL, chunk);
        if (!sql) rc = SQLITE_NOMEM;
        else {
            rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
            if (rc != SQLITE_OK)
                *err = sqlite3_mprintf(FN ": cannot create the shadow tables of \"%s\": %s", name,
                                       sqlite3_errmsg(db));
            sqlite3_free(sql);
        }
    }
    if (rc == SQLITE_OK && (rc = ix_config(v)) != SQLITE_OK) *err = sqlite3_mprintf("%s", v->base.zErrMsg);
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
    /* NAME_config is read by the first statement that needs it (ix_config) */
    if (rc == SQLITE_OK && !(v = vtab_new(db, argv[1], argv[2]))) rc = SQLITE_NOMEM;
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

/* Runs fmt once per shadow table; fmt takes the schema, the table name and the suffix
 * (and, for renames, the new name and the suffix again). */
static int each_shadow_table(idx_vtab *v, const char *fmt, const char *to) {
    int rc = SQLITE_OK;
    finalize_statements(v);
    for (int i = 0; i < 4 && rc == SQLITE_OK; i++) {
        char *sql = sqlite3_mprintf(fmt, v->schema, v->name, shadow_names[i], to, shadow_names[i]);
        rc = sql ? sqlite3_exec(v->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
    }
    return rc;
}

static int idx_destroy(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = each_shadow_table(v, "DROP TABLE IF EXISTS \"%w\".\"%w_%s\"", NULL);
    if (rc != SQLITE_OK) return ix_sql_error(v, rc);
    vtab_free(v);
    return SQLITE_OK;
}

static int idx_rename(sqlite3_vtab *vt, const char *to) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = each_shadow_table(v, "ALTER TABLE \"%w\".\"%w_%s\" RENAME TO \"%w_%s\"", to);
    if (rc != SQLITE_OK) return ix_sql_error(v, rc);
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
    int search_terms = 0; /* conditions on k or distance, which only a search has */
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
        if (c->iColumn == COL_K || c->iColumn == COL_DISTANCE) search_terms = 1;
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
    if (search_terms) {
        /* `WHERE k = 2` alone would scan and give nothing: xFilter says MATCH is missing */
        info->idxNum = PLAN_SCAN | F_NEED_MATCH;
        info->estimatedCost = 1e30;
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

/* ---------- transactions ---------- */

static int idx_begin(sqlite3_vtab *vt) {
    (void)vt;
    return SQLITE_OK;
}

static int idx_sync(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    int rc = ix_flush(v);
    if (rc == SQLITE_OK && v->dirty) {
        sqlite3_stmt *s = ix_stmt(v, ST_BUMP_VERSION, &rc);
        if (s) rc = ix_run(v, s);
        sqlite3_int64 ver;
        if (rc == SQLITE_OK && v->cache && ix_version(v, &ver) == SQLITE_OK) v->cache->version = ver;
        else if (rc == SQLITE_OK) ix_drop_cache(v);
        if (rc == SQLITE_OK) v->dirty = 0;
    }
    return rc;
}

/* The transaction is over: nothing is written or pending any more. */
static void end_transaction(idx_vtab *v) {
    v->dirty = 0;
    v->pending = 0;
    v->pending_bytes = 0;
    emb_model_release(v->held);
    v->held = NULL;
}

static int idx_commit(sqlite3_vtab *vt) {
    end_transaction((idx_vtab *)vt);
    return SQLITE_OK;
}

static int idx_rollback(sqlite3_vtab *vt) {
    idx_vtab *v = (idx_vtab *)vt;
    end_transaction(v);
    ix_drop_cache(v); /* it may hold rows the rollback removed */
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
    ix_drop_cache(v);
    return SQLITE_OK;
}

static sqlite3_module index_module = {
    .iVersion = 3,
    .xCreate = idx_create,
    .xConnect = idx_connect,
    .xBestIndex = idx_best_index,
    .xDisconnect = idx_disconnect,
    .xDestroy = idx_destroy,
    .xOpen = ix_open,
    .xClose = ix_close,
    .xFilter = ix_filter,
    .xNext = ix_next,
    .xEof = ix_eof,
    .xColumn = ix_column,
    .xRowid = ix_rowid,
    .xUpdate = ix_update,
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
