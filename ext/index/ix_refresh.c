/* Reading embed_index's chunks into an in-memory copy: only the chunks whose version changed,
 * straight from their pages with incremental blob I/O, each checked against NAME_rows (or a
 * chunked index's NAME_parts) before any number read from it is used; then the partition and
 * IVF groups made again. */
#include "ix.h"
#include <string.h>

/* ---------- reading into a copy, checked ---------- */

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
 * and every position has a row: NAME_rows and NAME_chunks agree (for a chunked index, every
 * part of NAME_parts, whose row must be in NAME_rows, and the positions). The rows' metadata
 * goes into the copy's columns (reset to n rows) on the way. */
static int check_all_rows(ix_vtab *v, ix_cache *c) {
    size_t n = c->n;
    const char *tab = c->rows ? "parts" : "rows", *what = c->rows ? "part" : "rowid";
    int rc;
    for (int j = 0; j < c->n_meta; j++)
        if (emb_meta_column_reset(&c->meta[j], n)) return SQLITE_NOMEM;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_ROW_LOCS, &rc);
    if (!s) return rc;
    unsigned char *seen = sqlite3_malloc64(n / 8 + 1);
    if (!seen) return SQLITE_NOMEM;
    memset(seen, 0, n / 8 + 1);
    size_t rows = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        sqlite3_int64 id = sqlite3_column_int64(s, 0), loc = sqlite3_column_int64(s, 1);
        if (sqlite3_column_type(s, 1) != SQLITE_INTEGER) /* its text is not copied: any bytes */
            rc = ix_corrupt(v, tab, "%s %lld has a position that is not an integer", what, (long long)id);
        else if (loc < 0 || (size_t)loc >= n)
            rc = ix_corrupt(v, tab, "%s %lld has position %lld, outside the %lld vectors", what, (long long)id,
                            (long long)loc, (long long)n);
        else if (seen[loc / 8] & (1u << (loc % 8)))
            rc = ix_corrupt(v, tab, "two %s have position %lld", tab, (long long)loc);
        else if (c->ids[loc] != id)
            rc = ix_corrupt(v, "chunks",
                            "position %lld holds %s %lld, but \"%s_%s\" puts %s "
                            "%lld there",
                            (long long)loc, what, (long long)c->ids[loc], v->name, tab, what, (long long)id);
        else {
            seen[loc / 8] |= (unsigned char)(1u << (loc % 8));
            rows++;
            if (c->rows) c->rows[loc] = sqlite3_column_int64(s, 2); /* the part's row */
            for (int j = 0; j < v->n_meta && rc == SQLITE_OK; j++) {
                emb_value x = ix_column_value(s, 3 + j);
                if (emb_meta_column_set(&c->meta[j], (size_t)loc, &x)) rc = SQLITE_NOMEM;
            }
        }
    }
    sqlite3_reset(s);
    sqlite3_free(seen);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    else if (rc != SQLITE_OK && rc != SQLITE_CORRUPT_VTAB && rc != SQLITE_NOMEM) return ix_sql_error(v, rc);
    if (rc == SQLITE_OK && rows != n)
        rc = ix_corrupt(v, tab, "it places %lld %s, but \"%s_config\" counts %lld vectors", (long long)rows, tab,
                        v->name, (long long)n);
    return rc;
}

/* The rows at positions [from, to) only: each row's position is its own, and its metadata
 * goes into the copy. */
static int check_some_rows(ix_vtab *v, ix_cache *c, size_t from, size_t to) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_ROW_META, &rc);
    for (size_t pos = from; s && rc == SQLITE_OK && pos < to; pos++) {
        sqlite3_bind_int64(s, 1, c->ids[pos]);
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER &&
            (size_t)sqlite3_column_int64(s, 0) == pos) {
            if (c->rows) c->rows[pos] = sqlite3_column_int64(s, 1);
            for (int j = 0; j < v->n_meta && rc == SQLITE_OK; j++) {
                emb_value x = ix_column_value(s, 2 + j);
                if (emb_meta_column_set(&c->meta[j], pos, &x)) rc = SQLITE_NOMEM;
            }
        } else if (step == SQLITE_ROW || step == SQLITE_DONE) {
            rc =
                ix_corrupt(v, "chunks", "position %lld holds %s %lld, but \"%s_%s\" %s", (long long)pos,
                           c->rows ? "part" : "rowid", (long long)c->ids[pos], v->name, c->rows ? "parts" : "rows",
                           step == SQLITE_DONE ? "has no such row" : "puts it elsewhere");
        } else {
            rc = ix_sql_error(v, step);
        }
        sqlite3_reset(s);
    }
    return rc;
}

