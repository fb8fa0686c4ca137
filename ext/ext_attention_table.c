/* embed_attention(model, text [, layer [, head]]): one row per (layer, head, query, key) with the
 * softmax weight the forward pass gave that key in that query's context (core:
 * emb_model_attention). Layers are counted as contextual_embedding counts them: layer l makes
 * hidden state l, so they run from 1; heads from 0. Without layer (head), every layer (head).
 * A condition layer = N or head = N in WHERE narrows the pass as the argument does. The weights
 * are computed in chunks of whole layers (or heads) of at most CHUNK_FLOATS, each by a pass up
 * to its last layer, so memory stays bounded whatever the text's length. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"
#include "text/tokenizer.h" /* emb_encoding_token_text */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#define CHUNK_FLOATS ((size_t)16 << 20) /* 64 MiB; a chunk holds at least one head's T*T */

enum {
    COL_LAYER,
    COL_HEAD,
    COL_QUERY,
    COL_KEY,
    COL_QUERY_TOKEN,
    COL_KEY_TOKEN,
    COL_WEIGHT,
    COL_MODEL,
    COL_TEXT,
    COL_ONLY_LAYER,
    COL_ONLY_HEAD,
    N_COLS
};
/* idxNum bits, in the order of xFilter's arguments: the four hidden arguments, then conditions
 * layer = N, head = N and query = N on the visible columns */
enum { ARG_MODEL, ARG_TEXT, ARG_LAYER, ARG_HEAD, WHERE_LAYER, WHERE_HEAD, WHERE_QUERY, N_ARGS };
enum { NEED_ARGS = 1 << N_ARGS }; /* idxNum of a plan without model or text */

typedef struct {
    sqlite3_vtab_cursor base;
    emb_model *model;
    emb_encoding enc;
    sqlite3_value *args[4]; /* model, text, layer, head as given, for the hidden columns */
    int l0, l1, h0, h1; /* the layers (from 1) and heads asked, inclusive */
    int cl0, cl1, ch0, ch1; /* those of the chunk in probs */
    int q0, q1; /* the queries asked */
    float *probs;
    size_t probs_cap, at, n_rows; /* row at of the chunk's n_rows */
    sqlite3_int64 rowid;
    int eof;
} attention_cursor;

static int attention_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                             char **err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    /* its rows grow as layers x heads x tokens^2: a database's views and triggers must not make
     * them (docs/security.md) */
    return ext_vtab_connect(
        db,
        "CREATE TABLE x(layer INTEGER, head INTEGER, query INTEGER, key INTEGER, query_token TEXT,"
        " key_token TEXT, weight REAL, model HIDDEN, text HIDDEN, only_layer HIDDEN, only_head HIDDEN)",
        SQLITE_VTAB_DIRECTONLY, out);
}

/* model and text must be usable equalities (ext_plan_arguments says when to wait for a join
 * order, ext_plan_missing how an OR branch's plan without them is priced). layer = N, head = N
 * and query = N on the visible columns are taken when usable and left for SQLite to check too. */
static int attention_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    int slot[N_ARGS];
    if (ext_plan_arguments(info, COL_MODEL, WHERE_LAYER, slot) != SQLITE_OK) return SQLITE_CONSTRAINT;
    for (int w = WHERE_LAYER; w < N_ARGS; w++) slot[w] = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->usable && c->iColumn >= COL_LAYER && c->iColumn <= COL_QUERY)
            slot[WHERE_LAYER + c->iColumn - COL_LAYER] = i;
    }
    if (slot[ARG_MODEL] < 0 || slot[ARG_TEXT] < 0) {
        ext_plan_missing(info, NEED_ARGS);
        return SQLITE_OK;
    }
    int mask = ext_plan_pass(info, slot, N_ARGS, (1 << WHERE_LAYER) - 1);
    info->idxNum = mask;
    info->estimatedCost = mask & (1 << ARG_LAYER | 1 << WHERE_LAYER) ? 1000 : 10000;
    info->estimatedRows = 10000;
    return SQLITE_OK;
}

