/* embed_chunks(model, text [, options]): one row per token-aware chunk of a long text
 * (emb_model_chunks in sqlite-embed/chunk.h), with its byte offsets and its token count. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"
#include "sqlite-embed/chunk.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { COL_CHUNK, COL_TEXT, COL_START, COL_END, COL_TOKENS, COL_MODEL, COL_INPUT, COL_OPTIONS };
/* idxNum: the arguments given, or NEED_ARGS for a plan without model or text */
enum { NEED_ARGS = EXT_PLAN_NEED_ARGS(3) };

typedef struct {
    sqlite3_vtab_cursor base;
    emb_model *model;
    sqlite3_value *args[3]; /* model, text, options as given, for the hidden columns */
    const char *text; /* the input's UTF-8, owned by args[1] */
    emb_chunk *chunks;
    size_t n, at;
} chunks_cursor;

static int chunks_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **err) {
    (void)aux;
    (void)argc;
    (void)argv;
    (void)err;
    return ext_vtab_connect(db,
                            "CREATE TABLE x(chunk INTEGER, text TEXT, start INTEGER, \"end\" INTEGER,"
                            " tokens INTEGER, model HIDDEN, input HIDDEN, options HIDDEN)",
                            SQLITE_VTAB_INNOCUOUS, out);
}

/* model and text must be usable equalities, as for embed_tokens (ext_plan_* in ext_util.c). */
static int chunks_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    return ext_plan_hidden(info, COL_MODEL, 3, 2, 1000, 16);
}

static int chunks_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    chunks_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

/* Clears the row state; the model stays with the cursor (ext_model_keep). */
static void reset(chunks_cursor *c) {
    for (int k = 0; k < 3; k++) {
        sqlite3_value_free(c->args[k]);
        c->args[k] = NULL;
    }
    free(c->chunks);
    c->chunks = NULL;
    c->text = NULL;
    c->n = c->at = 0;
}