/* Reads chunk `id` (rows rows) into the copy, straight from its pages with incremental blob
 * I/O; *bv, *br and *bl are kept open between chunks (reopened on the next). */
static int read_chunk(ix_vtab *v, ix_cache *c, size_t id, size_t rows, sqlite3_blob **b) {
    static const char *const cols[] = {"vectors", "rowids", "lists"};
    size_t ch = c->chunk, want[3] = {ch * c->rec, ch * sizeof(sqlite3_int64), ch * sizeof(int32_t)};
    int ncol = c->lists ? 3 : 2, rc = SQLITE_OK;
    char *table = NULL;
    for (int k = 0; k < ncol && rc == SQLITE_OK; k++) {
        if (b[k]) {
            rc = sqlite3_blob_reopen(b[k], (sqlite3_int64)id);
        } else {
            if (!table && !(table = sqlite3_mprintf("%s_chunks", v->name))) return SQLITE_NOMEM;
            rc = sqlite3_blob_open(v->db, v->schema, table, cols[k], (sqlite3_int64)id, 0, &b[k]);
        }
        if (rc == SQLITE_ERROR) /* no such chunk, or not a blob; not memory, locks or interrupts */
            rc = ix_corrupt(v, "chunks", "chunk %lld cannot be read: %s", (long long)id, sqlite3_errmsg(v->db));
        else if (rc != SQLITE_OK) break;
        else if ((size_t)sqlite3_blob_bytes(b[k]) != want[k])
            rc = ix_corrupt(v, "chunks", "chunk %lld has %d bytes of %s, not %lld", (long long)id,
                            sqlite3_blob_bytes(b[k]), cols[k], (long long)want[k]);
    }
    sqlite3_free(table);
    size_t at = id * ch;
    if (rc == SQLITE_OK) rc = sqlite3_blob_read(b[0], c->records + at * c->rec, (int)(rows * c->rec), 0);
    if (rc == SQLITE_OK) rc = sqlite3_blob_read(b[1], c->ids + at, (int)(rows * sizeof *c->ids), 0);
    if (rc == SQLITE_OK && c->lists) {
        rc = sqlite3_blob_read(b[2], c->lists + at, (int)(rows * sizeof *c->lists), 0);
        for (size_t i = at; rc == SQLITE_OK && i < at + rows; i++) { /* stored as list + 1 */
            if (c->lists[i] < 0)
                rc = ix_corrupt(v, "chunks", "chunk %lld stores list %ld for position %lld", (long long)id,
                                (long)c->lists[i], (long long)i);
            else c->lists[i]--;
        }
    }
    if (rc == SQLITE_OK && !emb_codes_finite(c->storage, c->records + at * c->rec, rows, c->d))
        rc = ix_corrupt(v, "chunks", "chunk %lld holds a vector that is not finite", (long long)id);
    if (rc != SQLITE_OK && rc != SQLITE_CORRUPT_VTAB) rc = ix_sql_error(v, rc);
    return rc;
}

/* Each chunk's version, into vers (chunks values; 0 for format 1, which has none). */
static int chunk_versions(ix_vtab *v, sqlite3_int64 *vers, size_t chunks) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_CHUNK_VERS, &rc);
    if (!s) return rc;
    size_t i = 0;
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW && i < chunks) vers[i++] = sqlite3_column_int64(s, 1);
    sqlite3_reset(s);
    if (step != SQLITE_DONE && step != SQLITE_ROW) return ix_sql_error(v, step);
    if (i != chunks)
        return ix_corrupt(v, "chunks", "it has %lld chunks, not %lld", (long long)i, (long long)chunks);
    return SQLITE_OK;
}

