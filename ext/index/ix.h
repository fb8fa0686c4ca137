/* Internal to the embed_index virtual table (ext_index*.c): its state, and the functions its
 * files share, in layers. Each file calls only the files above it in this list:
 *
 *   ix_cache.c    the in-memory copies of the vectors and the process-wide registry that
 *                 shares them between connections (no SQL)
 *   ix_options.c  the arguments of CREATE VIRTUAL TABLE (no SQL)
 *   ix_schema.c   the shadow tables: every SQL statement of the module, creating /
 *                 connecting / dropping / renaming, the configuration (NAME_config), errors
 *   ix_store.c    vectors at positions in NAME_chunks and rows in NAME_rows (parts in
 *                 NAME_parts for a chunked index): placing, moving and reading them
 *   ix_refresh.c  reading the chunks into a copy, checking them against NAME_rows / NAME_parts
 *   ix_load.c     which copy a statement reads: the process's shared one, brought up to date
 *                 in place or copied, or the connection's own in a transaction that wrote
 *   ix_model.c    the index's model: finding it, holding it, embedding texts with it
 *   ix_parts.c    a chunked index's parts: a row's text cut into chunks (emb_model_chunks),
 *                 embedded and placed; removed with the row; search hits grouped by row
 *   ix_tune.c     recall-targeted defaults: the probes and oversample measured on held-out
 *                 rows, stored in NAME_config, read by searches
 *   ix_build.c    the 'build' and 'optimize' commands: training and storing the IVF lists
 *   ix_writer.c   xUpdate: checking rows and keeping them pending until they are placed
 *   ix_filter.c   a search's conditions on metadata and rowids: the positions they pass
 *   ix_rerank.c   a search's candidates scored by a cross-encoder (rerank = 'model')
 *   ix_search.c   the cursors: k-nearest-neighbour searches over the copy, scans and rowid
 *                 lookups; reads only
 *   ix_module.c   the module: planning, transactions, and xFilter, which has the writer place
 *                 pending rows before a search reads
 *
 * The storage layout is described at the top of ix_module.c and in ARCHITECTURE.md. Functions returning int return an
 * SQLite result code; on errors they have set the table's message (ix_error). */
#ifndef EMBED_EXT_INDEX_H
#define EMBED_EXT_INDEX_H
#include "ext_registry.h"
#include "ext_util.h"
#include "search/ivf.h"
#include "search/knn.h"
#include "search/meta.h"
#include "search/quant.h"
#include "search/tune.h"
#include "search/vec_array.h" /* emb_vectors_alloc */
#include <stddef.h>
#include <stdint.h>

#define IX_FN "embed_index"
#define IX_MAX_DIMS 65536
#define IX_MAX_CHUNK_ROWS (1 << 20)
#define IX_MAX_CHUNK_BYTES (64 << 20)
#define IX_MAX_META 64 /* metadata columns */
#define IX_MAX_LISTS (1 << 20) /* IVF lists: the most 'build' makes, and so the most NAME_config may count */

/* The declared columns: CREATE TABLE x(vector, text, distance HIDDEN, k HIDDEN, oversample
 * HIDDEN, probes HIDDEN, NAME HIDDEN, chunk HIDDEN, chunk_start HIDDEN, chunk_end HIDDEN,
 * rerank HIDDEN, rerank_depth HIDDEN, rerank_score HIDDEN, then the metadata columns in
 * their declared order (IX_COL_META + j). */
