/* embed_tokens(model, text [, text_b]): one row per token, with the vectors that the
 * lesson is about. Vector columns are computed only when a query reads them, and the
 * layers run once per input, not once per row. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"
#include "text/tokenizer.h" /* emb_encoding_token_text */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
    COL_POSITION,
    COL_TOKEN_ID,
    COL_TOKEN,
    COL_TYPE_ID,
    COL_START,
    COL_END,
    COL_WORD,
    COL_TOKEN_EMB,
    COL_POSITION_EMB,
    COL_INPUT_EMB,
    COL_CONTEXTUAL_EMB,
    COL_MODEL,
    COL_TEXT,
    COL_TEXT_B
};
/* idxNum: the arguments given, or NEED_ARGS for a plan without model or text */
enum { HAS_MODEL = 1, HAS_TEXT = 2, HAS_TEXT_B = 4, NEED_ARGS = EXT_PLAN_NEED_ARGS(3) };

typedef struct {
    sqlite3_vtab_cursor base;
    emb_model *model;
    emb_encoding enc;
    size_t at;
    sqlite3_value *args[3]; /* model, text, text_b as given, for the hidden columns */
    float *input, *contextual; /* enc.n x hidden, filled on first use */
} tokens_cursor;

static int tokens_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    return ext_vtab_connect(db,
                            "CREATE TABLE x(position INTEGER, token_id INTEGER, token TEXT, type_id INTEGER,"
                            " start INTEGER, \"end\" INTEGER, word INTEGER, token_embedding BLOB,"
                            " position_embedding BLOB, input_embedding BLOB, contextual_embedding BLOB,"
                            " model HIDDEN, text HIDDEN, text_b HIDDEN)",
                            SQLITE_VTAB_INNOCUOUS, out);
}

/* model and text must be usable equalities (ext_plan_arguments says when to wait for a join
 * order, ext_plan_missing how an OR branch's plan without them is priced). */
static int tokens_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    return ext_plan_hidden(info, COL_MODEL, 3, 2, 100, 32);
}

static int tokens_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    tokens_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    emb_model_encoding_init(&c->enc);
    *out = &c->base;
    return SQLITE_OK;
}

/* Clears the row state; the model stays with the cursor (see tokens_filter). */
static void reset(tokens_cursor *c) {
    for (int k = 0; k < 3; k++) {
        sqlite3_value_free(c->args[k]);
        c->args[k] = NULL;
    }
    sqlite3_free(c->input);
    sqlite3_free(c->contextual);
    c->input = c->contextual = NULL;
    c->enc.n = 0;
    c->at = 0;
}

static int tokens_close(sqlite3_vtab_cursor *cur) {
    tokens_cursor *c = (tokens_cursor *)cur;
    reset(c);
    emb_model_release(c->model);
    emb_model_encoding_free(&c->enc);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Sets "embed_tokens: ..." as the statement's error. */
static int cursor_error(tokens_cursor *c, const char *fmt, ...) {
    sqlite3_vtab *vtab = c->base.pVtab;
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(vtab, "embed_tokens", fmt, ap);
    va_end(ap);
    return rc;
}

/* The cursor's model: kept from one xFilter to the next while the name stays the same, so a
 * statement joining embed_tokens to many rows finishes with the model it started with even
 * if embed_unload runs meanwhile. */
static int cursor_model(tokens_cursor *c, sqlite3_value *model) {
    if (sqlite3_value_type(model) != SQLITE_TEXT) {
        char *got = ext_describe_value(model);
        int rc = got ? cursor_error(c, "the model name must be text, not %s", got) : SQLITE_NOMEM;
        sqlite3_free(got);
        return rc;
    }
    const char *name = (const char *)sqlite3_value_text(model);
    int len = sqlite3_value_bytes(model);
    if (!name) return SQLITE_NOMEM;
    if (c->model && strcmp(emb_model_get_info(c->model)->name, name) == 0 && (int)strlen(name) == len)
        return SQLITE_OK;
    emb_model_release(c->model);
    char *err;
    c->model = ext_model_named(name, len, &err);
    int rc = c->model ? SQLITE_OK : err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
    sqlite3_free(err);
    return rc;
}

/* A text to tokenize: numbers as SQLite converts them, a BLOB refused (as ext_get_input_text). */
static int input_text(tokens_cursor *c, sqlite3_value *val, const char *what, const char **s, size_t *len) {
    char *err;
    int n = 0;
    ext_rc r = ext_value_input_text(val, what, s, &n, &err);
    *len = (size_t)n;
    if (r != EXT_ERROR) return SQLITE_OK;
    int rc = err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
    sqlite3_free(err);
    return rc;
}

static int tokens_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx_str;
    (void)argc;
    tokens_cursor *c = (tokens_cursor *)cur;
    reset(c);
    if (mask & NEED_ARGS) return cursor_error(c, "needs a model and a text: embed_tokens(model, text [, text_b])");
    int a = 0;
    for (int k = 0; k < 3; k++)
        if (mask & (1 << k)) {
            c->args[k] = sqlite3_value_dup(argv[a++]);
            if (!c->args[k]) return SQLITE_NOMEM;
        }
    sqlite3_value *model = c->args[0], *text = c->args[1], *text_b = c->args[2];
    if (sqlite3_value_type(model) == SQLITE_NULL || sqlite3_value_type(text) == SQLITE_NULL)
        return SQLITE_OK; /* NULL in: no rows */
    int rc = cursor_model(c, model);
    if (rc != SQLITE_OK) return rc;
    const char *s, *b = NULL;
    size_t len, blen = 0;
    if ((rc = input_text(c, text, "the text", &s, &len)) != SQLITE_OK) return rc;
    if (text_b && sqlite3_value_type(text_b) != SQLITE_NULL &&
        (rc = input_text(c, text_b, "text_b", &b, &blen)) != SQLITE_OK)
        return rc;
    char err[EMB_ERR_LEN];
    if (emb_model_tokenize(c->model, s, len, b, blen, &c->enc, err)) return cursor_error(c, "%s", err);
    return SQLITE_OK;
}

