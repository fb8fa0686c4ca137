/* embed_index_status(name [, schema]): what an index holds and how a search without settings
 * will run, one (name, value) row per fact, read from its shadow tables (and the process's
 * registry, for the shared copy's bytes and long work under way). A user can see why a query
 * is slow or approximate:
 *
 *   SELECT * FROM embed_index_status('notes_idx');
 *
 * Every value read is checked as the index checks it: damage is SQLITE_CORRUPT_VTAB naming the
 * shadow table. */
#include "ix.h"
#include "ext_functions.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { COL_NAME, COL_VALUE, COL_INDEX, COL_SCHEMA };
enum { NEED_ARGS = EXT_PLAN_NEED_ARGS(2), MAX_ROWS = 40 };
/* built_at (Unix seconds) up to the end of year 9999 */
#define BUILT_AT_MAX 253402300799LL

typedef struct {
    const char *name;
    int type; /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT or SQLITE_NULL */
    sqlite3_int64 i;
    double r;
    char *t;
} status_row;

typedef struct {
    sqlite3_vtab base;
    sqlite3 *db;
} status_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    status_row rows[MAX_ROWS];
    int n, at;
} status_cursor;

/* The NAME_config values read (-1: absent), and the texts. */
typedef struct {
    sqlite3_int64 format, dims, rescore, chunk, count, lists, uid, tokens, target, probes, precall, scanned, exact,
        over, orecall, orows, built_at, build_ms;
    char *metric, *storage, *index;
} config;

static int status_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(name TEXT, value, \"index\" HIDDEN, schema HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    status_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v) return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->db = db;
    /* it shows the process's copies and work in progress, as embed_index_cache_bytes does */
    sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
    *out = &v->base;
    return SQLITE_OK;
}

static int status_disconnect(sqlite3_vtab *vtab) {
    sqlite3_free(vtab);
    return SQLITE_OK;
}

static int status_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    return ext_plan_hidden(info, COL_INDEX, 2, 1, 1000, 30);
}

static int status_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    status_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void reset(status_cursor *c) {
    for (int i = 0; i < c->n; i++) sqlite3_free(c->rows[i].t);
    c->n = c->at = 0;
}