static int attention_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    attention_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    emb_model_encoding_init(&c->enc);
    *out = &c->base;
    return SQLITE_OK;
}

/* Clears the row state; the model stays with the cursor (see cursor_model). */
static void reset(attention_cursor *c) {
    for (int k = 0; k < 4; k++) {
        sqlite3_value_free(c->args[k]);
        c->args[k] = NULL;
    }
    c->enc.n = 0;
    c->at = c->n_rows = 0;
    c->rowid = 0;
    c->eof = 1;
}

static int attention_close(sqlite3_vtab_cursor *cur) {
    attention_cursor *c = (attention_cursor *)cur;
    reset(c);
    emb_model_release(c->model);
    emb_model_encoding_free(&c->enc);
    sqlite3_free(c->probs);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Sets "embed_attention: ..." as the statement's error. */
static int cursor_error(attention_cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(c->base.pVtab, "embed_attention", fmt, ap);
    va_end(ap);
    return rc;
}

/* An error whose message is a sqlite3_malloc'd string (NULL: out of memory), freed here. */
static int cursor_error_take(attention_cursor *c, char *err) {
    int rc = err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
    sqlite3_free(err);
    return rc;
}

/* The cursor's model, kept from one xFilter to the next while the name stays the same, so a
 * statement joining embed_attention to many rows finishes with the model it started with. */
static int cursor_model(attention_cursor *c, sqlite3_value *model) {
    if (sqlite3_value_type(model) != SQLITE_TEXT) {
        char *got = ext_describe_value(model);
        return cursor_error_take(c, got ? sqlite3_mprintf("the model name must be text, not %s", got) : NULL);
    }
    const char *name = (const char *)sqlite3_value_text(model);
    int len = sqlite3_value_bytes(model);
    if (!name) return SQLITE_NOMEM;
    const emb_model_info *info = c->model ? emb_model_get_info(c->model) : NULL;
    if (info && strcmp(info->name, name) == 0 && (int)strlen(name) == len) return SQLITE_OK;
    emb_model_release(c->model);
    char *err;
    c->model = ext_model_named(name, len, &err);
    return c->model ? SQLITE_OK : cursor_error_take(c, err);
}

/* The layer or head argument: 1 with *out set, 0 for NULL (no rows), or an error. */
static int range_arg(attention_cursor *c, sqlite3_value *v, const char *what, int lo, int hi, const char *hint,
                     int *out, int *rc) {
    *rc = SQLITE_OK;
    if (sqlite3_value_type(v) == SQLITE_NULL) return 0;
    double d = sqlite3_value_double(v);
    int t = sqlite3_value_numeric_type(v);
    if (sqlite3_value_type(v) == SQLITE_TEXT || sqlite3_value_type(v) == SQLITE_BLOB ||
        (t == SQLITE_FLOAT && d != floor(d))) {
        char *got = ext_describe_value(v);
        *rc = cursor_error_take(c, got ? sqlite3_mprintf("the %s must be an integer, not %s", what, got) : NULL);
        sqlite3_free(got);
        return 0;
    }
    sqlite3_int64 x = sqlite3_value_int64(v);
    if (x < lo || x > hi) {
        *rc = cursor_error(c, "%s %lld is out of range: model '%s' has %ss %d to %d%s", what, x,
                           emb_model_get_info(c->model)->name, what, lo, hi, hint);
        return 0;
    }
    *out = (int)x;
    return 1;
}

/* A condition layer = v or head = v in WHERE: narrows [*lo, *hi] to v when v is an integer,
 * empties it when that integer is outside; other values are left to SQLite's own check. */
static void narrow(sqlite3_value *v, int *lo, int *hi) {
    int t = sqlite3_value_type(v);
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) return;
    double d = sqlite3_value_double(v);
    if (d < *lo || d > *hi || d != floor(d)) *hi = *lo - 1;
    else *lo = *hi = (int)d;
}

