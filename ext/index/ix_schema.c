/* embed_index's schema: every SQL statement the module runs on its shadow tables, the options
 * of CREATE VIRTUAL TABLE, creating, connecting, dropping and renaming the table, reading
 * and validating NAME_config, and the table's error messages. */
#include "ix.h"
#include "base/utf8.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- errors ---------- */

int ix_error(ix_vtab *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(&v->base, IX_FN, fmt, ap);
    va_end(ap);
    return rc;
}

int ix_sql_error(ix_vtab *v, int rc) {
    if (rc == SQLITE_NOMEM) return rc;
    ix_error(v, "\"%s\": %s", v->name, sqlite3_errmsg(v->db));
    return rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_ERROR : rc;
}

int ix_corrupt(ix_vtab *v, const char *table, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    if (!msg) return SQLITE_NOMEM;
    int rc = ix_error(v,
                      "shadow table \"%s_%s\" is damaged: %s (the index is corrupt: drop it and "
                      "build it again)",
                      v->name, table, msg);
    sqlite3_free(msg);
    if (rc == SQLITE_NOMEM) return rc;
    /* kept, so that later writes are refused with it: writing into a damaged index would
     * spread the damage, or hide it */
    if (!v->damage) v->damage = sqlite3_mprintf("%s", v->base.zErrMsg);
    return SQLITE_CORRUPT_VTAB;
}

int ix_lists_valid(sqlite3_int64 lists) { return lists >= 0 && lists <= IX_MAX_LISTS; }

int ix_refuse_if_damaged(ix_vtab *v) {
    if (!v->damage) return SQLITE_OK;
    char *msg = sqlite3_mprintf("%s", v->damage);
    if (!msg) return SQLITE_NOMEM;
    sqlite3_free(v->base.zErrMsg);
    v->base.zErrMsg = msg;
    return SQLITE_CORRUPT_VTAB;
}

/* ---------- the statements ---------- */

