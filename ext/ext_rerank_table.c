/* embed_rerank_batch(model, query, texts): the cross-encoder's score of each text of a JSON
 * array against one query, one row per text (i, text, score) in the array's order. A
 * table-valued function over a JSON array, as json_each is, because the whole list must be seen
 * at once to run it as one encoder batch (a scalar sees one pair per call; an aggregate would
 * return one value that a query must take apart again), and any query makes the array with
 * json_group_array. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"
#include "sqlite-embed/rerank.h"
#include "base/utf8.h"
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <string.h>

enum { COL_I, COL_TEXT, COL_SCORE, COL_MODEL, COL_QUERY, COL_TEXTS, COL_OPTIONS };
enum { NEED_ARGS = EXT_PLAN_NEED_ARGS(4) };
#define FN "embed_rerank_batch"

typedef struct {
    sqlite3_vtab_cursor base;
    cJSON *texts; /* the parsed array */
    const cJSON *row; /* its element at */
    int n, at;
    float *scores; /* n (a null element's is not read) */
    sqlite3_value *args[4]; /* model, query, texts, options (NULL when not given) */
    emb_rerank_score kind;
} rerank_cursor;

static int rb_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    return ext_vtab_connect(db,
                            "CREATE TABLE x(i INTEGER, text TEXT, score REAL, model HIDDEN, query HIDDEN, texts "
                            "HIDDEN, options HIDDEN)",
                            SQLITE_VTAB_INNOCUOUS, out);
}

/* Model, query and texts are required equalities; options may follow. */
static int rb_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
    (void)vtab;
    return ext_plan_hidden(info, COL_MODEL, 4, 3, 1000, 50);
}