/* Computes the chunk that starts at layer l, head h: as many whole layers of the asked heads as
 * CHUNK_FLOATS holds, or, when one layer's do not fit, as many heads of layer l (at least one). */
static int load_chunk(attention_cursor *c, int l, int h) {
    size_t n = c->enc.n, tt = n * n, heads = (size_t)(c->h1 - c->h0 + 1);
    c->cl0 = c->cl1 = l;
    c->ch0 = h;
    c->ch1 = c->h1;
    if (h == c->h0 && heads * tt <= CHUNK_FLOATS) {
        size_t fit = CHUNK_FLOATS / (heads * tt);
        c->cl1 = (size_t)(c->l1 - l) < fit ? c->l1 : l + (int)fit - 1;
    } else if ((size_t)(c->h1 - h + 1) * tt > CHUNK_FLOATS) {
        size_t fit = CHUNK_FLOATS / tt;
        c->ch1 = h + (fit > 1 ? (int)fit : 1) - 1;
        if (c->ch1 > c->h1) c->ch1 = c->h1;
    }
    size_t need = (size_t)(c->cl1 - c->cl0 + 1) * (size_t)(c->ch1 - c->ch0 + 1) * tt;
    if (need > c->probs_cap) {
        float *p = sqlite3_realloc64(c->probs, need * sizeof(float));
        if (!p) return SQLITE_NOMEM;
        c->probs = p;
        c->probs_cap = need;
    }
    char err[EMB_ERR_LEN];
    if (emb_model_attention(c->model, &c->enc, c->cl0, c->cl1, c->ch0, c->ch1, c->probs, err))
        return cursor_error(c, "%s", err);
    c->at = (size_t)c->q0 * n; /* the first asked query's first key */
    c->n_rows = need;
    return SQLITE_OK;
}

static int attention_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc,
                            sqlite3_value **argv) {
    (void)idx_str;
    (void)argc;
    attention_cursor *c = (attention_cursor *)cur;
    reset(c);
    if (mask & NEED_ARGS)
        return cursor_error(c, "needs a model and a text: embed_attention(model, text [, layer [, head]])");
    sqlite3_value *where[3] = {NULL, NULL, NULL};
    for (int k = 0, a = 0; k < N_ARGS; k++) {
        if (!(mask & (1 << k))) continue;
        if (k >= WHERE_LAYER) {
            where[k - WHERE_LAYER] = argv[a++];
        } else if (!(c->args[k] = sqlite3_value_dup(argv[a++]))) {
            return SQLITE_NOMEM;
        }
    }
    if (sqlite3_value_type(c->args[ARG_MODEL]) == SQLITE_NULL ||
        sqlite3_value_type(c->args[ARG_TEXT]) == SQLITE_NULL)
        return SQLITE_OK; /* NULL in: no rows */
    int rc = cursor_model(c, c->args[ARG_MODEL]);
    if (rc != SQLITE_OK) return rc;
    const emb_model_info *info = emb_model_get_info(c->model);
    char *msg, err[EMB_ERR_LEN];
    float none;
    if (info->dims->layers == 0 && emb_model_attention_bias(c->model, 0, 0, 0, &none, err))
        return cursor_error(c, "%s", err); /* defined and tokenizer-only models: the core says why */
    c->l0 = 1, c->l1 = info->dims->layers, c->h0 = 0, c->h1 = info->dims->heads - 1;
    if (c->args[ARG_LAYER] && !range_arg(c, c->args[ARG_LAYER], "layer", 1, info->dims->layers,
                                         " (layer 0, the embedding output, has no attention)", &c->l0, &rc))
        return rc;
    if (c->args[ARG_HEAD] && !range_arg(c, c->args[ARG_HEAD], "head", 0, info->dims->heads - 1, "", &c->h0, &rc))
        return rc;
    if (c->args[ARG_LAYER]) c->l1 = c->l0;
    if (c->args[ARG_HEAD]) c->h1 = c->h0;
    if (where[0]) narrow(where[0], &c->l0, &c->l1);
    if (where[1]) narrow(where[1], &c->h0, &c->h1);
    c->q0 = 0;
    c->q1 = INT_MAX;
    if (where[2]) narrow(where[2], &c->q0, &c->q1);
    const char *text;
    int len;
    if (ext_value_input_text(c->args[ARG_TEXT], "the text", &text, &len, &msg) == EXT_ERROR)
        return cursor_error_take(c, msg);
    if (emb_model_tokenize(c->model, text, (size_t)len, NULL, 0, &c->enc, err)) return cursor_error(c, "%s", err);
    if (c->q1 >= (int)c->enc.n) c->q1 = (int)c->enc.n - 1;
    if (c->enc.n == 0 || c->l0 > c->l1 || c->h0 > c->h1 || c->q0 > c->q1) return SQLITE_OK;
    c->eof = 0;
    return load_chunk(c, c->l0, c->h0);
}

