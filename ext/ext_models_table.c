/* embed_models: an eponymous read-only table listing the models of the process. */
#include "ext_functions.h"
#include "ext_registry.h"
#include <string.h>

enum {
    COL_NAME,
    COL_PATH,
    COL_ARCH,
    COL_HIDDEN,
    COL_LAYERS,
    COL_HEADS,
    COL_VOCAB,
    COL_MAXPOS,
    COL_MAXTOK,
    COL_POSKIND,
    COL_POOLING,
    COL_NORMALIZE,
    COL_WTYPE,
    COL_BYTES,
    COL_FINGERPRINT,
    COL_MAPPED,
    COL_WEIGHTS,
    COL_DIMENSIONS,
    COL_PROMPTS
};

typedef struct {
    sqlite3_vtab_cursor base;
    emb_model **models; /* retained snapshot taken at xFilter */
    int n, at;
} models_cursor;

static int models_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    /* its rows name every loaded model's folder: a database's views and triggers must not read
     * them (docs/security.md) */
    return ext_vtab_connect(
        db,
        "CREATE TABLE x(name TEXT, path TEXT, architecture TEXT, hidden_size INTEGER, layers INTEGER,"
        " heads INTEGER, vocab_size INTEGER, max_positions INTEGER, max_tokens INTEGER,"
        " position_kind TEXT, pooling TEXT, normalize INTEGER, weight_type TEXT, bytes INTEGER,"
        " fingerprint TEXT, mapped INTEGER, weights TEXT, dimensions INTEGER, prompts TEXT)",
        SQLITE_VTAB_DIRECTONLY, out);
}

static int models_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    info->estimatedCost = 10;
    info->estimatedRows = 10;
    return SQLITE_OK;
}

static int models_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    models_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void release_snapshot(models_cursor *c) {
    for (int i = 0; i < c->n; i++) emb_model_release(c->models[i]);
    sqlite3_free(c->models);
    c->models = NULL;
    c->n = c->at = 0;
}

static int models_close(sqlite3_vtab_cursor *cur) {
    release_snapshot((models_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int models_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx;
    (void)idx_str;
    (void)argc;
    (void)argv;
    models_cursor *c = (models_cursor *)cur;
    release_snapshot(c);
    return ext_registry_list(&c->models, &c->n);
}

static int models_next(sqlite3_vtab_cursor *cur) {
    ((models_cursor *)cur)->at++;
    return SQLITE_OK;
}

static int models_eof(sqlite3_vtab_cursor *cur) {
    models_cursor *c = (models_cursor *)cur;
    return c->at >= c->n;
}

static void result_text_or_null(sqlite3_context *ctx, const char *s) {
    if (s) sqlite3_result_text(ctx, s, -1, SQLITE_TRANSIENT);
}

static void result_positive_or_null(sqlite3_context *ctx, sqlite3_int64 v) {
    if (v > 0) sqlite3_result_int64(ctx, v);
}

static int models_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    models_cursor *c = (models_cursor *)cur;
    const emb_model_info *m = emb_model_get_info(c->models[c->at]);
    switch (col) {
    case COL_NAME: result_text_or_null(ctx, m->name); break;
    case COL_PATH: result_text_or_null(ctx, m->path); break;
    case COL_ARCH: result_text_or_null(ctx, m->architecture); break;
    case COL_HIDDEN: result_positive_or_null(ctx, m->dims->hidden); break;
    case COL_LAYERS: sqlite3_result_int(ctx, m->dims->layers); break;
    case COL_HEADS: result_positive_or_null(ctx, m->dims->heads); break;
    case COL_VOCAB: sqlite3_result_int(ctx, m->dims->vocab_size); break;
    case COL_MAXPOS: result_positive_or_null(ctx, m->dims->max_positions); break;
    case COL_MAXTOK: result_positive_or_null(ctx, m->max_tokens); break;
    case COL_POSKIND: result_text_or_null(ctx, m->position_kind); break;
    case COL_POOLING: result_text_or_null(ctx, m->pooling); break;
    case COL_NORMALIZE:
        if (m->has_vectors) sqlite3_result_int(ctx, m->normalize);
        break;
    case COL_WTYPE: result_text_or_null(ctx, m->weight_type); break;
    case COL_BYTES: sqlite3_result_int64(ctx, m->bytes); break;
    case COL_FINGERPRINT: result_text_or_null(ctx, m->fingerprint); break;
    case COL_MAPPED:
        if (m->has_vectors) sqlite3_result_int(ctx, m->mapped);
        break;
    case COL_WEIGHTS: result_text_or_null(ctx, m->weights); break;
    case COL_DIMENSIONS: result_positive_or_null(ctx, m->dimensions); break;
    case COL_PROMPTS:
        if (m->prompts) {
            sqlite3_result_text(ctx, m->prompts, -1, SQLITE_TRANSIENT);
            sqlite3_result_subtype(ctx, 'J');
        }
        break;
    }
    return SQLITE_OK;
}

static int models_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = ((models_cursor *)cur)->at + 1;
    return SQLITE_OK;
}

const sqlite3_module ext_models_module = {
    .xConnect = models_connect,
    .xBestIndex = models_best_index,
    .xDisconnect = ext_vtab_disconnect,
    .xOpen = models_open,
    .xClose = models_close,
    .xFilter = models_filter,
    .xNext = models_next,
    .xEof = models_eof,
    .xColumn = models_column,
    .xRowid = models_rowid,
};
