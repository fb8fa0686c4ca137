/* Internal to the embed_index virtual table (ext_index*.c): its state and the functions its
 * files share. The storage layout is described at the top of ext_index.c.
 *
 *   ext_index.c         the module: create, connect, destroy, rename, planning, transactions
 *   ext_index_cursor.c  searches, scans and rowid lookups (xFilter, xColumn, ...)
 *   ext_index_write.c   xUpdate: checking rows, turning values and texts into vectors
 *   ext_index_store.c   the shadow tables (statements, config, chunk I/O), placing pending
 *                       rows in chunks, and the connection's in-memory copy of the vectors
 *
 * Functions returning int return an SQLite result code; on errors they have set the
 * table's message (ix_error). */
#ifndef EMBED_EXT_INDEX_H
#define EMBED_EXT_INDEX_H
#include "ext_registry.h"
#include "ext_util.h"
#include "vec_array.h"
#include <stddef.h>

#define FN "embed_index"
#define MAX_DIMS 65536
#define MAX_CHUNK_ROWS (1 << 20)
#define MAX_CHUNK_BYTES (64 << 20)

/* The declared columns: CREATE TABLE x(vector, text, distance HIDDEN, k HIDDEN, NAME HIDDEN). */
enum { COL_VECTOR, COL_TEXT, COL_DISTANCE, COL_K, COL_TABLE };
/* xBestIndex's idxNum for xFilter: a plan and flags. */
enum { PLAN_SCAN = 0, PLAN_KNN = 1, PLAN_ROWID = 2, PLAN_MASK = 3 };
enum { F_K = 4, F_LIMIT = 8, F_OFFSET = 16, F_VECTOR = 32, F_NEED_K = 64, F_NEED_MATCH = 128 };

/* Statements on the shadow tables, prepared on first use (ix_stmt). */
enum {
    ST_INSERT_ROW, ST_INSERT_PENDING, ST_GET_ROW, ST_DELETE_ROW, ST_DELETE_PENDING_ROW,
    ST_GET_PENDING, ST_SET_LOC, ST_READ_PENDING, ST_CLEAR_PENDING, ST_GET_CONFIG, ST_SET_CONFIG,
    ST_BUMP_VERSION, ST_NEW_CHUNK, ST_DELETE_CHUNK, ST_TEXT, ST_ROW_LOCS, ST_CHUNK_SPAN, ST_COUNT
};

/* One connection's copy of the index's vectors, shared by the cursors that use it. */
typedef struct {
    int refs;
    sqlite3_int64 version; /* NAME_config's version when it was filled */
    emb_vec_array a;       /* position i holds the vector at loc i of the chunks */
} idx_cache;

typedef struct {
    sqlite3_vtab base;
    sqlite3 *db;
    char *schema, *name;
    /* NAME_config, read lazily inside a statement's own transaction (ix_config): reading it
     * at connect time would leave a read transaction that a later write must upgrade,
     * which fails at once with SQLITE_BUSY under concurrent writers */
    int configured;
    char *model; /* NULL: vectors only */
    char fingerprint[17];
    int dims, chunk;
    emb_metric metric;
    /* the model that embeds this transaction's pending texts, retained from the first text
     * insert to the end of the transaction, so that unloading it cannot fail the COMMIT */
    emb_model *held;
    int dirty;            /* written since the last commit: bump the version at xSync */
    int pending;          /* rows possibly pending (a hint: 0 means certainly none) */
    size_t pending_bytes;
    idx_cache *cache;
    emb_knn_scratch scratch; /* a search's scores, kept between searches */
    sqlite3_stmt *st[ST_COUNT];
} idx_vtab;

/* ---------- ext_index_store.c ---------- */

/* Sets the table's error message "embed_index: ..."; returns SQLITE_ERROR (SQLITE_NOMEM when
 * the message could not be made). */
int ix_error(idx_vtab *v, const char *fmt, ...);
/* An error from nested SQL on the shadow tables: sets the message, returns an error code. */
int ix_sql_error(idx_vtab *v, int rc);
/* The prepared statement `id` (ST_*), made on first use; the caller resets it. */
sqlite3_stmt *ix_stmt(idx_vtab *v, int id, int *rc);
/* Runs a statement that returns no rows, then resets it. */
int ix_run(idx_vtab *v, sqlite3_stmt *s);
/* Reads NAME_config into v (once per connection), validating every value. */
int ix_config(idx_vtab *v);
int ix_get_config(idx_vtab *v, const char *key, sqlite3_int64 *out);
/* NAME_config's count of vectors in chunks, checked against the sizes it implies and against
 * the chunks present (a cheap check, made before every use; ix_ensure_cache checks the rows
 * too). */
int ix_count(idx_vtab *v, sqlite3_int64 *count);
/* Reports damage found in shadow table NAME_<table>; returns SQLITE_CORRUPT_VTAB. */
int ix_corrupt(idx_vtab *v, const char *table, const char *fmt, ...);
int ix_set_config(idx_vtab *v, const char *key, sqlite3_int64 value);
/* NAME_config's version: bumped by every committed write. */
int ix_version(idx_vtab *v, sqlite3_int64 *ver);
/* Incremental blob I/O on one chunk's column ("rowids" or "vectors"). */
int ix_chunk_io(idx_vtab *v, sqlite3_int64 chunk, const char *col, void *buf, size_t bytes,
                size_t offset, int write);
/* Places every pending row in the chunks, embedding pending texts in one call. */
int ix_flush(idx_vtab *v);
/* Makes v->cache a copy of the chunks as they are now (pending rows flushed first). */
int ix_ensure_cache(idx_vtab *v);
void ix_cache_release(idx_cache *c);
void ix_drop_cache(idx_vtab *v);
/* Mirrors a delete of the vector at loc of the `count` in the chunks (the last moves there). */
void ix_cache_remove(idx_vtab *v, sqlite3_int64 count, sqlite3_int64 loc);

/* ---------- ext_index_write.c ---------- */

/* Reads a vector value (float32 BLOB or JSON text) of the index's dimension; `what` names it
 * in errors. Free with ext_vec_free. */
int ix_read_vector(idx_vtab *v, sqlite3_value *val, const char *what, ext_vec *out);
/* The index's model, retained: v->held while a transaction holds one, else the loaded model
 * of the index's name, checked against the index's fingerprint (error set when absent). */
emb_model *ix_model(idx_vtab *v, int *rc);
/* Embeds n texts with the index's model into out (n x dims). */
int ix_embed_texts(idx_vtab *v, const char *const *texts, const size_t *lens, size_t n, float *out);
/* xUpdate. */
int ix_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out);

/* ---------- ext_index_cursor.c: the cursor methods of the module ---------- */

int ix_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out);
int ix_close(sqlite3_vtab_cursor *cur);
int ix_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
              sqlite3_value **argv);
int ix_next(sqlite3_vtab_cursor *cur);
int ix_eof(sqlite3_vtab_cursor *cur);
int ix_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out);
int ix_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col);

#endif