static int attention_next(sqlite3_vtab_cursor *cur) {
    attention_cursor *c = (attention_cursor *)cur;
    size_t n = c->enc.n;
    c->rowid++;
    c->at++;
    if (c->at % n == 0) { /* a new query row: on to the next asked one, in this (layer, head) or the next */
        size_t tt = n * n, qi = c->at % tt / n;
        if (qi > (size_t)c->q1) c->at += tt - qi * n + (size_t)c->q0 * n;
        else if (qi < (size_t)c->q0) c->at += ((size_t)c->q0 - qi) * n;
    }
    if (c->at < c->n_rows) return SQLITE_OK;
    if (c->ch1 < c->h1) return load_chunk(c, c->cl0, c->ch1 + 1);
    if (c->cl1 < c->l1) return load_chunk(c, c->cl1 + 1, c->h0);
    c->eof = 1;
    return SQLITE_OK;
}

static int attention_eof(sqlite3_vtab_cursor *cur) { return ((attention_cursor *)cur)->eof; }

static void result_token(sqlite3_context *ctx, const attention_cursor *c, size_t pos) {
    size_t len;
    const char *s = emb_encoding_token_text(&c->enc, pos, &len); /* a Unigram unknown's own text */
    if (!s) s = emb_model_token_text(c->model, c->enc.tok[pos].id, &len);
    if (s) sqlite3_result_text(ctx, s, (int)len, SQLITE_TRANSIENT);
}

static int attention_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    const attention_cursor *c = (const attention_cursor *)cur;
    size_t n = c->enc.n, tt = n * n, per_layer = (size_t)(c->ch1 - c->ch0 + 1) * tt;
    size_t rest = c->at % tt, query = rest / n, key = rest % n;
    switch (col) {
    case COL_LAYER: sqlite3_result_int(ctx, c->cl0 + (int)(c->at / per_layer)); break;
    case COL_HEAD: sqlite3_result_int(ctx, c->ch0 + (int)(c->at % per_layer / tt)); break;
    case COL_QUERY: sqlite3_result_int64(ctx, (sqlite3_int64)query); break;
    case COL_KEY: sqlite3_result_int64(ctx, (sqlite3_int64)key); break;
    case COL_QUERY_TOKEN: result_token(ctx, c, query); break;
    case COL_KEY_TOKEN: result_token(ctx, c, key); break;
    case COL_WEIGHT: sqlite3_result_double(ctx, c->probs[c->at]); break;
    default:
        if (c->args[col - COL_MODEL]) sqlite3_result_value(ctx, c->args[col - COL_MODEL]);
    }
    return SQLITE_OK;
}

static int attention_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = ((attention_cursor *)cur)->rowid;
    return SQLITE_OK;
}

const sqlite3_module ext_attention_module = {
    .xConnect = attention_connect,
    .xBestIndex = attention_best_index,
    .xDisconnect = ext_vtab_disconnect,
    .xOpen = attention_open,
    .xClose = attention_close,
    .xFilter = attention_filter,
    .xNext = attention_next,
    .xEof = attention_eof,
    .xColumn = attention_column,
    .xRowid = attention_rowid,
};