/* Each "%w" pair is the schema, then the table's name. */
static const char *const stmt_sql[] = {
    [IX_STMT_INSERT_ROW] = "INSERT INTO \"%w\".\"%w_rows\"(id, loc, text%s) VALUES (?1, NULL, ?2%s)",
    [IX_STMT_INSERT_PENDING] = "INSERT INTO \"%w\".\"%w_pending\"(id, vector) VALUES (?1, ?2)",
    [IX_STMT_GET_ROW] = "SELECT loc, text FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [IX_STMT_DELETE_ROW] = "DELETE FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [IX_STMT_DELETE_PENDING_ROW] = "DELETE FROM \"%w\".\"%w_pending\" WHERE id = ?1",
    [IX_STMT_GET_PENDING] = "SELECT vector FROM \"%w\".\"%w_pending\" WHERE id = ?1",
    [IX_STMT_SET_LOC] = "UPDATE \"%w\".\"%w_rows\" SET loc = ?2 WHERE id = ?1",
    [IX_STMT_READ_PENDING] = "SELECT p.id, p.vector, r.text%s FROM \"%w\".\"%w_pending\" AS p"
                             " JOIN \"%w\".\"%w_rows\" AS r ON r.id = p.id ORDER BY p.id",
    [IX_STMT_CLEAR_PENDING] = "DELETE FROM \"%w\".\"%w_pending\"",
    [IX_STMT_GET_CONFIG] = "SELECT value FROM \"%w\".\"%w_config\" WHERE key = ?1",
    [IX_STMT_SET_CONFIG] = "INSERT OR REPLACE INTO \"%w\".\"%w_config\"(key, value) VALUES (?1, ?2)",
    [IX_STMT_BUMP_VERSION] = "UPDATE \"%w\".\"%w_config\" SET value = value + 1 WHERE key = 'version'",
    [IX_STMT_NEW_CHUNK] = "INSERT INTO \"%w\".\"%w_chunks\"(chunk_id, ver, rowids, vectors, lists)"
                          " VALUES (?1, ?4, zeroblob(?2), zeroblob(?3), zeroblob(?5))",
    [IX_STMT_DELETE_CHUNK] = "DELETE FROM \"%w\".\"%w_chunks\" WHERE chunk_id = ?1",
    [IX_STMT_TEXT] = "SELECT text FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [IX_STMT_ROW_LOCS] = "SELECT id, loc, id%s FROM \"%w\".\"%w_rows\" WHERE loc IS NOT NULL",
    [IX_STMT_CHUNK_SPAN] = "SELECT count(*), min(chunk_id), max(chunk_id) FROM \"%w\".\"%w_chunks\"",
    [IX_STMT_CHUNK_VERS] = "SELECT chunk_id, ver FROM \"%w\".\"%w_chunks\" ORDER BY chunk_id",
    [IX_STMT_SET_CHUNK_VER] = "UPDATE \"%w\".\"%w_chunks\" SET ver = ?2 WHERE chunk_id = ?1",
    [IX_STMT_ROW_META] = "SELECT loc, id%s FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [IX_STMT_GET_VECTOR] = "SELECT vector FROM \"%w\".\"%w_vectors\" WHERE id = ?1",
    [IX_STMT_PUT_VECTOR] = "INSERT OR REPLACE INTO \"%w\".\"%w_vectors\"(id, vector) VALUES (?1, ?2)",
    [IX_STMT_DELETE_VECTOR] = "DELETE FROM \"%w\".\"%w_vectors\" WHERE id = ?1",
    [IX_STMT_GET_CENTROIDS] = "SELECT list, centroid FROM \"%w\".\"%w_centroids\" ORDER BY list",
    [IX_STMT_CLEAR_CENTROIDS] = "DELETE FROM \"%w\".\"%w_centroids\"",
    [IX_STMT_PUT_CENTROID] = "INSERT INTO \"%w\".\"%w_centroids\"(list, centroid) VALUES (?1, ?2)",
    [IX_STMT_SET_ROW_LOC] = "UPDATE \"%w\".\"%w_rows\" SET loc = ?2 WHERE id = ?1",
    [IX_STMT_NEW_PART] = "INSERT INTO \"%w\".\"%w_parts\"(id, row, chunk, start, \"end\", loc)"
                         " VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
    [IX_STMT_ROW_PARTS] = "SELECT id, row, loc FROM \"%w\".\"%w_parts\" WHERE id >= ?1 ORDER BY id",
    [IX_STMT_DELETE_PARTS] = "DELETE FROM \"%w\".\"%w_parts\" WHERE id >= ?1 AND id < ?2",
    [IX_STMT_MAX_PART] = "SELECT max(id) FROM \"%w\".\"%w_parts\"",
    [IX_STMT_PART] = "SELECT p.row, p.chunk, p.start, p.\"end\", CAST(r.text AS BLOB) FROM \"%w\".\"%w_parts\""
                     " AS p LEFT JOIN \"%w\".\"%w_rows\" AS r ON r.id = p.row WHERE p.id = ?1",
    [IX_STMT_SET_META] = "UPDATE \"%w\".\"%w_rows\" SET (loc%s) = (loc%s) WHERE id = ?1",
    [IX_STMT_PING] = "SELECT 1",
    [IX_STMT_SCAN] = "SELECT id, loc, text%s FROM \"%w\".\"%w_rows\" ORDER BY id",
    [IX_STMT_LOOKUP] = "SELECT id, loc, text%s FROM \"%w\".\"%w_rows\" WHERE id = ?1",
    [IX_STMT_ALL_CONFIG] = "SELECT key, value FROM \"%w\".\"%w_config\"",
};

/* Format 1 (the first tables made) differs in its chunks: no version, no lists. */
static const char *const stmt_sql_v1[] = {
    [IX_STMT_NEW_CHUNK] = "INSERT INTO \"%w\".\"%w_chunks\"(chunk_id, rowids, vectors)"
                          " VALUES (?1, zeroblob(?2), zeroblob(?3))",
    [IX_STMT_CHUNK_VERS] = "SELECT chunk_id, NULL FROM \"%w\".\"%w_chunks\" ORDER BY chunk_id",
};

/* A chunked index (format 3) stores parts, not rows, at the positions: a part's loc is in
 * NAME_parts, its row's metadata in NAME_rows. A row's loc is the id of its first part; its
 * parts have consecutive ids. Each "%w" pair is the schema, then the table's name. */