static int status_close(sqlite3_vtab_cursor *cur) {
    reset((status_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int fail(status_cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(c->base.pVtab, "embed_index_status", fmt, ap);
    va_end(ap);
    return rc;
}

static int damaged(status_cursor *c, const char *index, const char *table, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *what = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    if (!what) return SQLITE_NOMEM;
    fail(c, "shadow table \"%s_%s\" is damaged: %s", index, table, what);
    sqlite3_free(what);
    return SQLITE_CORRUPT_VTAB;
}

static void put(status_cursor *c, const char *name, int type, sqlite3_int64 i, double r, char *t) {
    if (c->n < MAX_ROWS) c->rows[c->n++] = (status_row){name, type, i, r, t};
    else sqlite3_free(t);
}
static void put_int(status_cursor *c, const char *name, sqlite3_int64 i) {
    put(c, name, i < 0 ? SQLITE_NULL : SQLITE_INTEGER, i, 0, NULL);
}
static void put_real(status_cursor *c, const char *name, double r, int known) {
    put(c, name, known ? SQLITE_FLOAT : SQLITE_NULL, 0, r, NULL);
}
static void put_text(status_cursor *c, const char *name, char *t) {
    put(c, name, t ? SQLITE_TEXT : SQLITE_NULL, 0, 0, t);
}

/* One integer of a query on the index's tables; -1 when it fails (*rc set). */
static sqlite3_int64 count_of(sqlite3 *db, const char *sql, int *rc) {
    sqlite3_stmt *s = NULL;
    sqlite3_int64 n = -1;
    if (!sql) *rc = SQLITE_NOMEM;
    else if ((*rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL)) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    if (s && (*rc = sqlite3_finalize(s)) == SQLITE_OK && n < 0) *rc = SQLITE_ERROR;
    sqlite3_free((char *)sql);
    return n;
}

static int read_config(status_cursor *c, sqlite3 *db, const char *schema, const char *index, config *f) {
    memset(f, 0, sizeof *f);
    sqlite3_int64 *slot[] = {&f->format, &f->dims,   &f->rescore, &f->chunk,  &f->count,    &f->lists,
                             &f->uid,    &f->tokens, &f->target,  &f->probes, &f->precall,  &f->scanned,
                             &f->exact,  &f->over,   &f->orecall, &f->orows,  &f->built_at, &f->build_ms};
    static const char *const keys[] = {
        "format",    "dims",         "rescore",           "chunk_size",      "count",      "ivf_lists",
        "uid",       "chunk_tokens", "target_recall",     "ivf_probes",      "ivf_recall", "ivf_scanned",
        "ivf_exact", "oversample",   "oversample_recall", "oversample_rows", "built_at",   "build_ms"};
    size_t nk = sizeof keys / sizeof keys[0];
    for (size_t k = 0; k < nk; k++) *slot[k] = -1;
    char *sql = sqlite3_mprintf("SELECT key, value FROM \"%w\".\"%w_config\"", schema, index);
    sqlite3_stmt *s = NULL;
    int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return rc == SQLITE_NOMEM ? rc : fail(c, "no embed_index named \"%s\" in schema \"%s\"", index, schema);
    while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0), *text = (const char *)sqlite3_column_text(s, 1);
        char **t = !key                      ? NULL
                   : !strcmp(key, "metric")  ? &f->metric
                   : !strcmp(key, "storage") ? &f->storage
                   : !strcmp(key, "index")   ? &f->index
                                             : NULL;
        if (t && text && !*t && !(*t = sqlite3_mprintf("%s", text))) rc = SQLITE_NOMEM;
        for (size_t k = 0; key && k < nk; k++) {
            if (strcmp(key, keys[k])) continue;
            if (sqlite3_column_type(s, 1) != SQLITE_INTEGER || sqlite3_column_int64(s, 1) < 0)
                if (strcmp(key, "uid")) rc = damaged(c, index, "config", "a setting is not a whole number");
            *slot[k] = sqlite3_column_int64(s, 1);
        }
    }
    int frc = sqlite3_finalize(s);
    if (rc == SQLITE_OK && frc != SQLITE_OK) rc = fail(c, "%s", sqlite3_errmsg(db));
    if (rc == SQLITE_OK && (f->dims < 1 || !f->storage || !f->metric || f->count < 0 || f->chunk < 1))
        rc = damaged(c, index, "config", "dims, storage, metric, count or chunk_size is missing");
    if (rc == SQLITE_OK && (f->target > 10000 || f->precall > 10000 || f->orecall > 10000 || f->exact > 1 ||
                            (f->probes > f->lists && f->lists >= 0)))
        rc = damaged(c, index, "config", "a measured setting is out of range");
    if (rc == SQLITE_OK && !ix_lists_valid(f->lists) && f->lists != -1)
        rc = damaged(c, index, "config", IX_LISTS_DAMAGE, (long long)f->lists, IX_MAX_LISTS);
    return rc;
}

static int size_cmp(const void *pa, const void *pb) {
    sqlite3_int64 a = *(const sqlite3_int64 *)pa, b = *(const sqlite3_int64 *)pb;
    return (a > b) - (a < b);
}

/* The rows of each IVF list (sizes, f->lists values) and the rows in none, from NAME_chunks. */
static int list_sizes(status_cursor *c, sqlite3 *db, const char *schema, const char *index, const config *f,
                      sqlite3_int64 *sizes, sqlite3_int64 *none) {
    char *sql =
        sqlite3_mprintf("SELECT chunk_id, lists FROM \"%w\".\"%w_chunks\" ORDER BY chunk_id", schema, index);
    sqlite3_stmt *s = NULL;
    int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    *none = 0;
    while (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        /* chunk ids past the vectors hold none (and are not multiplied: they may be anything) */
        sqlite3_int64 id = sqlite3_column_int64(s, 0);
        if (id < 0 || id > (f->count - 1) / f->chunk) continue;
        sqlite3_int64 rows = f->count - id * f->chunk;
        const unsigned char *b = sqlite3_column_blob(s, 1);
        if (rows > f->chunk) rows = f->chunk;
        if (sqlite3_column_bytes(s, 1) / 4 < rows) {
            rc = damaged(c, index, "chunks", "a chunk's lists are shorter than its rows");
            break;
        }
        for (sqlite3_int64 i = 0; i < rows && rc == SQLITE_OK; i++) {
            int32_t l1;
            memcpy(&l1, b + 4 * i, 4);
            if (l1 == 0) ++*none;
            else if (l1 < 0 || l1 > f->lists) rc = damaged(c, index, "chunks", "a row's list is out of range");
            else sizes[l1 - 1]++;
        }
    }
    int frc = sqlite3_finalize(s);
    return rc != SQLITE_OK ? rc : frc == SQLITE_OK ? SQLITE_OK : fail(c, "%s", sqlite3_errmsg(db));
}

static int add_lists(status_cursor *c, sqlite3 *db, const char *schema, const char *index, const config *f) {
    sqlite3_int64 lists = f->lists > 0 && f->index && !strcmp(f->index, "ivf") ? f->lists : 0, none = f->count;
    sqlite3_int64 *sizes = sqlite3_malloc64((size_t)(lists + 1) * sizeof *sizes);
    if (!sizes) return SQLITE_NOMEM;
    memset(sizes, 0, (size_t)(lists + 1) * sizeof *sizes);
    int rc = lists ? list_sizes(c, db, schema, index, f, sizes, &none) : SQLITE_OK;
    if (rc == SQLITE_OK) {
        qsort(sizes, (size_t)lists, sizeof *sizes, size_cmp);
        put_int(c, "lists", lists);
        put_int(c, "list_min", lists ? sizes[0] : -1);
        put_int(c, "list_median", lists ? sizes[lists / 2] : -1);
        put_int(c, "list_max", lists ? sizes[lists - 1] : -1);
        put_int(c, "unassigned", f->index && !strcmp(f->index, "ivf") ? none : -1);
    }
    sqlite3_free(sizes);
    return rc;
}

/* How a search that sets neither probes nor oversample runs. */
static char *search_plan(const config *f, int ivf) {
    int compact = strcmp(f->storage, "f32") != 0;
    const char *scan = !compact     ? "exact scan"
                       : f->rescore ? "scan of the codes, rescored exactly"
                                    : "scan of the codes (approximate distances)";
    if (!ivf) return sqlite3_mprintf("%s", scan);
    if (f->lists <= 0) return sqlite3_mprintf("%s (the IVF is not built yet: run 'build')", scan);
    if (f->exact == 1)
        return sqlite3_mprintf("%s: the IVF would probe more than half of the rows to reach the target recall",
                               scan);
    return sqlite3_mprintf("IVF: %lld of %lld lists, then a %s", (long long)(f->probes > 0 ? f->probes : 0),
                           (long long)f->lists, compact ? "scan of their codes" : "scan of their rows");
}

static int fill(status_cursor *c, sqlite3 *db, const char *schema, const char *index) {
    config f;
    int rc = read_config(c, db, schema, index, &f), ivf = f.index && !strcmp(f.index, "ivf");
    sqlite3_int64 rows = -1, pending = -1;
    if (rc == SQLITE_OK)
        rows = count_of(db, sqlite3_mprintf("SELECT count(*) FROM \"%w\".\"%w_rows\"", schema, index), &rc);
    if (rc == SQLITE_OK)
        pending = count_of(db, sqlite3_mprintf("SELECT count(*) FROM \"%w\".\"%w_pending\"", schema, index), &rc);
    if (rc != SQLITE_OK) goto done;
    if (!ivf && f.probes < 0 && f.exact < 0) f.probes = -1;
    if (ivf && f.lists > 0 && f.probes < 0) f.probes = (sqlite3_int64)emb_ivf_default_probes((size_t)f.lists);
    put_int(c, "rows", rows);
    put_int(c, "pending", pending);
    put_int(c, "vectors", f.count);
    put_int(c, "chunked", f.tokens > 0);
    /* rows embedded from their first tokens only (chunks always fit); NULL: the model is not loaded */
    sqlite3_int64 cut = 0;
    if (f.tokens <= 0 && (rc = ix_count_truncated(db, schema, index, &cut)) != SQLITE_OK) goto done;
    put_int(c, "truncated_rows", cut);
    put_text(c, "storage", sqlite3_mprintf("%s", f.storage));
    put_int(c, "rescore", strcmp(f.storage, "f32") ? f.rescore != 0 : -1);
    put_text(c, "metric", sqlite3_mprintf("%s", f.metric));
    put_int(c, "dims", f.dims);
    put_text(c, "index", sqlite3_mprintf("%s", ivf ? "ivf" : "flat"));
    if ((rc = add_lists(c, db, schema, index, &f)) != SQLITE_OK) goto done;
    put_text(c, "search", search_plan(&f, ivf));
    put_real(c, "target_recall", (f.target > 0 ? (double)f.target : 9500.0) / 10000.0, 1);
    put_int(c, "probes", ivf && f.lists > 0 && f.exact != 1 ? f.probes : -1);
    put_real(c, "probes_recall", (double)f.precall / 10000.0, ivf && f.precall >= 0);
    put_real(c, "probes_scanned", (double)f.scanned / 10000.0, ivf && f.scanned >= 0);
    int compact = strcmp(f.storage, "f32") != 0;
    sqlite3_int64 dflt = !strcmp(f.storage, "bit") ? 16 : !strcmp(f.storage, "int8") ? 4 : 2, over = dflt;
    if (compact && f.over > 0 && f.orows > 0) {
        double o = (double)f.over * (double)f.count / (double)f.orows;
        sqlite3_int64 scaled = (sqlite3_int64)(o + 0.999999);
        if (scaled > over) over = scaled < (1 << 20) ? scaled : 1 << 20;
    }
    put_int(c, "oversample", compact ? over : -1);
    put_int(c, "oversample_measured", compact ? f.over : -1);
    put_real(c, "oversample_recall", (double)f.orecall / 10000.0, compact && f.orecall >= 0);
    put_int(c, "oversample_rows", compact ? f.orows : -1);
    const char *file = sqlite3_db_filename(db, schema);
    char progress[128] = "", *prefix = sqlite3_mprintf("%s|%s|%lld|", file ? file : "", index, (long long)f.uid);
    if (!prefix) {
        rc = SQLITE_NOMEM;
        goto done;
    }
    sqlite3_int64 bytes = file && *file ? ix_registry_status(prefix, progress, sizeof progress) : 0;
    sqlite3_free(prefix);
    put_int(c, "cache_bytes", bytes);
    char when[32] = "";
    if (f.built_at >= 0) {
        /* a time past gmtime's years (or strftime's room) is no time a build wrote */
        time_t t = (time_t)f.built_at;
        struct tm tm;
        if (f.built_at > BUILT_AT_MAX || !gmtime_r(&t, &tm) ||
            !strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm)) {
            rc = damaged(c, index, "config", "built_at %lld is not a time", (long long)f.built_at);
            goto done;
        }
    }
    put_text(c, "built_at", f.built_at >= 0 ? sqlite3_mprintf("%s", when) : NULL);
    put_real(c, "build_seconds", (double)f.build_ms / 1000.0, f.build_ms >= 0);
    put_text(c, "progress", progress[0] ? sqlite3_mprintf("%s", progress) : NULL);
    put_int(c, "format", f.format);
done:
    sqlite3_free(f.metric);
    sqlite3_free(f.storage);
    sqlite3_free(f.index);
    return rc;
}