static int chunks_close(sqlite3_vtab_cursor *cur) {
    chunks_cursor *c = (chunks_cursor *)cur;
    reset(c);
    emb_model_release(c->model);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Sets "embed_chunks: ..." as the statement's error. */
static int cursor_error(chunks_cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(c->base.pVtab, "embed_chunks", fmt, ap);
    va_end(ap);
    return rc;
}

/* An error whose message is a sqlite3_malloc'd string (NULL: out of memory), freed here. */
static int cursor_error_take(chunks_cursor *c, char *err) {
    int rc = err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
    sqlite3_free(err);
    return rc;
}

/* An integer option from lo to INT_MAX. */
static int int_option(chunks_cursor *c, const cJSON *item, int lo, int *out) {
    double d = item->valuedouble;
    if (!cJSON_IsNumber(item) || !isfinite(d) || d != floor(d) || d < lo || d > 2147483647.0) {
        char *got = ext_json_text(item);
        int rc = got ? cursor_error(c, "option \"%s\" must be an integer from %d to 2147483647, not %s",
                                    item->string, lo, got)
                     : SQLITE_NOMEM;
        sqlite3_free(got);
        return rc;
    }
    *out = (int)d;
    return SQLITE_OK;
}

/* options: NULL, or a JSON object {"max_tokens": 256, "overlap": 32}. */
static int read_options(chunks_cursor *c, sqlite3_value *val, emb_chunk_options *o) {
    o->max_tokens = 0;
    o->overlap = 0;
    if (!val || sqlite3_value_type(val) == SQLITE_NULL) return SQLITE_OK;
    if (sqlite3_value_type(val) != SQLITE_TEXT) {
        char *got = ext_describe_value(val);
        return cursor_error_take(c, got ? sqlite3_mprintf("options must be JSON text, not %s", got) : NULL);
    }
    const char *json = (const char *)sqlite3_value_text(val);
    if (!json) return SQLITE_NOMEM;
    cJSON *root;
    char *err;
    if (ext_json_object(json, sqlite3_value_bytes(val), "{\"max_tokens\": 256, \"overlap\": 32}", &root, &err))
        return cursor_error_take(c, err);
    int rc = SQLITE_OK;
    for (const cJSON *item = root->child; item && rc == SQLITE_OK; item = item->next) {
        if (strcmp(item->string, "max_tokens") == 0) rc = int_option(c, item, 1, &o->max_tokens);
        else if (strcmp(item->string, "overlap") == 0) rc = int_option(c, item, 0, &o->overlap);
        else rc = cursor_error(c, "unknown option \"%.60s\" (known: max_tokens, overlap)", item->string);
    }
    cJSON_Delete(root);
    return rc;
}

static int chunks_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx_str;
    (void)argc;
    chunks_cursor *c = (chunks_cursor *)cur;
    reset(c);
    if (mask & NEED_ARGS)
        return cursor_error(c, "needs a model and a text: embed_chunks(model, text [, options])");
    int a = 0;
    for (int k = 0; k < 3; k++)
        if (mask & (1 << k)) {
            c->args[k] = sqlite3_value_dup(argv[a++]);
            if (!c->args[k]) return SQLITE_NOMEM;
        }
    sqlite3_value *model = c->args[0], *text = c->args[1];
    emb_chunk_options opt;
    int rc = read_options(c, c->args[2], &opt);
    if (rc != SQLITE_OK) return rc;
    if (sqlite3_value_type(model) == SQLITE_NULL || sqlite3_value_type(text) == SQLITE_NULL)
        return SQLITE_OK; /* NULL in: no rows */
    char *msg;
    if ((rc = ext_model_keep(&c->model, model, &msg)) != SQLITE_OK) return cursor_error_take(c, msg);
    int len;
    if (ext_value_input_text(text, "the text", &c->text, &len, &msg) == EXT_ERROR)
        return cursor_error_take(c, msg);
    char err[EMB_ERR_LEN];
    if (emb_model_chunks(c->model, c->text, (size_t)len, &opt, &c->chunks, &c->n, err))
        return cursor_error(c, "%s", err);
    return SQLITE_OK;
}

static int chunks_next(sqlite3_vtab_cursor *cur) {
    ((chunks_cursor *)cur)->at++;
    return SQLITE_OK;
}

static int chunks_eof(sqlite3_vtab_cursor *cur) {
    chunks_cursor *c = (chunks_cursor *)cur;
    return c->at >= c->n;
}

static int chunks_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    chunks_cursor *c = (chunks_cursor *)cur;
    const emb_chunk *k = &c->chunks[c->at];
    switch (col) {
    case COL_CHUNK: sqlite3_result_int64(ctx, (sqlite3_int64)c->at); break;
    case COL_TEXT: sqlite3_result_text(ctx, c->text + k->start, (int)(k->end - k->start), SQLITE_TRANSIENT); break;
    case COL_START: sqlite3_result_int64(ctx, k->start); break;
    case COL_END: sqlite3_result_int64(ctx, k->end); break;
    case COL_TOKENS: sqlite3_result_int(ctx, k->tokens); break;
    default:
        if (c->args[col - COL_MODEL]) sqlite3_result_value(ctx, c->args[col - COL_MODEL]);
    }
    return SQLITE_OK;
}

static int chunks_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = (sqlite3_int64)((chunks_cursor *)cur)->at;
    return SQLITE_OK;
}

const sqlite3_module ext_chunks_module = {
    .xConnect = chunks_connect,
    .xBestIndex = chunks_best_index,
    .xDisconnect = ext_vtab_disconnect,
    .xOpen = chunks_open,
    .xClose = chunks_close,
    .xFilter = chunks_filter,
    .xNext = chunks_next,
    .xEof = chunks_eof,
    .xColumn = chunks_column,
    .xRowid = chunks_rowid,
};