static const char *const stmt_sql_parts[] = {
    [IX_STMT_SET_LOC] = "UPDATE \"%w\".\"%w_parts\" SET loc = ?2 WHERE id = ?1",
    [IX_STMT_ROW_LOCS] = "SELECT p.id, p.loc, p.row%s FROM \"%w\".\"%w_parts\" AS p JOIN \"%w\".\"%w_rows\" AS r"
                         " ON r.id = p.row WHERE p.loc IS NOT NULL",
    [IX_STMT_ROW_META] = "SELECT p.loc, p.row%s FROM \"%w\".\"%w_parts\" AS p JOIN \"%w\".\"%w_rows\" AS r"
                         " ON r.id = p.row WHERE p.id = ?1",
};

/* The shadow tables and the configuration xCreate writes: schema, name, ... as in stmt_sql;
 * NAME_rows has a column m<j> for each metadata column, with its declared type. A chunk's
 * ver (before its blobs, so that reading it reads no blob page) changes with every write to
 * the chunk; lists holds each slot's IVF list + 1 (0: none yet). NAME_vectors keeps the
 * float32 vectors of compact storage for rescoring. */
static const char create_sql[] =
    "CREATE TABLE \"%w\".\"%w_config\"(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "CREATE TABLE \"%w\".\"%w_rows\"(id INTEGER PRIMARY KEY, loc INTEGER, text TEXT%s);"
    "CREATE TABLE \"%w\".\"%w_chunks\"(chunk_id INTEGER PRIMARY KEY, ver INTEGER, rowids BLOB,"
    " vectors BLOB, lists BLOB);"
    "CREATE TABLE \"%w\".\"%w_pending\"(id INTEGER PRIMARY KEY, vector BLOB);"
    "CREATE TABLE \"%w\".\"%w_vectors\"(id INTEGER PRIMARY KEY, vector BLOB);"
    "CREATE TABLE \"%w\".\"%w_centroids\"(list INTEGER PRIMARY KEY, centroid BLOB);"
    "INSERT INTO \"%w\".\"%w_config\"(key, value) VALUES ('format', 2), ('dims', %d),"
    " ('metric', %Q), ('model', %Q), ('fingerprint', %Q), ('model_path', %Q),"
    " ('chunk_size', %d), ('count', 0), ('version', 0), ('storage', %Q), ('rescore', %d),"
    " ('index', %Q), ('uid', %lld), ('ivf_lists', 0), ('ivf_serial', 0);"
    "INSERT INTO \"%w\".\"%w_config\"(key, value) SELECT k, v FROM (SELECT 'query_prompt' AS k, %Q AS v"
    " UNION ALL SELECT 'document_prompt', %Q) WHERE v IS NOT NULL;";
/* A chunked index's parts, and its settings: schema, name (three times), chunk_tokens, overlap. */
static const char create_parts_sql[] =
    "CREATE TABLE \"%w\".\"%w_parts\"(id INTEGER PRIMARY KEY, row INTEGER, chunk INTEGER, start INTEGER,"
    " \"end\" INTEGER, loc INTEGER);"
    "UPDATE \"%w\".\"%w_config\" SET value = 3 WHERE key = 'format';"
    "INSERT INTO \"%w\".\"%w_config\"(key, value) VALUES ('chunk_tokens', %d), ('chunk_overlap', %d);";
static const char *const shadow_names[] = {"config", "rows", "chunks", "pending", "vectors", "centroids", "parts"};
#define N_SHADOW_V1 4
#define N_SHADOW_V2 6
#define N_SHADOW 7
/* Run once per shadow table: schema, name, suffix (and for renames the new name, suffix). */
static const char drop_sql[] = "DROP TABLE IF EXISTS \"%w\".\"%w_%s\"";
static const char rename_sql[] = "ALTER TABLE \"%w\".\"%w_%s\" RENAME TO \"%w_%s\"";