enum {
    IX_COL_VECTOR,
    IX_COL_TEXT,
    IX_COL_DISTANCE,
    IX_COL_K,
    IX_COL_OVERSAMPLE,
    IX_COL_PROBES,
    IX_COL_TABLE,
    IX_COL_CHUNK,
    IX_COL_CHUNK_START,
    IX_COL_CHUNK_END,
    IX_COL_RERANK,
    IX_COL_RERANK_DEPTH,
    IX_COL_RERANK_SCORE,
    IX_COL_META
};
/* xBestIndex's idxNum for xFilter: a plan and flags. */
enum { IX_PLAN_SCAN = 0, IX_PLAN_KNN = 1, IX_PLAN_ROWID = 2, IX_PLAN_MASK = 3 };
enum {
    IX_F_K = 4,
    IX_F_LIMIT = 8,
    IX_F_OFFSET = 16,
    IX_F_VECTOR = 32,
    IX_F_NEED_K = 64,
    IX_F_NEED_MATCH = 128,
    IX_F_OVERSAMPLE = 256,
    IX_F_PROBES = 512,
    IX_F_RERANK = 1024,
    IX_F_RERANK_DEPTH = 2048
};
/* Storage formats: 1 (the first: f32 chunks without versions), 2 (chunk versions, codes,
 * NAME_vectors, IVF lists), 3 (format 2 with NAME_parts: a chunked index, whose positions
 * hold the parts of the rows' texts). */
enum { IX_FORMAT_V1 = 1, IX_FORMAT_V2 = 2, IX_FORMAT_V3 = 3 };

/* The module's statements on its shadow tables (ix_schema.c holds their SQL). Those
 * before IX_STMT_SHARED_COUNT are prepared once per table and shared (ix_stmt); the others are
 * prepared per cursor (ix_prepare). */
enum {
    IX_STMT_INSERT_ROW,
    IX_STMT_INSERT_PENDING,
    IX_STMT_GET_ROW,
    IX_STMT_DELETE_ROW,
    IX_STMT_DELETE_PENDING_ROW,
    IX_STMT_GET_PENDING,
    IX_STMT_SET_LOC,
    IX_STMT_READ_PENDING,
    IX_STMT_CLEAR_PENDING,
    IX_STMT_GET_CONFIG,
    IX_STMT_SET_CONFIG,
    IX_STMT_BUMP_VERSION,
    IX_STMT_NEW_CHUNK,
    IX_STMT_DELETE_CHUNK,
    IX_STMT_TEXT,
    IX_STMT_ROW_LOCS,
    IX_STMT_CHUNK_SPAN,
    IX_STMT_CHUNK_VERS,
    IX_STMT_SET_CHUNK_VER,
    IX_STMT_ROW_META,
    IX_STMT_GET_VECTOR,
    IX_STMT_PUT_VECTOR,
    IX_STMT_DELETE_VECTOR,
    IX_STMT_GET_CENTROIDS,
    IX_STMT_CLEAR_CENTROIDS,
    IX_STMT_PUT_CENTROID,
    IX_STMT_SET_ROW_LOC,
    IX_STMT_NEW_PART,
    IX_STMT_ROW_PARTS,
    IX_STMT_DELETE_PARTS,
    IX_STMT_MAX_PART,
    IX_STMT_PART,
    IX_STMT_SET_META,
    IX_STMT_PING,
    IX_STMT_SHARED_COUNT,
    IX_STMT_SCAN = IX_STMT_SHARED_COUNT,
    IX_STMT_LOOKUP,
    IX_STMT_ALL_CONFIG
};

/* A metadata column: `name type [partition key]` among the arguments of CREATE VIRTUAL TABLE,
 * stored as column m<j> of NAME_rows with that type's affinity. */
typedef enum { IX_META_INTEGER, IX_META_REAL, IX_META_TEXT, IX_META_BLOB } ix_meta_type;
typedef struct {
    char *name;
    ix_meta_type type;
} ix_meta;

/* An in-memory copy of the index's chunks: each position's record (a float32 vector, or the
 * compact code of the index's storage), rowid, per-row value for the scan (aux), IVF list and
 * metadata. A copy is brought up to date by reading only the chunks whose version (a random
 * number each write gives the chunk) differs from the one it read. A copy shared through the
 * registry is never changed while another holder may read it (refs > 1). */
