/* embed_index: a virtual table that stores vectors (given, or embedded from text with a
 * model) in shadow tables of the database file and answers exact k-nearest-neighbour
 * queries:
 *
 *   CREATE VIRTUAL TABLE notes_idx USING embed_index(model = 'minilm', metric = 'cosine');
 *   INSERT INTO notes_idx(rowid, text) SELECT id, body FROM notes;
 *   SELECT rowid, distance FROM notes_idx WHERE notes_idx MATCH :q AND k = 10;
 *
 * Storage (NAME is the table's name, every identifier quoted when it reaches SQL):
 *   NAME_config  (key PRIMARY KEY, value)   format (2; 1 for tables of the first release), dims,
 *                                           metric, storage, rescore, index, model, fingerprint,
 *                                           chunk_size, count (vectors in chunks), version (bumped
 *                                           by every committed write), uid (tells indexes apart
 *                                           in the process-wide registry), ivf_lists, ivf_serial
 *   NAME_rows    (id INTEGER PRIMARY KEY, loc, text, m0, m1, ...)   loc = position in the chunk
 *                                           array (chunk_id * chunk_size + slot); NULL while
 *                                           pending; m<j> the metadata columns
 *   NAME_chunks  (chunk_id INTEGER PRIMARY KEY, ver, rowids BLOB, vectors BLOB, lists BLOB)
 *                                           chunk_size int64 rowids, records (float32 vectors,
 *                                           or the storage's compact codes) and IVF lists + 1,
 *                                           preallocated and written in place with incremental
 *                                           blob I/O; ver is a new random number at each write,
 *                                           so a copy reads again only the chunks that changed.
 *                                           Chunks are dense: a delete moves the last vector
 *                                           into the hole, so positions 0 .. count-1 are in use.
 *   NAME_pending (id INTEGER PRIMARY KEY, vector BLOB)  rows inserted but not yet placed in
 *                                           chunks; vector NULL means "embed the row's text".
 *   NAME_vectors (id INTEGER PRIMARY KEY, vector BLOB)  compact storage: the float32 vectors
 *                                           that rescore a search's candidates exactly
 *   NAME_centroids (list INTEGER PRIMARY KEY, centroid BLOB)  the IVF's centroids
 *   NAME_parts   (id INTEGER PRIMARY KEY, row, chunk, start, end, loc)  a chunked index
 *                                           (format 3): the positions hold parts, each a chunk
 *                                           of its row's text (UTF-8 byte offsets start, end),
 *                                           embedded alone; a row's loc is its first part's id,
 *                                           its parts have consecutive ids; a search returns
 *                                           each row once, at its nearest part (ix_parts.c)
 *
 * Inserts go to NAME_pending and are placed in chunks in batches: when the pending rows
 * reach FLUSH_ROWS, before any query of the index, and at xSync (as FTS5 flushes its
 * pending terms). Pending texts are embedded together, so the model sorts them by length
 * and runs full batches. Everything pending is in ordinary tables, so SQLite's journal
 * rolls it back with the rest of the transaction; the in-memory state is only a hint
 * (pending), a flag (dirty) and copies that the chunks' versions bring up to date.
 *
 * The process keeps one copy of each index's chunks in memory, shared by its connections
 * (ix_load.c). A query over float32 records is one sgemv over that array, a top-k
 * selection and an exact double-precision rescoring of the candidates (so `distance` equals
 * embed_distance() of the same two vectors; core/knn.c); over compact codes, a scan of the
 * codes (core/quant.c) whose best k x oversample candidates are rescored exactly from
 * NAME_vectors; with an IVF (core/ivf.c), over the lists nearest the query only.
 *
 * This file is the module: creating, connecting, destroying and renaming the table, query
 * planning and transactions. ix.h lists the other files. */
#include "ext_functions.h"
#include "ix.h"

#define DEFAULT_CHUNK 1024

/* ---------- query planning ---------- */