static char *statement_sql(ix_vtab *v, int id) {
    const char *m = v->meta_sql ? v->meta_sql : "", *p = v->meta_par ? v->meta_par : "";
    switch (id) {
    case IX_STMT_READ_PENDING: return sqlite3_mprintf(stmt_sql[id], m, v->schema, v->name, v->schema, v->name);
    case IX_STMT_INSERT_ROW:
    case IX_STMT_SET_META: return sqlite3_mprintf(stmt_sql[id], v->schema, v->name, m, p);
    case IX_STMT_ROW_LOCS:
    case IX_STMT_ROW_META:
        if (v->chunk_tokens) return sqlite3_mprintf(stmt_sql_parts[id], m, v->schema, v->name, v->schema, v->name);
        return sqlite3_mprintf(stmt_sql[id], m, v->schema, v->name);
    case IX_STMT_SCAN:
    case IX_STMT_LOOKUP: return sqlite3_mprintf(stmt_sql[id], m, v->schema, v->name);
    case IX_STMT_SET_LOC:
        return sqlite3_mprintf(v->chunk_tokens ? stmt_sql_parts[id] : stmt_sql[id], v->schema, v->name);
    case IX_STMT_PART: return sqlite3_mprintf(stmt_sql[id], v->schema, v->name, v->schema, v->name);
    case IX_STMT_NEW_CHUNK:
    case IX_STMT_CHUNK_VERS:
        if (v->format == IX_FORMAT_V1) return sqlite3_mprintf(stmt_sql_v1[id], v->schema, v->name);
        return sqlite3_mprintf(stmt_sql[id], v->schema, v->name);
    default: return sqlite3_mprintf(stmt_sql[id], v->schema, v->name);
    }
}

int ix_prepare(ix_vtab *v, int id, sqlite3_stmt **out) {
    char *sql = statement_sql(v, id);
    if (!sql) return SQLITE_NOMEM;
    int flags = id < IX_STMT_SHARED_COUNT ? SQLITE_PREPARE_PERSISTENT : 0;
    int rc = sqlite3_prepare_v3(v->db, sql, -1, (unsigned)flags, out, NULL);
    sqlite3_free(sql);
    return rc == SQLITE_OK ? rc : ix_sql_error(v, rc);
}

sqlite3_stmt *ix_stmt(ix_vtab *v, int id, int *rc) {
    *rc = v->stmt[id] ? SQLITE_OK : ix_prepare(v, id, &v->stmt[id]);
    return v->stmt[id];
}

int ix_run(ix_vtab *v, sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) return SQLITE_OK;
    return ix_sql_error(v, rc);
}

/* Prepared statements name the shadow tables: finalized before they are dropped or renamed. */
static void finalize_statements(ix_vtab *v) {
    for (int i = 0; i < IX_STMT_SHARED_COUNT; i++) {
        sqlite3_finalize(v->stmt[i]);
        v->stmt[i] = NULL;
    }
}

/* ---------- the configuration ---------- */

int ix_get_config(ix_vtab *v, const char *key, sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    int integer = rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER;
    if (integer) *out = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (integer) return SQLITE_OK;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return ix_sql_error(v, rc);
    return ix_corrupt(v, "config", rc == SQLITE_ROW ? "'%s' is not an integer" : "'%s' is missing", key);
}

int ix_get_config_text(ix_vtab *v, const char *key, char **out) {
    int rc;
    *out = NULL;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    int utf8 = 1; /* names and paths go into messages: bytes that are not UTF-8 are damage */
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_TEXT &&
        (utf8 =
             emb_utf8_valid((const char *)sqlite3_column_text(s, 0), (size_t)sqlite3_column_bytes(s, 0), NULL)) &&
        !(*out = sqlite3_mprintf("%s", sqlite3_column_text(s, 0))))
        rc = SQLITE_NOMEM;
    sqlite3_reset(s);
    if (!utf8) return ix_corrupt(v, "config", "%s is not UTF-8 text", key);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc == SQLITE_NOMEM ? rc : ix_sql_error(v, rc);
}

int ix_get_config_opt(ix_vtab *v, const char *key, sqlite3_int64 lo, sqlite3_int64 hi, sqlite3_int64 dflt,
                      sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_GET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    int type = rc == SQLITE_ROW ? sqlite3_column_type(s, 0) : SQLITE_NULL;
    *out = type == SQLITE_INTEGER ? sqlite3_column_int64(s, 0) : dflt;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return ix_sql_error(v, rc);
    if (type != SQLITE_NULL && (type != SQLITE_INTEGER || *out < lo || *out > hi))
        return ix_corrupt(v, "config", "'%s' must be an integer from %lld to %lld", key, (long long)lo,
                          (long long)hi);
    return SQLITE_OK;
}