static int rb_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out) {
    (void)vtab;
    rerank_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void reset(rerank_cursor *c) {
    for (int k = 0; k < 4; k++) {
        sqlite3_value_free(c->args[k]);
        c->args[k] = NULL;
    }
    c->kind = EMB_RERANK_ACTIVATION;
    cJSON_Delete(c->texts);
    c->texts = NULL;
    sqlite3_free(c->scores);
    c->scores = NULL;
    c->row = NULL;
    c->n = c->at = 0;
}

static int rb_close(sqlite3_vtab_cursor *cur) {
    reset((rerank_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int cursor_error(rerank_cursor *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ext_vtab_verror(c->base.pVtab, FN, fmt, ap);
    va_end(ap);
    return rc;
}

/* Which string of a JSON array of strings and nulls (counted from 0) holds the escape \u0000,
 * which cJSON decodes into a NUL that would end the text early; -1 for none. */
static long escaped_nul(const char *s, size_t len) {
    long strings = -1;
    int inside = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') {
            inside = !inside;
            strings += inside;
        } else if (inside && s[i] == '\\') {
            if (i + 5 < len && strncmp(s + i + 1, "u0000", 5) == 0) return strings;
            i++; /* the escaped character, which may be a quote or a backslash */
        }
    }
    return -1;
}

/* The texts argument as a JSON array whose elements are strings or null. */
static int parse_texts(rerank_cursor *c, sqlite3_value *v) {
    if (sqlite3_value_type(v) != SQLITE_TEXT) {
        char *got = ext_describe_value(v);
        int rc = got ? cursor_error(c, "texts must be a JSON array of strings, not %s", got) : SQLITE_NOMEM;
        sqlite3_free(got);
        return rc;
    }
    const char *s = (const char *)sqlite3_value_text(v), *end = NULL;
    if (!s) return SQLITE_NOMEM;
    size_t len = (size_t)sqlite3_value_bytes(v);
    if (strlen(s) != len)
        return cursor_error(c, "texts contains a NUL character (at byte %lld)", (long long)strlen(s));
    size_t bad;
    if (!emb_utf8_valid(s, len, &bad))
        return cursor_error(c, "texts is not valid UTF-8 (at byte %lld)", (long long)bad);
    c->texts = cJSON_ParseWithLengthOpts(s, len, &end, 0);
    if (!cJSON_IsArray(c->texts))
        return cursor_error(c, "texts must be a JSON array of strings such as '[\"first text\", \"second\"]'");
    end += strspn(end, " \t\n\r");
    if (end != s + len)
        return cursor_error(c, "texts has text after its JSON array (at byte %lld): '%.20s'", (long long)(end - s),
                            end);
    c->n = cJSON_GetArraySize(c->texts);
    int i = 0;
    for (const cJSON *e = c->texts->child; e; e = e->next, i++)
        if (!cJSON_IsString(e) && !cJSON_IsNull(e))
            return cursor_error(c, "texts[%d] is not a string (nor null)", i);
    long nul = escaped_nul(s, len);
    for (i = 0; nul >= 0 && i < c->n; i++)
        if (cJSON_IsString(cJSON_GetArrayItem(c->texts, i)) && nul-- == 0)
            return cursor_error(c, "texts[%d] contains a NUL character (\\u0000)", i);
    return SQLITE_OK;
}

/* Scores every string of the array in one call: one encoder batch, split only by its size. */
static int score_all(rerank_cursor *c, emb_model *m, const char *query, size_t qlen) {
    const char **texts = sqlite3_malloc64((size_t)c->n * sizeof *texts + 1);
    size_t *lens = sqlite3_malloc64((size_t)c->n * sizeof *lens + 1);
    int *slot = sqlite3_malloc64((size_t)c->n * sizeof *slot + 1);
    c->scores = sqlite3_malloc64((size_t)c->n * sizeof *c->scores + 1);
    int rc = texts && lens && slot && c->scores ? SQLITE_OK : SQLITE_NOMEM;
    size_t k = 0;
    int i = 0;
    for (const cJSON *e = c->texts->child; rc == SQLITE_OK && e; e = e->next, i++) {
        slot[i] = -1;
        if (!cJSON_IsString(e)) continue;
        slot[i] = (int)k;
        texts[k] = e->valuestring;
        lens[k++] = strlen(e->valuestring);
    }
    float *scores = rc == SQLITE_OK ? sqlite3_malloc64(k * sizeof *scores + 1) : NULL;
    char err[EMB_ERR_LEN];
    if (rc == SQLITE_OK && !scores) rc = SQLITE_NOMEM;
    else if (rc == SQLITE_OK && emb_model_rerank_with(m, query, qlen, texts, lens, k, c->kind, scores, err))
        rc = cursor_error(c, "%s", err);
    for (i = 0; rc == SQLITE_OK && i < c->n; i++) c->scores[i] = slot[i] < 0 ? -1.0f : scores[slot[i]];
    sqlite3_free(scores);
    sqlite3_free(texts);
    sqlite3_free(lens);
    sqlite3_free(slot);
    return rc;
}

static int rb_filter(sqlite3_vtab_cursor *cur, int mask, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx_str, (void)argc;
    rerank_cursor *c = (rerank_cursor *)cur;
    reset(c);
    if (mask & NEED_ARGS)
        return cursor_error(c, "needs a model, a query and texts: " FN "(model, query, texts [, options])");
    for (int k = 0, a = 0; k < 4; k++)
        if ((mask & (1 << k)) && !(c->args[k] = sqlite3_value_dup(argv[a++]))) return SQLITE_NOMEM;
    char *err = NULL;
    if (c->args[3] && ext_rerank_options(c->args[3], &c->kind, &err)) {
        int orc = err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return orc;
    }
    for (int k = 0; k < 3; k++)
        if (sqlite3_value_type(c->args[k]) == SQLITE_NULL) return SQLITE_OK; /* NULL in: no rows */
    int rc = parse_texts(c, c->args[2]);
    if (rc != SQLITE_OK) return rc;
    const char *query;
    int qlen;
    if (ext_value_input_text(c->args[1], "the query", &query, &qlen, &err) == EXT_ERROR) {
        rc = err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    if (sqlite3_value_type(c->args[0]) != SQLITE_TEXT) return cursor_error(c, "the model name must be text");
    emb_model *m =
        ext_model_named((const char *)sqlite3_value_text(c->args[0]), sqlite3_value_bytes(c->args[0]), &err);
    if (!m) {
        rc = err ? cursor_error(c, "%s", err) : SQLITE_NOMEM;
        sqlite3_free(err);
        return rc;
    }
    rc = score_all(c, m, query, (size_t)qlen);
    emb_model_release(m);
    if (rc != SQLITE_OK) c->n = 0;
    c->row = c->texts->child;
    return rc;
}

static int rb_next(sqlite3_vtab_cursor *cur) {
    rerank_cursor *c = (rerank_cursor *)cur;
    c->at++;
    c->row = c->row ? c->row->next : NULL;
    return SQLITE_OK;
}

static int rb_eof(sqlite3_vtab_cursor *cur) {
    rerank_cursor *c = (rerank_cursor *)cur;
    return c->at >= c->n;
}

static int rb_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    rerank_cursor *c = (rerank_cursor *)cur;
    const cJSON *e = c->row;
    switch (col) {
    case COL_I: sqlite3_result_int(ctx, c->at); break;
    case COL_TEXT:
        if (cJSON_IsString(e)) sqlite3_result_text(ctx, e->valuestring, -1, SQLITE_TRANSIENT);
        break;
    case COL_SCORE:
        if (cJSON_IsString(e)) sqlite3_result_double(ctx, (double)c->scores[c->at]);
        break;
    default:
        if (c->args[col - COL_MODEL]) sqlite3_result_value(ctx, c->args[col - COL_MODEL]);
    }
    return SQLITE_OK;
}

static int rb_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
    *rowid = ((rerank_cursor *)cur)->at;
    return SQLITE_OK;
}

const sqlite3_module ext_rerank_module = {
    .xConnect = rb_connect,
    .xBestIndex = rb_best_index,
    .xDisconnect = ext_vtab_disconnect,
    .xOpen = rb_open,
    .xClose = rb_close,
    .xFilter = rb_filter,
    .xNext = rb_next,
    .xEof = rb_eof,
    .xColumn = rb_column,
    .xRowid = rb_rowid,
};