typedef struct {
    int refs; /* holders: the registry, a connection's own copy, open cursors */
    sqlite3_int64 version; /* NAME_config's version it shows; -1 when it may show more or less */
    emb_storage storage;
    emb_metric metric;
    size_t n, cap, d, rec, chunk;
    unsigned char *records; /* n records of rec bytes */
    int64_t *ids; /* the store's ids: rowids, or a chunked index's part ids */
    int64_t *rows; /* a chunked index: the rowid of each position's part; NULL otherwise */
    float *aux; /* emb_knn_aux / emb_code_aux per row; NULL when the scan uses none */
    int32_t *lists; /* IVF list per row, -1 unassigned; NULL unless index = 'ivf' */
    sqlite3_int64 *chunk_ver; /* the version read for each chunk (0: unknown, read again) */
    size_t n_chunks;
    emb_meta_column *meta; /* n_meta columns, row i for position i */
    int n_meta;
    int partition; /* the partition key's column, or -1 */
    emb_meta_groups groups; /* the partition key's rows by value (partition >= 0) */
    int grouped; /* groups and ivf_groups are made for the rows there are */
    int ivf_ready; /* the IVF is built: ivf and ivf_groups are set */
    sqlite3_int64 ivf_serial; /* NAME_config's ivf_serial of the centroids held */
    emb_ivf ivf;
    emb_ivf_groups ivf_groups;
} ix_cache;

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
    int format; /* IX_FORMAT_V1, V2 or V3 */
    int chunk_tokens, chunk_overlap; /* a chunked index (format 3): its texts' chunks; 0: none */
    emb_storage storage; /* the chunks' records */
    int rescore; /* compact storage keeps the float32 vectors in NAME_vectors */
    int ivf; /* index = 'ivf' */
    size_t rec; /* bytes of a record */
    char *key; /* the registry's key (file and uid); NULL: not shared (in memory, format 1) */
    /* the metadata columns, from the CREATE arguments (xCreate and xConnect alike) */
    ix_meta *meta;
    int n_meta;
    int partition; /* the partition key's column j, or -1 */
    char *meta_sql; /* ", m0, m1, ..." for the statements, "" without metadata */
    char *meta_par; /* ", ?3, ?4, ..." */
    /* the model that embeds this transaction's pending texts, retained from the first text
     * insert to the end of the transaction, so that unloading it cannot fail the COMMIT */
    emb_model *held;
    int dirty; /* written since the last commit: bump the version at xSync */
    int pending; /* rows possibly pending (a hint: 0 means certainly none) */
    size_t pending_bytes;
    ix_cache *own; /* the connection's own copy: unshared indexes, and transactions that wrote */
    int attached; /* counted among the users of the registry's entry for key */
    char *damage; /* the first damage reported (ix_corrupt), which refuses later writes */
    emb_knn_scratch scratch; /* a search's scores, kept between searches */
    emb_code_scratch cscratch; /* the same for a scan of compact codes */
    emb_ivf placing; /* the centroids that place new rows, of NAME_config's ivf_serial */
    sqlite3_int64 placing_serial;
    sqlite3_stmt *stmt[IX_STMT_SHARED_COUNT];
} ix_vtab;

/* ---------- ix_cache.c ---------- */

/* An empty copy for v's index (refs 1). NULL when out of memory. */
ix_cache *ix_cache_new(const ix_vtab *v);
/* A copy of c (refs 1), to change while others read c. NULL when out of memory. */
ix_cache *ix_cache_clone(const ix_cache *c);
/* Makes room for n rows (the rows kept keep their places). Returns 0, or -1 (out of memory). */
int ix_cache_resize(ix_cache *c, size_t n);
/* Recomputes the aux values of rows [from, to). */
void ix_cache_set_aux(ix_cache *c, size_t from, size_t to);
size_t ix_cache_bytes(const ix_cache *c);
void ix_cache_retain(ix_cache *c);
void ix_cache_release(ix_cache *c);
/* The process-wide registry: one copy per index (key) shared by every connection. */
/* The registry's copy for key: *exact when it shows version ver (retained for the caller);
 * otherwise, when nobody else holds it, it is taken out of the registry for the caller to
 * bring up to date in place (*owned set), else retained for the caller to clone. NULL: none. */