int ix_interrupted(ix_vtab *v, const char *what) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_PING, &rc);
    if (!s) return rc;
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return SQLITE_OK;
    if (rc == SQLITE_INTERRUPT) {
        ix_error(v, "%s interrupted: the index is as it was before the statement", what);
        return SQLITE_INTERRUPT;
    }
    return ix_sql_error(v, rc);
}

int ix_set_config(ix_vtab *v, const char *key, sqlite3_int64 value) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_SET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, value);
    return ix_run(v, s);
}

int ix_set_config_text(ix_vtab *v, const char *key, const char *value) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_SET_CONFIG, &rc);
    if (!s) return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_TRANSIENT); /* NULL binds NULL */
    return ix_run(v, s);
}

int ix_version(ix_vtab *v, sqlite3_int64 *ver) { return ix_get_config(v, "version", ver); }

static int config_text(sqlite3_stmt *s, char **out) {
    if (sqlite3_column_type(s, 1) != SQLITE_TEXT) return SQLITE_OK; /* NULL: none */
    sqlite3_free(*out);
    *out = sqlite3_mprintf("%s", sqlite3_column_text(s, 1));
    return *out ? SQLITE_OK : SQLITE_NOMEM;
}

/* "file|name|uid|shape": the shape is every setting that sizes or reads the copy. */
static char *registry_key(const ix_vtab *v, const char *file, sqlite3_int64 uid) {
    sqlite3_str *k = sqlite3_str_new(NULL);
    sqlite3_str_appendf(k, "%s|%s|%lld|%d,%d,%d,%d,%d,%d,%d,%d", file, v->name, uid, v->dims, v->chunk,
                        (int)v->metric, (int)v->storage, v->rescore, v->ivf, v->partition, v->chunk_tokens > 0);
    for (int j = 0; j < v->n_meta; j++) sqlite3_str_appendf(k, ",%d", (int)v->meta[j].type);
    return sqlite3_str_finish(k);
}