static int status_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx_str, (void)argc;
    status_cursor *c = (status_cursor *)cur;
    reset(c);
    if (mask & NEED_ARGS) return fail(c, "needs the name of an embed_index: embed_index_status('notes_idx')");
    const char *index = (const char *)sqlite3_value_text(argv[0]);
    const char *schema = (mask & 2) ? (const char *)sqlite3_value_text(argv[1]) : "main";
    if (!index || !schema) return SQLITE_OK; /* NULL in: no rows */
    return fill(c, ((status_vtab *)cur->pVtab)->db, schema, index);
}

static int status_next(sqlite3_vtab_cursor *cur) {
    ((status_cursor *)cur)->at++;
    return SQLITE_OK;
}

static int status_eof(sqlite3_vtab_cursor *cur) {
    status_cursor *c = (status_cursor *)cur;
    return c->at >= c->n;
}

static int status_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    status_cursor *c = (status_cursor *)cur;
    const status_row *r = &c->rows[c->at];
    if (col == COL_NAME) sqlite3_result_text(ctx, r->name, -1, SQLITE_STATIC);
    else if (col != COL_VALUE || r->type == SQLITE_NULL) return SQLITE_OK;
    else if (r->type == SQLITE_INTEGER) sqlite3_result_int64(ctx, r->i);
    else if (r->type == SQLITE_FLOAT) sqlite3_result_double(ctx, r->r);
    else sqlite3_result_text(ctx, r->t, -1, SQLITE_TRANSIENT);
    return SQLITE_OK;
}

static int status_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = ((status_cursor *)cur)->at;
    return SQLITE_OK;
}

const sqlite3_module ext_index_status_module = {
    .xConnect = status_connect,
    .xBestIndex = status_best_index,
    .xDisconnect = status_disconnect,
    .xOpen = status_open,
    .xClose = status_close,
    .xFilter = status_filter,
    .xNext = status_next,
    .xEof = status_eof,
    .xColumn = status_column,
    .xRowid = status_rowid,
};