/* The condition op of SQLite's as a filter of core's (emb_op), or -1 for one not taken. */
static int filter_op(sqlite3_index_info *info, int i) {
    switch (info->aConstraint[i].op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return sqlite3_vtab_in(info, i, -1) ? EMB_OP_IN : EMB_OP_EQ;
    case SQLITE_INDEX_CONSTRAINT_NE: return EMB_OP_NE;
    case SQLITE_INDEX_CONSTRAINT_LT: return EMB_OP_LT;
    case SQLITE_INDEX_CONSTRAINT_LE: return EMB_OP_LE;
    case SQLITE_INDEX_CONSTRAINT_GT: return EMB_OP_GT;
    case SQLITE_INDEX_CONSTRAINT_GE: return EMB_OP_GE;
    case SQLITE_INDEX_CONSTRAINT_IS: return EMB_OP_IS;
    case SQLITE_INDEX_CONSTRAINT_ISNOT: return EMB_OP_ISNOT;
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return EMB_OP_ISNULL;
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return EMB_OP_NOTNULL;
    default: return -1;
    }
}

/* A search's conditions on metadata columns and the rowid go into the search (the k nearest
 * among the rows that satisfy them), as arguments from `next` on, listed in idxStr as
 * "col,op;" (col -1: the rowid). SQLite checks them again on the k rows (omit stays 0), but
 * for IN lists, which it hands over whole only when omitted. */
static int take_filters(ix_vtab *v, sqlite3_index_info *info, int next) {
    sqlite3_str *s = sqlite3_str_new(NULL);
    int taken = 0;
    for (int i = 0; i < info->nConstraint && taken < 2 * (IX_MAX_META + 1) + 8; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int col = c->iColumn == -1 ? -1 : c->iColumn - IX_COL_META, op;
        if (!c->usable || (col < 0 && c->iColumn != -1) || col >= v->n_meta || (op = filter_op(info, i)) < 0)
            continue;
        /* the search compares as BINARY does: another collation (COLLATE NOCASE) is left to SQLite */
        const char *coll = sqlite3_vtab_collation(info, i);
        if (coll && sqlite3_stricmp(coll, "BINARY") != 0) continue;
        info->aConstraintUsage[i].argvIndex = next++;
        if (op == EMB_OP_IN) { /* the whole list at once, which SQLite grants to omitted IN terms */
            sqlite3_vtab_in(info, i, 1);
            info->aConstraintUsage[i].omit = 1;
        }
        sqlite3_str_appendf(s, "%d,%d;", col, op);
        taken++;
    }
    char *str = sqlite3_str_finish(s);
    if (!str && taken) return SQLITE_NOMEM;
    info->idxStr = str;
    info->needToFreeIdxStr = 1;
    return SQLITE_OK;
}

/* SQLite counts a plan for a branch of an OR only when it takes one of the branch's terms: a scan
 * takes a condition as an argument that it ignores, leaving the check to SQLite (omit stays 0).
 * Not an IN list, for which SQLite would run the scan once per value. 1 when one is taken. */
static int take_checked(sqlite3_index_info *info) {
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (c->usable && c->op != SQLITE_INDEX_CONSTRAINT_LIMIT && c->op != SQLITE_INDEX_CONSTRAINT_OFFSET &&
            !sqlite3_vtab_in(info, i, -1)) {
            info->aConstraintUsage[i].argvIndex = 1;
            return 1;
        }
    }
    return 0;
}

/* Which of a search's settings (oversample, probes, rerank, rerank_depth) column col is; -1:
 * none. */
static int setting_of(int col) {
    switch (col) {
    case IX_COL_OVERSAMPLE: return 0;
    case IX_COL_PROBES: return 1;
    case IX_COL_RERANK: return 2;
    case IX_COL_RERANK_DEPTH: return 3;
    default: return -1;
    }
}