int ix_config(ix_vtab *v) {
    if (v->configured) return SQLITE_OK;
    sqlite3_stmt *s = NULL;
    int rc = ix_prepare(v, IX_STMT_ALL_CONFIG, &s);
    if (rc != SQLITE_OK) {
        if (rc != SQLITE_NOMEM)
            ix_error(v, "cannot read shadow table \"%s_config\": %s", v->name, sqlite3_errmsg(v->db));
        return rc;
    }
    sqlite3_int64 dims = 0, chunk = 0, format = -1, rescore = 1, uid = 0, tokens = 0, overlap = 0;
    char *metric = NULL, *storage = NULL, *index = NULL;
    while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        int integer = sqlite3_column_type(s, 1) == SQLITE_INTEGER;
        if (!key) continue;
        if (!strcmp(key, "dims")) dims = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "chunk_size")) chunk = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "metric")) rc = config_text(s, &metric);
        else if (!strcmp(key, "format")) format = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "storage")) rc = config_text(s, &storage);
        else if (!strcmp(key, "index")) rc = config_text(s, &index);
        else if (!strcmp(key, "rescore")) rescore = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "chunk_tokens")) tokens = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "chunk_overlap")) overlap = integer ? sqlite3_column_int64(s, 1) : -1;
        else if (!strcmp(key, "uid")) uid = integer ? sqlite3_column_int64(s, 1) : 0;
        else if (!strcmp(key, "model")) rc = config_text(s, &v->model);
        else if (!strcmp(key, "fingerprint") && sqlite3_column_type(s, 1) == SQLITE_TEXT)
            snprintf(v->fingerprint, sizeof v->fingerprint, "%s", sqlite3_column_text(s, 1));
    }
    int step_rc = sqlite3_finalize(s);
    if (rc == SQLITE_OK && step_rc != SQLITE_OK) rc = ix_sql_error(v, step_rc);
    if (rc == SQLITE_OK) {
        if (dims < 1 || dims > IX_MAX_DIMS)
            rc = ix_corrupt(v, "config", "dims must be an integer from 1 to %d", IX_MAX_DIMS);
        else if (chunk < 1 || chunk > IX_MAX_CHUNK_ROWS ||
                 chunk * dims * (sqlite3_int64)sizeof(float) > IX_MAX_CHUNK_BYTES)
            rc = ix_corrupt(v, "config",
                            "chunk_size must be an integer from 1 to %d, with at most "
                            "%d bytes of vectors per chunk",
                            IX_MAX_CHUNK_ROWS, IX_MAX_CHUNK_BYTES);
        else if (!metric || emb_metric_parse(metric, &v->metric))
            rc = ix_corrupt(v, "config", "metric must be cosine, l2, dot or l1");
        else if (format != IX_FORMAT_V1 && format != IX_FORMAT_V2 && format != IX_FORMAT_V3)
            rc = ix_corrupt(v, "config",
                            "format must be 1, 2 or 3 (a later version of sqlite-embed may "
                            "have made this index)");
        else if (format >= IX_FORMAT_V2 && (!storage || emb_storage_parse(storage, &v->storage)))
            rc = ix_corrupt(v, "config", "storage must be f32, f16, int8 or bit");
        else if (format >= IX_FORMAT_V2 && (!index || (strcmp(index, "flat") && strcmp(index, "ivf"))))
            rc = ix_corrupt(v, "config", "index must be flat or ivf");
        else if (rescore != 0 && rescore != 1) rc = ix_corrupt(v, "config", "rescore must be 0 or 1");
        else if (format >= IX_FORMAT_V2 && !uid) rc = ix_corrupt(v, "config", "uid is missing");
        else if (format == IX_FORMAT_V3 && (tokens < 1 || tokens > 1 << 20 || overlap < 0 || overlap >= tokens))
            rc = ix_corrupt(
                v, "config",
                "chunk_tokens must be a positive integer, and chunk_overlap from 0 to chunk_tokens - 1");
        else if (format == IX_FORMAT_V3 && !v->model)
            rc = ix_corrupt(v, "config", "a chunked index needs its model");
        else if (v->model && !emb_utf8_valid(v->model, strlen(v->model), NULL))
            rc = ix_corrupt(v, "config", "model is not UTF-8 text");
        else if (!emb_utf8_valid(v->fingerprint, strlen(v->fingerprint), NULL))
            rc = ix_corrupt(v, "config", "fingerprint is not UTF-8 text");
    }
    v->ivf = index && !strcmp(index, "ivf");
    sqlite3_free(metric);
    sqlite3_free(storage);
    sqlite3_free(index);
    if (rc != SQLITE_OK) return rc;
    v->format = (int)format;
    if (format == IX_FORMAT_V1) v->storage = EMB_STORAGE_F32;
    v->rescore = v->storage != EMB_STORAGE_F32 && rescore;
    v->dims = (int)dims;
    v->chunk = (int)chunk;
    v->chunk_tokens = format == IX_FORMAT_V3 ? (int)tokens : 0;
    v->chunk_overlap = format == IX_FORMAT_V3 ? (int)overlap : 0;
    v->rec = emb_code_bytes(v->storage, (size_t)dims);
    /* the process-wide copy is shared by the connections to the same file (not a temporary or
     * in-memory database), told apart from an earlier index of the same name by the uid drawn
     * when it was made. The uid is a value anyone can edit: the key also holds the table's
     * name and shape, so that a forged uid can only name the index's own copy */
    const char *file = sqlite3_db_filename(v->db, v->schema);
    if (format >= IX_FORMAT_V2 && file && *file) {
        if (!(v->key = registry_key(v, file, uid))) return SQLITE_NOMEM;
        if (ix_registry_attach(v->key)) return SQLITE_NOMEM;
        v->attached = 1;
    }
    v->configured = 1;
    return SQLITE_OK;
}

sqlite3_int64 ix_new_chunk_ver(void) {
    sqlite3_int64 x = 0;
    while (!x) sqlite3_randomness(sizeof x, &x);
    return x;
}

/* ---------- creating, connecting, dropping, renaming ---------- */

static const char *const type_sql[] = {"INTEGER", "REAL", "TEXT", "BLOB"};