/* The partition groups and the IVF (centroids and lists' rows) of the copy, made again. */
static int regroup(ix_vtab *v, ix_cache *c, int rows_changed) {
    sqlite3_int64 serial = 0;
    int rc = c->lists ? ix_get_config(v, "ivf_serial", &serial) : SQLITE_OK;
    if (rc != SQLITE_OK || (c->grouped && !rows_changed && serial == c->ivf_serial)) return rc;
    c->grouped = 0;
    if (c->partition >= 0) {
        emb_meta_groups_free(&c->groups);
        if (emb_meta_groups_build(&c->groups, &c->meta[c->partition])) return SQLITE_NOMEM;
    }
    if (c->lists && (serial != c->ivf_serial || !c->ivf_ready)) {
        size_t lists;
        emb_ivf_free(&c->ivf);
        memset(&c->ivf, 0, sizeof c->ivf);
        c->ivf_ready = 0;
        if ((rc = ix_read_centroids(v, &c->ivf, &c->ivf_serial, &lists)) != SQLITE_OK) return rc;
        c->ivf_ready = lists > 0;
    }
    emb_ivf_groups_free(&c->ivf_groups);
    memset(&c->ivf_groups, 0, sizeof c->ivf_groups);
    for (size_t i = 0; c->ivf_ready && i < c->n; i++)
        if (c->lists[i] >= (int32_t)c->ivf.lists)
            return ix_corrupt(v, "chunks", "position %lld is in list %ld, of %lld lists", (long long)i,
                              (long)c->lists[i], (long long)c->ivf.lists);
    if (c->ivf_ready && emb_ivf_groups_build(&c->ivf_groups, c->lists, c->n, c->ivf.lists)) return SQLITE_NOMEM;
    c->grouped = 1;
    return SQLITE_OK;
}

int ix_refresh(ix_vtab *v, ix_cache *c, sqlite3_int64 count) {
    size_t n = (size_t)count, ch = c->chunk, chunks = (n + ch - 1) / ch, old_n = c->n;
    sqlite3_int64 *vers = sqlite3_malloc64((chunks ? chunks : 1) * sizeof *vers);
    if (!vers) return SQLITE_NOMEM;
    int rc = chunk_versions(v, vers, chunks);
    if (rc == SQLITE_OK && ix_cache_resize(c, n)) rc = SQLITE_NOMEM;
    /* a chunk is read again when its version or its number of rows differs from the copy's */
    size_t changed_rows = 0;
    unsigned char *changed = rc == SQLITE_OK ? sqlite3_malloc64(chunks + 1) : NULL;
    if (rc == SQLITE_OK && !changed) rc = SQLITE_NOMEM;
    for (size_t i = 0; rc == SQLITE_OK && i < chunks; i++) {
        size_t rows = n - i * ch < ch ? n - i * ch : ch;
        size_t old_rows = i * ch >= old_n ? 0 : old_n - i * ch < ch ? old_n - i * ch : ch;
        changed[i] = !vers[i] || vers[i] != c->chunk_ver[i] || rows != old_rows;
        if (changed[i]) changed_rows += rows;
    }
    sqlite3_blob *b[3] = {NULL, NULL, NULL};
    for (size_t i = 0; rc == SQLITE_OK && i < chunks; i++) {
        if (!changed[i]) continue;
        size_t rows = n - i * ch < ch ? n - i * ch : ch;
        c->chunk_ver[i] = 0; /* until read whole */
        if ((rc = read_chunk(v, c, i, rows, b)) == SQLITE_OK) ix_cache_set_aux(c, i * ch, i * ch + rows);
    }
    for (int k = 0; k < 3; k++) sqlite3_blob_close(b[k]);
    /* the rows of changed chunks: all checked at once when they are many, else one by one */
    int all = old_n == 0 || changed_rows > n / 4;
    if (rc == SQLITE_OK && all) rc = check_all_rows(v, c);
    for (size_t i = 0; rc == SQLITE_OK && !all && i < chunks; i++)
        if (changed[i]) rc = check_some_rows(v, c, i * ch, i * ch + (n - i * ch < ch ? n - i * ch : ch));
    for (size_t i = 0; rc == SQLITE_OK && i < chunks; i++) c->chunk_ver[i] = vers[i];
    if (rc == SQLITE_OK) rc = regroup(v, c, changed_rows > 0 || n != old_n);
    sqlite3_free(vers);
    sqlite3_free(changed);
    if (rc != SQLITE_OK) c->version = -1;
    return rc;
}