static int ix_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
    ix_vtab *v = (ix_vtab *)vt;
    int match = -1, k = -1, limit = -1, offset = -1, rowid = -1, unusable_match = 0, unusable_k = 0;
    int setting[4] = {-1, -1, -1, -1}; /* oversample, probes, rerank, rerank_depth */
    static const int setting_flag[4] = {IX_F_OVERSAMPLE, IX_F_PROBES, IX_F_RERANK, IX_F_RERANK_DEPTH};
    int search_terms = 0; /* conditions on k or distance, which only a search has */
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (c->op == SQLITE_INDEX_CONSTRAINT_MATCH &&
            (c->iColumn == IX_COL_TABLE || c->iColumn == IX_COL_VECTOR)) {
            if (!c->usable) unusable_match = 1;
            else if (match < 0) match = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == IX_COL_K) {
            if (!c->usable) unusable_k = 1;
            else if (k < 0) k = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && setting_of(c->iColumn) >= 0) {
            int j = setting_of(c->iColumn);
            if (!c->usable) unusable_k = 1;
            else if (setting[j] < 0) setting[j] = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT && c->usable) {
            limit = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_OFFSET && c->usable) {
            offset = i;
        } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == -1 && c->usable) {
            rowid = i;
        }
        if ((c->iColumn >= IX_COL_DISTANCE && c->iColumn <= IX_COL_PROBES) || setting_of(c->iColumn) >= 0)
            search_terms = 1;
    }
    int vec_used = (info->colUsed & ((sqlite3_uint64)1 << IX_COL_VECTOR)) != 0;
    if (match < 0 && unusable_match) return SQLITE_CONSTRAINT; /* wait for a plan with the query known */
    if (match >= 0) {
        if (k < 0 && unusable_k) return SQLITE_CONSTRAINT;
        if (k < 0 && limit < 0) {
            /* perhaps another call offers a LIMIT; if none does, xFilter says what is missing */
            info->aConstraintUsage[match].argvIndex = 1;
            info->aConstraintUsage[match].omit = 1;
            info->idxNum = IX_PLAN_KNN | IX_F_NEED_K;
            info->estimatedCost = 1e30;
            return SQLITE_OK;
        }
        int flags = IX_PLAN_KNN | (vec_used ? IX_F_VECTOR : 0);
        info->aConstraintUsage[match].argvIndex = 1;
        info->aConstraintUsage[match].omit = 1;
        double rows = 10;
        sqlite3_value *rhs = NULL;
        if (k >= 0) {
            flags |= IX_F_K;
            info->aConstraintUsage[k].argvIndex = 2;
            info->aConstraintUsage[k].omit = 1;
            if (sqlite3_vtab_rhs_value(info, k, &rhs) == SQLITE_OK && sqlite3_value_type(rhs) == SQLITE_INTEGER)
                rows = (double)sqlite3_value_int64(rhs);
        } else {
            flags |= IX_F_LIMIT;
            info->aConstraintUsage[limit].argvIndex = 2;
            if (offset >= 0) {
                flags |= IX_F_OFFSET;
                info->aConstraintUsage[offset].argvIndex = 3;
            }
            if (sqlite3_vtab_rhs_value(info, limit, &rhs) == SQLITE_OK &&
                sqlite3_value_type(rhs) == SQLITE_INTEGER)
                rows = (double)sqlite3_value_int64(rhs);
        }
        /* a reranked search comes in the order of its scores, not of its distances */
        if (info->nOrderBy == 1 && setting[2] < 0 && info->aOrderBy[0].iColumn == IX_COL_DISTANCE &&
            !info->aOrderBy[0].desc)
            info->orderByConsumed = 1;
        if (info->nOrderBy == 1 && setting[2] >= 0 && info->aOrderBy[0].iColumn == IX_COL_RERANK_SCORE &&
            info->aOrderBy[0].desc)
            info->orderByConsumed = 1;
        int next = (flags & IX_F_OFFSET) ? 4 : 3;
        for (int j = 0; j < 4; j++)
            if (setting[j] >= 0) {
                flags |= setting_flag[j];
                info->aConstraintUsage[setting[j]].argvIndex = next++;
                info->aConstraintUsage[setting[j]].omit = 1;
            }
        int rc = take_filters(v, info, next);
        if (rc != SQLITE_OK) return rc;
        info->idxNum = flags;
        info->estimatedCost = 1000.0;
        info->estimatedRows = rows > 0 ? (sqlite3_int64)rows : 1;
        return SQLITE_OK;
    }
    if (search_terms) {
        /* `WHERE k = 2` alone would scan and give nothing: xFilter says MATCH is missing */
        info->idxNum = IX_PLAN_SCAN | IX_F_NEED_MATCH;
        info->estimatedCost = 1e30;
        return SQLITE_OK;
    }
    /* The table's own column is read by MATCH alone, and k and distance are a search's: a
     * statement that names one searches, and a plan without MATCH leaves that to SQLite's match(),
     * which cannot run it. Such a plan is right only as a branch of an OR whose other branch
     * searches, so a lookup is priced above a search (an OR of lookups ANDed with a search must
     * not replace it), a scan with a condition takes it (see take_checked) and a scan with none
     * comes last: a search ORed with conditions then runs as the union of its branches. */
    sqlite3_uint64 search_cols =
        (sqlite3_uint64)1 << IX_COL_TABLE | (sqlite3_uint64)1 << IX_COL_K | (sqlite3_uint64)1 << IX_COL_DISTANCE;
    int searches = (info->colUsed & search_cols) != 0;
    if (rowid >= 0) {
        info->aConstraintUsage[rowid].argvIndex = 1;
        info->aConstraintUsage[rowid].omit = 1;
        info->idxNum = IX_PLAN_ROWID | (vec_used ? IX_F_VECTOR : 0);
        info->estimatedCost = searches ? 1e5 : 10;
        info->estimatedRows = 1;
        return SQLITE_OK;
    }
    info->idxNum = IX_PLAN_SCAN | (vec_used ? IX_F_VECTOR : 0);
    info->estimatedCost = searches && !take_checked(info) ? 1e30 : 1e7;
    info->estimatedRows = 100000;
    if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == -1 && !info->aOrderBy[0].desc)
        info->orderByConsumed = 1;
    return SQLITE_OK;
}