/* Declares the table's columns: its own, then the metadata columns with their types. */
static int declare(sqlite3 *db, const char *name, const ix_options *o, char **err) {
    static const char *const cols[] = {"vector",     "text",   "distance",     "k",
                                       "oversample", "probes", "chunk",        "chunk_start",
                                       "chunk_end",  "rerank", "rerank_depth", "rerank_score"};
    for (int i = 0; i < (int)(sizeof cols / sizeof *cols); i++)
        if (sqlite3_stricmp(name, cols[i]) == 0) {
            *err = sqlite3_mprintf(IX_FN ": a table cannot be named '%s', the name of one of its "
                                         "columns",
                                   name);
            return SQLITE_ERROR;
        }
    sqlite3_str *sql = sqlite3_str_new(NULL);
    sqlite3_str_appendf(sql,
                        "CREATE TABLE x(vector BLOB, text TEXT, distance HIDDEN, k HIDDEN, oversample HIDDEN, "
                        "probes HIDDEN, \"%w\" HIDDEN, chunk HIDDEN, chunk_start HIDDEN, chunk_end HIDDEN, "
                        "rerank HIDDEN, rerank_depth HIDDEN, rerank_score HIDDEN",
                        name);
    for (int j = 0; j < o->n_meta; j++)
        sqlite3_str_appendf(sql, ", \"%w\" %s", o->meta[j].name, type_sql[o->meta[j].type]);
    sqlite3_str_appendall(sql, ")");
    char *text = sqlite3_str_finish(sql);
    if (!text) return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, text);
    sqlite3_free(text);
    if (rc == SQLITE_OK) rc = sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
    return rc;
}

static void vtab_free(ix_vtab *v) {
    if (!v) return;
    finalize_statements(v);
    ix_cache_release(v->own);
    if (v->attached) ix_registry_detach(v->key);
    sqlite3_free(v->key);
    sqlite3_free(v->damage);
    emb_knn_scratch_free(&v->scratch);
    emb_code_scratch_free(&v->cscratch);
    emb_ivf_free(&v->placing);
    emb_model_release(v->held);
    for (int j = 0; j < v->n_meta; j++) sqlite3_free(v->meta[j].name);
    sqlite3_free(v->meta);
    sqlite3_free(v->meta_sql);
    sqlite3_free(v->meta_par);
    sqlite3_free(v->schema);
    sqlite3_free(v->name);
    sqlite3_free(v->model);
    sqlite3_free(v);
}

/* The metadata's parts of the statements: ", m0, m1" and ", ?3, ?4"; with `types`, the
 * column definitions of NAME_rows (", m0 TEXT, m1 INTEGER"). */
static char *meta_list(const ix_meta *meta, int n, int what) {
    sqlite3_str *s = sqlite3_str_new(NULL);
    for (int j = 0; j < n; j++) {
        if (what == 0) sqlite3_str_appendf(s, ", m%d", j);
        else if (what == 1) sqlite3_str_appendf(s, ", ?%d", j + 3);
        else sqlite3_str_appendf(s, ", m%d %s", j, type_sql[meta[j].type]);
    }
    sqlite3_str_appendall(s, "");
    return sqlite3_str_finish(s);
}

/* Declares the table and makes its state, taking the metadata columns from o; NAME_config is
 * read by the first statement that needs it (ix_config). */
static int vtab_open(sqlite3 *db, const char *schema, const char *name, ix_options *o, ix_vtab **out, char **err) {
    *out = NULL;
    int rc = declare(db, name, o, err);
    if (rc != SQLITE_OK) return rc;
    ix_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->db = db;
    v->meta = o->meta;
    v->n_meta = o->n_meta;
    v->partition = o->partition;
    o->meta = NULL;
    o->n_meta = 0;
    v->schema = sqlite3_mprintf("%s", schema);
    v->name = sqlite3_mprintf("%s", name);
    v->meta_sql = meta_list(v->meta, v->n_meta, 0);
    v->meta_par = meta_list(v->meta, v->n_meta, 1);
    if (!v->schema || !v->name || !v->meta_sql || !v->meta_par) {
        vtab_free(v);
        return SQLITE_NOMEM;
    }
    *out = v;
    return SQLITE_OK;
}