ix_cache *ix_registry_take(const char *key, sqlite3_int64 ver, int *exact, int *owned);
/* Offers c (showing its version) to the registry, which keeps it (retained) unless it holds a
 * newer version already. */
void ix_registry_put(const char *key, ix_cache *c);
/* A connection starts or stops using key's entry; the last one out frees the copy. attach
 * returns 0, or -1 when out of memory. */
int ix_registry_attach(const char *key);
void ix_registry_detach(const char *key);
/* The bytes held by the registry's copies. */
sqlite3_int64 ix_registry_bytes(void);
/* Long work under way on key's index, as text for embed_index_status (fmt NULL: done). */
void ix_progress(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Texts (or a chunked index's chunks) embedded in one call between two checks for an interrupt. */
#define IX_EMBED_STEP 64
/* The bytes of the copies whose key starts with prefix ("file|name|uid|"), and the progress of
 * work on them into progress (room bytes; "" for none). */
sqlite3_int64 ix_registry_status(const char *prefix, char *progress, size_t room);

/* ---------- ix_options.c ---------- */

/* The arguments of CREATE VIRTUAL TABLE. */
typedef struct {
    int dims, chunk;
    char *model;
    emb_metric metric;
    int has_metric;
    emb_storage storage;
    int has_storage, rescore, has_rescore, ivf, has_index;
    int chunk_tokens, chunk_overlap, has_overlap;
    char *prompt_names[2]; /* document_prompt, query_prompt (ix_role order); NULL: the model's */
    ix_meta *meta;
    int n_meta, partition;
} ix_options;

/* Reads argv[3..] (xCreate and xConnect alike); *err set on a bad argument. */
int ix_parse_options(int argc, const char *const *argv, ix_options *o, char **err);
/* xCreate's checks: the model named (retained into *mod) exists and fits, dims is known. */
int ix_check_options(ix_options *o, emb_model **mod, char **err);
void ix_options_free(ix_options *o);

/* ---------- ix_schema.c ---------- */

/* Sets the table's error message "embed_index: ..."; returns SQLITE_ERROR (SQLITE_NOMEM when
 * the message could not be made). */
int ix_error(ix_vtab *v, const char *fmt, ...);
/* An error from nested SQL on the shadow tables: sets the message, returns an error code. */
int ix_sql_error(ix_vtab *v, int rc);
/* Reports damage found in shadow table NAME_<table>; returns SQLITE_CORRUPT_VTAB. The first
 * report is kept for ix_refuse_if_damaged. */
int ix_corrupt(ix_vtab *v, const char *table, const char *fmt, ...);
/* 1 when NAME_config's ivf_lists is a number of lists an index can have (0: not built), else 0;
 * the searches and embed_index_status both refuse it with IX_LISTS_DAMAGE. */
int ix_lists_valid(sqlite3_int64 lists);
#define IX_LISTS_DAMAGE "ivf_lists %lld is not a number of lists (0 to %d)"
/* SQLITE_OK, or the damage this connection found earlier in the index, reported again. */
int ix_refuse_if_damaged(ix_vtab *v);
/* The shared prepared statement `id` (< IX_STMT_SHARED_COUNT), made on first use; the caller
 * resets it. */
sqlite3_stmt *ix_stmt(ix_vtab *v, int id, int *rc);
/* A new statement `id` for the caller to finalize. */
int ix_prepare(ix_vtab *v, int id, sqlite3_stmt **out);
/* Runs a statement that returns no rows, then resets it. */
int ix_run(ix_vtab *v, sqlite3_stmt *s);
/* Reads NAME_config into v (once per connection), validating every value. */
int ix_config(ix_vtab *v);
int ix_get_config(ix_vtab *v, const char *key, sqlite3_int64 *out);
/* A text value of NAME_config, sqlite3_malloc'd (NULL when absent or not text). */
int ix_get_config_text(ix_vtab *v, const char *key, char **out);
/* A key older indexes may lack: absent or NULL gives dflt; anything but an integer in
 * [lo, hi] is damage. */
int ix_get_config_opt(ix_vtab *v, const char *key, sqlite3_int64 lo, sqlite3_int64 hi, sqlite3_int64 dflt,
                      sqlite3_int64 *out);
/* SQLITE_INTERRUPT (with the message set) once sqlite3_interrupt was called on the connection
 * during this statement, else SQLITE_OK: long work asks between steps (SQLite 3.40 has no
 * sqlite3_is_interrupted; a statement stepped now sees the flag). */
int ix_interrupted(ix_vtab *v, const char *what);
int ix_set_config(ix_vtab *v, const char *key, sqlite3_int64 value);
int ix_set_config_text(ix_vtab *v, const char *key, const char *value);
/* NAME_config's version: bumped by every committed write. */
int ix_version(ix_vtab *v, sqlite3_int64 *ver);
/* A new random chunk version (never 0). */
sqlite3_int64 ix_new_chunk_ver(void);
/* The module methods that make, open and remove the table and its shadow tables. */
int ix_create(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err);
int ix_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err);
int ix_disconnect(sqlite3_vtab *vt);
int ix_destroy(sqlite3_vtab *vt);
int ix_rename(sqlite3_vtab *vt, const char *to);
int ix_shadow_name(const char *suffix);

/* ---------- ix_store.c ---------- */

/* NAME_config's count of vectors in chunks, checked against the sizes it implies and against
 * the chunks present (a cheap check, made before every use; ix_read_all checks the rows too). */
int ix_count(ix_vtab *v, sqlite3_int64 *count);
/* Reads a vector value (float32 BLOB or JSON text) of the index's dimension; `what` names it
 * in errors. Free with ext_vec_free. */
int ix_read_vector(ix_vtab *v, sqlite3_value *val, const char *what, ext_vec *out);
/* The checks of ix_read_vector on a vector already read: freed on an error. */
int ix_check_vector(ix_vtab *v, const char *what, ext_vec *out);
/* Looks a row up: *found, and whether its vector is *pending or at position *loc. */
int ix_find_row(ix_vtab *v, sqlite3_int64 rowid, int *found, int *pending, sqlite3_int64 *loc);
/* Writes n vectors with their rowids at the end of the chunks (as records of the storage,
 * with NAME_vectors and IVF lists when the index has them) and records their positions. */
int ix_place(ix_vtab *v, const int64_t *ids, const float *vecs, size_t n);
/* A column of a statement's row as core's emb_value (pointing at the statement's bytes). */
emb_value ix_column_value(sqlite3_stmt *s, int col);
/* A chunk changed: a new version, so that every copy reads it again (format 2 and 3). */
int ix_touch_chunk(ix_vtab *v, sqlite3_int64 chunk);
/* Removes the vector at loc, moving the last one into the hole (the chunks stay dense). */
int ix_unplace(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc);
/* The float32 vector of the row at loc, into out (dims floats): the chunk's vector, the copy
 * in NAME_vectors, or without it the decoded code (*exact 0). exact may be NULL. */
int ix_read_vector_at(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 loc, float *out, int *exact);
/* Writes the first `rows` slots of a chunk anew (records, rowids, IVF lists + 1) and the rows'
 * positions. */
int ix_write_chunk(ix_vtab *v, sqlite3_int64 chunk, const unsigned char *recs, const int64_t *ids,
                   const int32_t *list1, size_t rows);
/* Brings copy c up to date with the chunks (count vectors): reads the chunks whose version
 * changed, and their rows' metadata, checking NAME_rows and NAME_chunks against each other;
 * remakes the partition and IVF groups. */
int ix_refresh(ix_vtab *v, ix_cache *c, sqlite3_int64 count);
/* The IVF centroids stored by the last build into ivf (initialised) and their serial; *lists 0
 * when none was built. */
int ix_read_centroids(ix_vtab *v, emb_ivf *ivf, sqlite3_int64 *serial, size_t *lists);

/* ---------- ix_load.c ---------- */

/* A copy showing the index as the statement sees it, retained for the caller. */
int ix_snapshot(ix_vtab *v, ix_cache **out);
/* The connection's own copy is given up (rollback, commit, disconnect). */
void ix_drop_own(ix_vtab *v);

/* ---------- ix_model.c ---------- */

/* The index's model, retained: v->held while a transaction holds one, else the loaded model
 * of the index's name, checked against the index's fingerprint (error set when absent). */
emb_model *ix_model(ix_vtab *v, int *rc);
/* Takes the index's model for the transaction's pending texts (v->held). */
int ix_hold_model(ix_vtab *v);
void ix_release_model(ix_vtab *v);
/* Embeds n texts with the index's model into out (n x dims). */
/* A text is embedded as a row (a document) or as a search's query: each with its own prompt. */
typedef enum { IX_ROLE_DOCUMENT, IX_ROLE_QUERY } ix_role;
/* NAME_config's key of a role's prompt name (absent or NULL: the model's choice) */
#define IX_PROMPT_KEY(role) ((role) == IX_ROLE_QUERY ? "query_prompt" : "document_prompt")
int ix_embed_texts(ix_vtab *v, ix_role role, const char *const *texts, const size_t *lens, size_t n, float *out);
/* CREATE's query_prompt / document_prompt (names[1], names[0]; NULL: not given) against model m
 * (ix_options.c; ix_create writes them into NAME_config). */
int ix_check_prompt_names(const char *const names[2], emb_model *m, char **err);
/* INSERT INTO t(t, text) VALUES ('model', 'name'): use another loaded model of the same
 * fingerprint. */
int ix_use_model(ix_vtab *v, const char *name);
/* The rows of index `index` whose text is longer than its model's limit (embedded from their
 * first tokens), read for embed_index_status; -1 when unknown: no model, or the model of that
 * name and fingerprint is not loaded. */
int ix_count_truncated(sqlite3 *db, const char *schema, const char *index, sqlite3_int64 *out);

/* ---------- ix_parts.c: a chunked index ---------- */

/* A part: its chunk number and the UTF-8 byte offsets [start, end) in its row's text. */
typedef struct {
    sqlite3_int64 chunk, start, end;
} ix_part;
/* Cuts the n texts of rows `rows` into chunks, embeds every chunk in one call, records the
 * parts and places their vectors. */
int ix_place_texts(ix_vtab *v, const int64_t *rows, char *const *texts, const size_t *lens, size_t n);
/* Removes every part of row `rowid`, whose first part id is `first`. */
int ix_unplace_row(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 first);
/* The row's metadata changed, its text not: the chunks holding its parts are read again. */
int ix_touch_row(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 first);
/* Keeps the first hit of each row among n hits (nearest first), and the hits' float32 vectors
 * (vecs, d each, NULL: none) with them; returns how many, or (size_t)-1 when out of memory. An
 * unchunked copy's hits are rows already. */
size_t ix_group_hits(const ix_cache *c, emb_knn_hit *hits, float *vecs, size_t n);
/* The number of distinct rows among n hits (nearest first), and in *prefix the length of the
 * shortest run of hits from the first that holds k of them (or all there are); (size_t)-1
 * when out of memory. */
size_t ix_count_rows(const ix_cache *c, const emb_knn_hit *hits, size_t n, size_t k, size_t *prefix);
/* Part `part` of row `row`, checked against the row's text. */
int ix_part_info(ix_vtab *v, sqlite3_int64 part, sqlite3_int64 row, ix_part *out);

/* ---------- ix_tune.c ---------- */

/* The float32 vectors of the rows at positions pos[0 .. n-1] of copy c into out: f32 records
 * themselves; compact ones decoded, or read from NAME_vectors when there are and `exact` is set
 * or the codes are sign bits (too coarse to pick a list with). */
int ix_floats_at(ix_vtab *v, const ix_cache *c, const size_t *pos, size_t n, int exact, float *out);
/* pos[0 .. n-1] = 0 .. n-1, its first `want` shuffled (seeded): a sample without replacement. */
void ix_sample(size_t n, size_t want, uint64_t seed, size_t *pos);
/* NAME_config's target_recall (default 0.95). */
int ix_target(ix_vtab *v, double *target);
/* How many held-out queries a measurement over n rows uses (0: too few rows to measure). */
size_t ix_tune_queries(size_t n);
/* The build's measurement: the probes reaching the target for queries t, given every row's
 * list + 1 (list1, n rows), stored with the recall and whether the search should scan (no queries:
 * too few rows, every list probed). */
int ix_tune_probes(ix_vtab *v, const emb_ivf *ivf, const emb_truth *t, const int32_t *list1, size_t n);
/* Compact storage with float32 copies: the oversample reaching the target, stored. */
int ix_tune_codes(ix_vtab *v, const ix_cache *c);
/* After rows are placed: measures the oversample again when the rows have doubled since. */
int ix_tune_if_grown(ix_vtab *v);
/* What a search uses when the query sets nothing: 0 for the built-in default. */
typedef struct {
    size_t probes, oversample; /* oversample already scaled to the rows there are */
    int exact; /* the IVF cannot reach the target for less than a scan: scan */
} ix_tuned;
int ix_tuned_settings(ix_vtab *v, const ix_cache *c, ix_tuned *out);

/* ---------- ix_build.c ---------- */

/* INSERT INTO t(t[, text]) VALUES ('build'[, '{"lists": N, "iterations": N, "sample": N,
 * "target_recall": R}']). */
int ix_build(ix_vtab *v, sqlite3_value *options);
/* INSERT INTO t(t[, text]) VALUES ('optimize'[, '{"target_recall": R}']): measures compact
 * storage's oversample now. */
int ix_optimize(ix_vtab *v, sqlite3_value *options);

/* ---------- ix_writer.c ---------- */

/* Places every pending row in the chunks, embedding pending texts in one call. */
int ix_flush(ix_vtab *v);
/* xUpdate. */
int ix_update(sqlite3_vtab *vt, int argc, sqlite3_value **argv, sqlite3_int64 *rowid_out);

/* ---------- ix_filter.c ---------- */

/* A search's conditions ("col,op;" in idx_str, col -1 for the rowid), with their values. */
typedef struct {
    emb_pred pred[2 * (IX_MAX_META + 1) + 8];
    emb_value *lists[2 * (IX_MAX_META + 1) + 8]; /* the IN lists, owned */
    int n;
} ix_filters;
/* Reads the conditions of idx_str, whose values are argv[0 ..]. Free with ix_filters_free. */
int ix_read_filters(ix_vtab *v, const char *idx_str, sqlite3_value **argv, ix_filters *f);
void ix_filters_free(ix_filters *f);
/* The positions of copy c that satisfy every condition, into *rows (sqlite3_malloc'd) and *m. */
int ix_filter_rows(ix_vtab *v, const ix_cache *c, const ix_filters *f, size_t **rows, size_t *m);

/* ---------- ix_rerank.c ---------- */

/* Scores the n candidate hits of copy c (nearest first; parts for a chunked index) against
 * the query text with the cross-encoder named `model`; keeps each row's best-scored hit, ordered by score
 * (highest first), at most k of them, with their vectors (vecs, NULL: none); the scores into
 * *scores (sqlite3_malloc'd). Returns the number kept in *n. */
int ix_rerank(ix_vtab *v, const char *model, const char *query, size_t qlen, const ix_cache *c, emb_knn_hit *hits,
              float *vecs, size_t *n, size_t k, float **scores);

/* ---------- ix_search.c: the cursor methods, reads only ---------- */

int ix_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out);
int ix_close(sqlite3_vtab_cursor *cur);
/* xFilter once no row is pending (ext_index.c flushes first). */
int ix_search_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, sqlite3_value **argv);
int ix_next(sqlite3_vtab_cursor *cur);
int ix_eof(sqlite3_vtab_cursor *cur);
int ix_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out);
int ix_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col);

#endif