static int tokens_next(sqlite3_vtab_cursor *cur) {
    ((tokens_cursor *)cur)->at++;
    return SQLITE_OK;
}

static int tokens_eof(sqlite3_vtab_cursor *cur) {
    tokens_cursor *c = (tokens_cursor *)cur;
    return c->at >= c->enc.n;
}

/* The hidden states of the whole input after n_layers, computed once per cursor. */
static int hidden_level(tokens_cursor *c, sqlite3_context *ctx, float **cache, int n_layers) {
    if (*cache) return 0;
    const emb_model_info *info = emb_model_get_info(c->model);
    char err[EMB_ERR_LEN];
    if (emb_model_require_vectors(info, "vectors", err)) {
        ext_error(ctx, "embed_tokens", "%s", err);
        return -1;
    }
    *cache = sqlite3_malloc64(c->enc.n * (size_t)info->dims->hidden * sizeof(float));
    if (!*cache) {
        sqlite3_result_error_nomem(ctx);
        return -1;
    }
    if (emb_model_hidden_states(c->model, &c->enc, n_layers, *cache, err)) {
        sqlite3_free(*cache);
        *cache = NULL;
        ext_error(ctx, "embed_tokens", "%s", err);
        return -1;
    }
    return 0;
}

static void result_row(sqlite3_context *ctx, const emb_model_info *info, const float *row) {
    char err[EMB_ERR_LEN];
    if (row) ext_result_vector(ctx, row, (size_t)info->dims->hidden);
    else if (emb_model_require_vectors(info, "vectors", err)) ext_error(ctx, "embed_tokens", "%s", err);
}

static int tokens_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    tokens_cursor *c = (tokens_cursor *)cur;
    const emb_token *t = &c->enc.tok[c->at];
    const emb_model_info *info = emb_model_get_info(c->model);
    size_t h = (size_t)info->dims->hidden;
    switch (col) {
    case COL_POSITION: sqlite3_result_int64(ctx, (sqlite3_int64)c->at); break;
    case COL_TOKEN_ID: sqlite3_result_int(ctx, t->id); break;
    case COL_TOKEN: {
        size_t len;
        const char *s = emb_encoding_token_text(&c->enc, c->at, &len); /* a Unigram unknown's own text */
        if (!s) s = emb_model_token_text(c->model, t->id, &len);
        if (s) sqlite3_result_text(ctx, s, (int)len, SQLITE_TRANSIENT);
        break;
    }
    case COL_TYPE_ID: sqlite3_result_int(ctx, t->type_id); break;
    case COL_START:
        if (t->start >= 0) sqlite3_result_int(ctx, t->start);
        break;
    case COL_END:
        if (t->end >= 0) sqlite3_result_int(ctx, t->end);
        break;
    case COL_WORD:
        if (t->word >= 0) sqlite3_result_int(ctx, t->word);
        break;
    case COL_TOKEN_EMB: {
        float *buf = sqlite3_malloc64(h * sizeof(float) + 1); /* an F16 / BF16 table's row is widened here */
        if (!buf) return SQLITE_NOMEM;
        result_row(ctx, info, emb_model_token_row(c->model, t->id, buf));
        sqlite3_free(buf);
        break;
    }
    case COL_POSITION_EMB: result_row(ctx, info, emb_model_position_row(c->model, (int32_t)c->at)); break;
    case COL_INPUT_EMB:
        if (hidden_level(c, ctx, &c->input, 0) == 0) ext_result_vector(ctx, c->input + c->at * h, h);
        break;
    case COL_CONTEXTUAL_EMB:
        if (info->is_static) break; /* a static model has no context: NULL */
        if (hidden_level(c, ctx, &c->contextual, info->dims->layers) == 0)
            ext_result_vector(ctx, c->contextual + c->at * h, h);
        break;
    default:
        if (c->args[col - COL_MODEL]) sqlite3_result_value(ctx, c->args[col - COL_MODEL]);
    }
    return SQLITE_OK;
}

static int tokens_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = (sqlite3_int64)((tokens_cursor *)cur)->at;
    return SQLITE_OK;
}

const sqlite3_module ext_tokens_module = {
    .xConnect = tokens_connect,
    .xBestIndex = tokens_best_index,
    .xDisconnect = ext_vtab_disconnect,
    .xOpen = tokens_open,
    .xClose = tokens_close,
    .xFilter = tokens_filter,
    .xNext = tokens_next,
    .xEof = tokens_eof,
    .xColumn = tokens_column,
    .xRowid = tokens_rowid,
};