int ix_create(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
    (void)aux;
    const char *schema = argv[1], *name = argv[2];
    ix_options o;
    emb_model *mod = NULL;
    ix_vtab *v = NULL;
    int rc = ix_parse_options(argc, argv, &o, err);
    if (rc == SQLITE_OK) rc = ix_check_options(&o, &mod, err);
    char *rows_cols = rc == SQLITE_OK ? meta_list(o.meta, o.n_meta, 2) : NULL;
    if (rc == SQLITE_OK && !rows_cols) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = vtab_open(db, schema, name, &o, &v, err);
    if (rc == SQLITE_OK) {
        const emb_model_info *info = mod ? emb_model_get_info(mod) : NULL;
        sqlite3_int64 uid = ix_new_chunk_ver();
        char *sql = sqlite3_mprintf(create_sql, schema, name, schema, name, rows_cols, schema, name, schema, name,
                                    schema, name, schema, name, schema, name, o.dims, emb_metric_name(o.metric),
                                    o.model, info ? info->fingerprint : NULL, info ? info->path : NULL, o.chunk,
                                    emb_storage_name(o.storage), o.storage != EMB_STORAGE_F32 && o.rescore,
                                    o.ivf ? "ivf" : "flat", uid, schema, name, o.prompt_names[IX_ROLE_QUERY],
                                    o.prompt_names[IX_ROLE_DOCUMENT]);
        if (sql && o.chunk_tokens)
            sql = sqlite3_mprintf("%z%z", sql,
                                  sqlite3_mprintf(create_parts_sql, schema, name, schema, name, schema, name,
                                                  o.chunk_tokens, o.chunk_overlap));
        if (!sql) rc = SQLITE_NOMEM;
        else if ((rc = sqlite3_exec(db, sql, NULL, NULL, NULL)) != SQLITE_OK)
            /* v->name: out of memory while re-reading the schema, SQLite frees argv's table */
            *err = sqlite3_mprintf(IX_FN ": cannot create the shadow tables of \"%s\": %s", v->name,
                                   sqlite3_errmsg(db));
        sqlite3_free(sql);
    }
    if (rc == SQLITE_OK && (rc = ix_config(v)) != SQLITE_OK) *err = sqlite3_mprintf("%s", v->base.zErrMsg);
    emb_model_release(mod);
    sqlite3_free(rows_cols);
    ix_options_free(&o);
    if (rc != SQLITE_OK) {
        vtab_free(v);
        return rc;
    }
    *out = &v->base;
    return SQLITE_OK;
}

int ix_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
    (void)aux;
    ix_options o;
    ix_vtab *v = NULL;
    int rc = ix_parse_options(argc, argv, &o, err);
    if (rc == SQLITE_OK) rc = vtab_open(db, argv[1], argv[2], &o, &v, err);
    ix_options_free(&o);
    if (rc == SQLITE_OK) *out = &v->base;
    return rc;
}

int ix_disconnect(sqlite3_vtab *vt) {
    vtab_free((ix_vtab *)vt);
    return SQLITE_OK;
}

/* Runs fmt (drop_sql or rename_sql) once per shadow table. */
static int each_shadow_table(ix_vtab *v, const char *fmt, const char *to) {
    int rc = SQLITE_OK;
    finalize_statements(v);
    /* format 1 has the first four; a table of an older format may not have been read yet */
    int n = v->format == IX_FORMAT_V1 ? N_SHADOW_V1 : v->format == IX_FORMAT_V2 ? N_SHADOW_V2 : N_SHADOW;
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        char *sql = sqlite3_mprintf(fmt, v->schema, v->name, shadow_names[i], to, shadow_names[i]);
        rc = sql ? sqlite3_exec(v->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
    }
    return rc;
}

int ix_destroy(sqlite3_vtab *vt) {
    ix_vtab *v = (ix_vtab *)vt;
    int rc = each_shadow_table(v, drop_sql, NULL);
    if (rc != SQLITE_OK) return ix_sql_error(v, rc);
    vtab_free(v);
    return SQLITE_OK;
}

int ix_rename(sqlite3_vtab *vt, const char *to) {
    ix_vtab *v = (ix_vtab *)vt;
    int rc = ix_config(v); /* which shadow tables there are */
    if (rc != SQLITE_OK) return rc;
    rc = each_shadow_table(v, rename_sql, to);
    if (rc != SQLITE_OK) return ix_sql_error(v, rc);
    char *name = sqlite3_mprintf("%s", to);
    if (!name) return SQLITE_NOMEM;
    sqlite3_free(v->name);
    v->name = name;
    return SQLITE_OK;
}

int ix_shadow_name(const char *suffix) {
    for (int i = 0; i < N_SHADOW; i++)
        if (sqlite3_stricmp(suffix, shadow_names[i]) == 0) return 1;
    return 0;
}