/* ---------- transactions ---------- */

static int ix_begin(sqlite3_vtab *vt) {
    (void)vt;
    return SQLITE_OK;
}

static int ix_sync(sqlite3_vtab *vt) {
    ix_vtab *v = (ix_vtab *)vt;
    int rc = ix_flush(v);
    if (rc == SQLITE_OK && v->dirty) {
        sqlite3_stmt *s = ix_stmt(v, IX_STMT_BUMP_VERSION, &rc);
        if (s) rc = ix_run(v, s);
        if (rc == SQLITE_OK) v->dirty = 0;
    }
    return rc;
}

/* The transaction is over: nothing is written or pending any more. */
static void end_transaction(ix_vtab *v) {
    v->dirty = 0;
    v->pending = 0;
    v->pending_bytes = 0;
    ix_release_model(v);
}

static int ix_commit(sqlite3_vtab *vt) {
    end_transaction((ix_vtab *)vt);
    ix_drop_own((ix_vtab *)vt); /* the next search reads the shared copy */
    return SQLITE_OK;
}

static int ix_rollback(sqlite3_vtab *vt) {
    ix_vtab *v = (ix_vtab *)vt;
    end_transaction(v);
    ix_drop_own(v); /* it may hold rows the rollback removed */
    return SQLITE_OK;
}

static int ix_savepoint(sqlite3_vtab *vt, int i) {
    (void)vt;
    (void)i;
    return SQLITE_OK;
}

static int ix_rollback_to(sqlite3_vtab *vt, int i) {
    (void)i;
    ix_vtab *v = (ix_vtab *)vt;
    v->dirty = 1;
    v->pending = 1; /* rows flushed after the savepoint may be pending again */
    /* the own copy stays: the chunks rolled back have their earlier versions again, so the next
     * search reads them again */
    return SQLITE_OK;
}

/* Pending rows are placed first, so that a search reads only what is in the chunks. */
static int ix_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)argc;
    ix_vtab *v = (ix_vtab *)cur->pVtab;
    int rc = ix_config(v);
    if (rc != SQLITE_OK) return rc;
    if (idx_num & IX_F_NEED_MATCH)
        return ix_error(v,
                        "k and distance belong to a search, which needs MATCH: WHERE \"%s\" MATCH "
                        ":query AND k = 10",
                        v->name);
    if ((rc = ix_flush(v)) != SQLITE_OK) return rc;
    return ix_search_filter(cur, idx_num, idx_str, argv);
}

void sql_embed_index_cache_bytes(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    sqlite3_result_int64(ctx, ix_registry_bytes());
}

const sqlite3_module ext_index_module = {
    .iVersion = 3,
    .xCreate = ix_create,
    .xConnect = ix_connect,
    .xBestIndex = ix_best_index,
    .xDisconnect = ix_disconnect,
    .xDestroy = ix_destroy,
    .xOpen = ix_open,
    .xClose = ix_close,
    .xFilter = ix_filter,
    .xNext = ix_next,
    .xEof = ix_eof,
    .xColumn = ix_column,
    .xRowid = ix_rowid,
    .xUpdate = ix_update,
    .xBegin = ix_begin,
    .xSync = ix_sync,
    .xCommit = ix_commit,
    .xRollback = ix_rollback,
    .xRename = ix_rename,
    .xSavepoint = ix_savepoint,
    .xRelease = ix_savepoint,
    .xRollbackTo = ix_rollback_to,
    .xShadowName = ix_shadow_name,
};
